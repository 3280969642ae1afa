"""How a behaviour leaf becomes a ROS 2 goal, request or message (pure: no I/O, no rclpy).

The driver's config maps each behaviour name to an action, service or topic and gives
the fields of its goal as a table whose strings may hold placeholders, filled from the
leaf (``MOVE(kitchen)``, ``PLACE(cup)``) and the config's stations and objects:

=================== ===============================================================
``{object}``         the leaf's object or station name
``{target.KEY}``     a key of that station's or object's table (``x``, ``y``, ``z``,
                     ``theta`` always; any other key the config gives it, e.g. ``id``)
``{pose}``           a ``geometry_msgs/PoseStamped`` (as a table) of the target in ``frame``
``{goal_pose}``      the same for the object's ``goal``
``{params.KEY}``     a parameter of the leaf (``to`` in ``DROP(cup, to=tray)``)
``{frame}``          the config's ``frame``
``{behaviour}``      the behaviour's name
=================== ===============================================================

A string that is exactly one placeholder takes the value's own type (a number, a
table); one inside other text is formatted into it. Errors are BehaviourError, whose
``reason`` starts the failed behaviour's reason (``unsupported_behaviour``,
``unknown_target``, ``bad_goal``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from teamtree.drivers.ros2.params import BehaviourSpec

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")
PLACING = ("PLACE", "TRANSPORT", "DROP")
"""Behaviours after whose success the object stands at its goal (or ``to``)."""


class BehaviourError(ValueError):
    """A behaviour this robot cannot run as asked; ``reason`` names the kind of fault."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        super().__init__(f"{reason}: {detail}")


@dataclass
class Place:
    """A station or object: where it is (metres, radians) and the config's own keys."""

    name: str
    x: float
    y: float
    z: float = 0.0
    theta: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    goal: tuple[float, float, float] | None = None
    shape: str = "box"
    dims: tuple[float, ...] = (0.1, 0.1, 0.1)
    is_station: bool = False

    def table(self) -> dict[str, Any]:
        return {**self.extra, "x": self.x, "y": self.y, "z": self.z, "theta": self.theta}


def pose_stamped(x: float, y: float, z: float, theta: float, frame: str) -> dict[str, Any]:
    """A ``geometry_msgs/PoseStamped`` as a table: position and a yaw as a quaternion."""
    return {
        "header": {"frame_id": frame},
        "pose": {
            "position": {"x": x, "y": y, "z": z},
            "orientation": {"x": 0.0, "y": 0.0, "z": math.sin(theta / 2), "w": math.cos(theta / 2)},
        },
    }


