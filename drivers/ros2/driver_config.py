"""A ``ros2_driver`` entry of a team config checked and turned into the driver's
keyword arguments: every behaviour's interface type must be installed and its goal
must name only fields of it, so a mistake is a config error naming the key at start,
not a failed goal mid-mission."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.drivers.base import driven_agent
from teamtree.drivers.ros2.interfaces import InterfaceError, check_fields, resolve
from teamtree.drivers.ros2.mapping import KNOWN_ROOTS, placeholders, site_from_config
from teamtree.drivers.ros2.params import BehaviourSpec, Ros2Params

__all__ = ["behaviour_specs", "driver_params"]


def driver_params(spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
    """The driver's keyword arguments from its entry `spec` of `config`; raises the
    config's error naming the key."""
    reader = spec_reader(spec, config)
    defaults = driven_agent(spec, config)
    params = decode_params(spec, config, Ros2Params, **defaults)
    behaviours = behaviour_specs(reader, params.behaviours)
    if not behaviours:
        raise reader.error("behaviours", "maps no behaviour; give at least one")
    for key in ("pose", "battery", "diagnostics"):
        ref = getattr(params, key)
        if ref is not None:
            try:
                resolve(ref.type, "msg")
            except InterfaceError as exc:
                raise reader.error(f"{key}.type", str(exc)) from None
    try:
        site = site_from_config(params.stations, params.objects, params.frame)
    except ValueError as exc:
        raise reader.error("stations" if "station" in str(exc) else "objects",
                           str(exc)) from None  # fmt: skip
    out = params_dict(params)
    for key in ("stations", "objects"):
        del out[key]
    for key in ("pose", "battery", "diagnostics"):
        out[key] = getattr(params, key)
    return {**out, "behaviours": behaviours, "site": site}


def behaviour_specs(reader: Any, raw: dict[str, Any]) -> dict[str, BehaviourSpec]:
    """Each ``behaviours`` entry as a BehaviourSpec whose interface type is installed
    and whose goal names only fields of it; errors name ``behaviours.NAME.key``."""
    out: dict[str, BehaviourSpec] = {}
    for name, table in raw.items():
        key = f"behaviours.{name}"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise reader.error(key, "a behaviour's name is a word such as MOVE or PLACE")
        try:
            spec = msgspec.convert(table, BehaviourSpec)
        except msgspec.ValidationError as exc:
            raise reader.error(
                key,
                f'{exc}; expected a table like {{action = "/navigate_to_pose", '
                'type = "nav2_msgs/action/NavigateToPose", goal = {pose = "{pose}"}}',
            ) from None
        given = [v for v in ("action", "service", "topic") if getattr(spec, v)]
        if len(given) != 1:
            raise reader.error(key, "give exactly one of action, service or topic")
        via = spec.via
        try:
            cls = resolve(spec.type, "msg" if via == "topic" else via)
            target = {"action": "Goal", "service": "Request"}.get(via)
            check_fields(getattr(cls, target) if target else cls, spec.goal)
        except InterfaceError as exc:
            raise reader.error(f"{key}.type" if "field" not in str(exc) else f"{key}.goal",
                               str(exc)) from None  # fmt: skip
        for placeholder in placeholders(spec.goal):
            if placeholder.split(".")[0] not in KNOWN_ROOTS:
                raise reader.error(
                    f"{key}.goal",
                    f"unknown placeholder {{{placeholder}}}; known: "
                    + ", ".join(f"{{{r}}}" for r in KNOWN_ROOTS),
                )
        if spec.success_field is not None and via != "service":
            raise reader.error(f"{key}.success_field", "only a service has a response to read")
        out[name.upper()] = spec
    return out
