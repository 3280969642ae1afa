"""ROS 2 interface types found by name at run time, and messages built from plain values.

A robot's config names each interface as ROS 2 does (``nav2_msgs/action/NavigateToPose``,
``std_srvs/srv/Trigger``, ``nav_msgs/msg/Odometry``); the generated Python class is
imported from the package of that name (``nav2_msgs.action``), so the driver runs
against whatever interfaces the machine has installed (a sourced ROS 2 workspace, or
wheels), with none of them a dependency of teamtree. A name that is malformed or not
installed raises InterfaceError saying which and how to fix it.

``fill`` sets a message's fields from nested dicts and lists (coercing numbers to the
field's type) and ``to_plain`` turns a message back into dicts and lists, both through
the generated classes' public ``get_fields_and_field_types``. Importing this module does
not import rclpy.
"""

from __future__ import annotations

import importlib
import math
import re
from typing import Any

KINDS = ("msg", "srv", "action")

_NAME = re.compile(
    r"^(?P<pkg>[a-z][a-z0-9_]*)/(?P<kind>msg|srv|action)/(?P<name>[A-Z][A-Za-z0-9]*)$"
)


class InterfaceError(ValueError):
    """An interface type that cannot be used: malformed, not installed, or of the
    wrong kind; or a value that does not fit a message's field."""


def split_name(type_name: str, kind: str | None = None) -> tuple[str, str, str]:
    """(package, kind, name) of ``pkg/kind/Name``; raises InterfaceError when it is not
    that shape or not of `kind`."""
    match = _NAME.match(type_name) if isinstance(type_name, str) else None
    if match is None:
        want = f"pkg/{kind or 'msg|srv|action'}/Name"
        raise InterfaceError(
            f"{type_name!r} is not an interface type name; expected {want} "
            "(e.g. nav2_msgs/action/NavigateToPose)"
        )
    if kind is not None and match["kind"] != kind:
        raise InterfaceError(f"{type_name!r} names a {match['kind']}; this needs a {kind} type")
    return match["pkg"], match["kind"], match["name"]


def resolve(type_name: str, kind: str | None = None) -> type:
    """The generated class of `type_name` (``pkg/kind/Name``), imported now."""
    pkg, kind_, name = split_name(type_name, kind)
    try:
        module = importlib.import_module(f"{pkg}.{kind_}")
    except ImportError as exc:
        raise InterfaceError(
            f"interface {type_name!r} is not installed: no Python package {pkg!r} ({exc}); "
            f"source the ROS 2 workspace that builds {pkg} (or install its package, e.g. "
            f"apt-get install ros-<distro>-{pkg.replace('_', '-')}) in the driver's "
            "environment"
        ) from None
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        raise InterfaceError(
            f"interface {type_name!r} is not installed: package {pkg} has no {kind_} "
            f"{name} (it has: {', '.join(_names_in(module)) or 'none'})"
        )
    return cls


def _names_in(module: Any) -> list[str]:
    return sorted(n for n, v in vars(module).items() if isinstance(v, type) and n[:1].isupper())


def fields_of(msg_cls_or_msg: Any) -> dict[str, str]:
    """Field name -> ROS type string of a generated message class or instance."""
    return dict(msg_cls_or_msg.get_fields_and_field_types())


def is_message(value: Any) -> bool:
    """True for an instance of a generated ROS message class."""
    return hasattr(type(value), "get_fields_and_field_types")


def check_fields(msg_cls: type, values: Any, path: str = "") -> None:
    """Raise InterfaceError when `values` (nested dicts) name a field `msg_cls` lacks;
    leaves are not checked here (their value may be a placeholder)."""
    if not isinstance(values, dict):
        return
    fields = fields_of(msg_cls)
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        if key not in fields:
            raise InterfaceError(
                f"{msg_cls.__name__} has no field {where!r} (it has: {', '.join(fields)})"
            )
        if isinstance(value, dict):
            sub = getattr(msg_cls(), key)
            if not is_message(sub):
                raise InterfaceError(f"{where} is a {fields[key]}, not a message: give a value")
            check_fields(type(sub), value, where)


def fill(msg: Any, values: dict[str, Any], path: str = "") -> Any:
    """Set `msg`'s fields from `values` (nested dicts for nested messages, lists for
    arrays); numbers are coerced to the field's type. Returns `msg`. Raises
    InterfaceError naming the field whose value does not fit."""
    fields = fields_of(msg)
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        if key not in fields:
            raise InterfaceError(
                f"{type(msg).__name__} has no field {where!r} (it has: {', '.join(fields)})"
            )
        current = getattr(msg, key)
        try:
            if is_message(current):
                if not isinstance(value, dict):
                    raise InterfaceError(f"{where} is a {fields[key]}; give a table of its fields")
                fill(current, value, where)
                continue
            setattr(msg, key, _coerce(current, fields[key], value))
        except InterfaceError:
            raise
        except (AssertionError, TypeError, ValueError) as exc:
            raise InterfaceError(f"{where} ({fields[key]}) cannot be {value!r}: {exc}") from None
    return msg


def _coerce(current: Any, ros_type: str, value: Any) -> Any:
    """`value` in the Python type the field holds now (`current`)."""
    if isinstance(current, bool):
        return bool(value)
    if isinstance(current, int) and isinstance(value, int | float | str):
        return int(value)
    if isinstance(current, float) and isinstance(value, int | float | str):
        return float(value)
    if isinstance(current, str):
        return str(value)
    if ros_type.startswith("sequence<") or "[" in ros_type:
        element = re.sub(r"^sequence<([^,>]+).*$|\[.*$", r"\1", ros_type)
        items = list(value)
        if element in ("float", "double"):
            return [float(v) for v in items]
        if element.startswith(("int", "uint", "octet", "byte", "char")):
            return [int(v) for v in items]
        if element in ("string", "wstring") or element.startswith("string<"):
            return [str(v) for v in items]
        return items
    return value


def to_plain(value: Any, depth: int = 0) -> Any:
    """A message as nested dicts and lists of plain values (for logs and reasons)."""
    if depth > 8:
        return "..."
    if is_message(value):
        return {k: to_plain(getattr(value, k), depth + 1) for k in fields_of(value)}
    if isinstance(value, list | tuple) or type(value).__name__ in ("array", "ndarray"):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def describe(value: Any, limit: int = 200) -> str:
    """A short text for a message: its string fields first (a robot's own words, such
    as Nav2's ``error_msg``), then the rest; at most `limit` characters."""
    plain = to_plain(value)
    if not isinstance(plain, dict):
        text = repr(plain)
    else:
        words = [f"{k}: {v}" for k, v in plain.items() if isinstance(v, str) and v]
        rest = [f"{k}: {v}" for k, v in plain.items() if not isinstance(v, str)]
        text = "; ".join(words + rest) or "(empty)"
    return text if len(text) <= limit else text[: limit - 3] + "..."