@dataclass
class Site:
    """The stations and objects a robot's config names; ``placed`` follows the objects
    its behaviours put at their goals."""

    stations: dict[str, Place]
    objects: dict[str, Place]
    frame: str = "map"
    placed: dict[str, tuple[float, float, float]] = field(default_factory=dict)

    def find(self, name: Any) -> Place:
        if isinstance(name, str):
            if name in self.stations:
                return self.stations[name]
            if name in self.objects:
                return self.objects[name]
        known = ", ".join(sorted({*self.stations, *self.objects})) or "(none)"
        raise BehaviourError("unknown_target", f"{name!r} is no station or object; known: {known}")

    def context(self, behaviour: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The values placeholders of one leaf read."""
        name = params.get("object")
        if behaviour == "MOVE":
            name = params.get("to", params.get("station", name))
        ctx: dict[str, Any] = {"behaviour": behaviour, "frame": self.frame, "params": params}
        if name is None:
            return ctx
        place = self.find(name)
        ctx["object"] = place.name
        ctx["target"] = place.table()
        ctx["pose"] = pose_stamped(place.x, place.y, place.z, place.theta, self.frame)
        to = params.get("to") if behaviour != "MOVE" else None
        goal = self.find(to) if to is not None else None
        where = (goal.x, goal.y, goal.z) if goal is not None else place.goal
        if where is not None:
            ctx["goal_pose"] = pose_stamped(*where, 0.0, self.frame)
        return ctx

    def finished(self, behaviour: str, params: Mapping[str, Any]) -> None:
        """Book what a behaviour that succeeded changed: a placed object is at its goal."""
        name = params.get("object")
        if behaviour not in PLACING or name not in self.objects:
            return
        obj = self.objects[name]
        to = params.get("to")
        if to is not None and (to in self.stations or to in self.objects):
            target = self.find(to)
            self.placed[name] = (target.x, target.y, target.z)
        elif obj.goal is not None:
            self.placed[name] = obj.goal


def fill_placeholders(template: Any, ctx: Mapping[str, Any], path: str = "goal") -> Any:
    """`template` with its placeholders replaced from `ctx`; raises BehaviourError
    naming the field and the placeholder that has no value."""
    if isinstance(template, dict):
        return {k: fill_placeholders(v, ctx, f"{path}.{k}") for k, v in template.items()}
    if isinstance(template, list):
        return [fill_placeholders(v, ctx, f"{path}[{i}]") for i, v in enumerate(template)]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole:
        return _lookup(ctx, whole[1], path)
    return _PLACEHOLDER.sub(lambda m: str(_lookup(ctx, m[1], path)), template)


def _lookup(ctx: Mapping[str, Any], dotted: str, path: str) -> Any:
    value: Any = ctx
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise BehaviourError(
                "bad_goal", f"{path}: placeholder {{{dotted}}} has no value for this leaf"
            )
        value = value[part]
    return value


def placeholders(template: Any) -> list[str]:
    """The placeholder names a goal template uses (to check them against the config)."""
    if isinstance(template, dict):
        return [p for v in template.values() for p in placeholders(v)]
    if isinstance(template, list):
        return [p for v in template for p in placeholders(v)]
    return _PLACEHOLDER.findall(template) if isinstance(template, str) else []


KNOWN_ROOTS = ("object", "target", "pose", "goal_pose", "params", "frame", "behaviour")


def lookup_behaviour(behaviours: Mapping[str, BehaviourSpec], behaviour: str) -> BehaviourSpec:
    """The spec of `behaviour` (case-insensitive); BehaviourError when the config maps
    none, naming those it does."""
    spec = behaviours.get(behaviour.upper())
    if spec is None:
        known = ", ".join(sorted(behaviours)) or "none"
        raise BehaviourError(
            "unsupported_behaviour", f"{behaviour!r}; this robot's config maps {known}"
        )
    return spec


def _triple(raw: Any, what: str) -> tuple[float, float, float]:
    if not (isinstance(raw, list | tuple) and len(raw) == 3):
        raise ValueError(f"{what}: expected [x, y, z] in metres, not {raw!r}")
    return (float(raw[0]), float(raw[1]), float(raw[2]))


def site_from_config(
    stations: Mapping[str, Any], objects: Mapping[str, Any], frame: str = "map"
) -> Site:
    """A Site from the config's tables; ValueError naming the entry and key at fault."""
    out_stations: dict[str, Place] = {}
    for name, raw in stations.items():
        if not isinstance(raw, Mapping):
            raise ValueError(f"stations.{name}: expected a table like {{x = 1.0, y = 2.0}}")
        try:
            extra = {k: v for k, v in raw.items() if k not in ("x", "y", "z", "theta")}
            out_stations[name] = Place(
                name,
                float(raw["x"]),
                float(raw["y"]),
                float(raw.get("z", 0.0)),
                float(raw.get("theta", 0.0)),
                extra,
                shape="box",
                dims=(0.5, 0.5, 0.05),
                is_station=True,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"stations.{name}: needs numbers x and y ({exc})") from None
    out_objects: dict[str, Place] = {}
    for name, raw in objects.items():
        if not isinstance(raw, Mapping) or "position" not in raw:
            raise ValueError(f"objects.{name}: expected a table like {{position = [x, y, z]}}")
        if name in out_stations:
            raise ValueError(f"objects.{name}: names a station too")
        x, y, z = _triple(raw["position"], f"objects.{name}.position")
        goal = raw.get("goal")
        dims = raw.get("dims", [0.1, 0.1, 0.1])
        if not (isinstance(dims, list) and dims and all(isinstance(d, int | float) for d in dims)):
            raise ValueError(f"objects.{name}.dims: expected a list of sizes in metres")
        extra = {
            k: v for k, v in raw.items() if k not in ("position", "goal", "dims", "shape", "theta")
        }
        out_objects[name] = Place(
            name,
            x,
            y,
            z,
            float(raw.get("theta", 0.0)),
            extra,
            goal=None if goal is None else _triple(goal, f"objects.{name}.goal"),
            shape=str(raw.get("shape", "box")),
            dims=tuple(float(d) for d in dims),
        )
    return Site(out_stations, out_objects, frame)
