"""Kind parameters as declared types: decode an ``[[agents]]`` entry into a msgspec Struct.

A kind declares its config keys once, as a Struct whose fields carry their type, default
and constraints (``Annotated[float, Meta(gt=0, description="...")]``); `decode_params`
validates the entry against it and turns msgspec's errors into the ConfigError form of
agents/runtime/config.py: file, ``agents[i].key`` and "is X; expected <description>".
Unknown keys stay errors. Fields whose Meta has ``extra={"id": True}`` must also be
valid agent ids (see teamtree.broker.topics.validate_id).
"""

from __future__ import annotations

import re
import typing
from functools import cache
from typing import Any, TypeVar

import msgspec

from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.broker import ConfigError, TopicError
from teamtree.broker.topics import validate_id

S = TypeVar("S", bound=msgspec.Struct)

#: "Expected `int`, got `str` - at `$.rounds`" -> message, path
_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")

#: Meta(extra=ID) marks a field whose value must be a valid agent id.
ID = {"id": True}


class FieldInfo(typing.NamedTuple):
    """What a Struct field is called in the config and how its error describes it."""

    name: str
    description: str | None
    is_id: bool


@cache
def field_infos(params_type: type[msgspec.Struct]) -> dict[str, FieldInfo]:
    """Config key -> FieldInfo for every field of `params_type` (by its encoded name)."""
    hints = typing.get_type_hints(params_type, include_extras=True)
    encoded = dict(
        zip(params_type.__struct_fields__, params_type.__struct_encode_fields__, strict=True)
    )
    out: dict[str, FieldInfo] = {}
    for attr, key in encoded.items():
        description, is_id = None, False
        for meta in getattr(hints[attr], "__metadata__", ()):
            if isinstance(meta, msgspec.Meta):
                description = meta.description or description
                is_id = is_id or bool((meta.extra or {}).get("id"))
        out[key] = FieldInfo(attr, description, is_id)
    return out


def _walk(data: Any, path: str) -> tuple[bool, Any]:
    """The value at a msgspec path like ``.jobs[0].job`` in `data` (found, value)."""
    for name, index in _STEP.findall(path):
        try:
            data = data[int(index)] if index else data[name]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, data


def convert_error(
    exc: msgspec.ValidationError, data: Any, params_type: type[msgspec.Struct], prefix: str
) -> tuple[str, str]:
    """(key, message) for a msgspec validation error of `data` decoded as `params_type`."""
    match = _AT.match(str(exc))
    assert match is not None
    message, path = match["message"], match["path"] or ""
    missing = _MISSING.match(message)
    unknown = _UNKNOWN.match(message)
    if missing or unknown:
        path = f"{path}.{(missing or unknown)['name']}"  # type: ignore[index]
    if unknown:
        return prefix + path, "is not a known key; remove or correct it"
    key = prefix + path
    top = _STEP.match(path)
    info = field_infos(params_type).get(top.group(1)) if top and top.group(1) else None
    if missing:
        what = info.description if info and info.description else "a value"
        return key, f"is missing; expected {what}"
    found, value = _walk(data, path)
    shown = f"is {value!r}; " if found else ""
    nested = path.count(".") + path.count("[") > 1
    if info and info.description and not nested:
        return key, f"{shown}expected {info.description}"
    detail = f"{message[:1].lower()}{message[1:]}"
    if info and info.description:
        detail += f" (in {info.description})"
    return key, f"{shown}{detail}"


def decode_params(spec: AgentSpec, config: TeamConfig, params_type: type[S], **defaults: Any) -> S:
    """`spec`'s kind-specific keys as a `params_type`; `defaults` fill keys the entry
    leaves out (for defaults that depend on the rest of the config). Raises ConfigError
    naming the file and key."""
    reader = spec_reader(spec, config)
    infos = field_infos(params_type)
    unknown = sorted(set(reader.table) - set(infos))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(unknown)}; remove or correct them",
            path=str(config.path),
            key=reader.prefix,
        )
    data = {**defaults, **reader.table}
    try:
        params = msgspec.convert(data, params_type, strict=True)
    except msgspec.ValidationError as exc:
        key, message = convert_error(exc, data, params_type, reader.prefix)
        raise ConfigError(message, path=str(config.path), key=key) from None
    for key, info in infos.items():
        value = getattr(params, info.name)
        if info.is_id and value is not None:
            try:
                validate_id(value, "id")
            except TopicError as exc:
                raise reader.error(key, exc.reason) from None
    return params


def params_dict(params: msgspec.Struct) -> dict[str, Any]:
    """A params Struct as constructor keyword arguments (attribute names)."""
    return msgspec.structs.asdict(params)
