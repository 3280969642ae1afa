"""Robot profiles and the robot types of seed 002 (Lee et al.), Tables II and III.

A profile is plain data: components (each with a strength level for Table II and a
type for Table III), size in height units, collaborability, assembly ports, battery.

Conventions chosen here (the paper leaves them open):

- positions are integer planes ``(x, y, z)`` >= 1 (Fig. 6); ``y`` is height. Perception
  and manipulation sit on top of the robot (``y = size``), locomotion at the bottom
  (``y = 1``); ``x = z = 1``. Job 3's "n-unit height" is then a demand ``y >= n`` on
  the manipulation component.
- Table II's B, L, M locomotion is "lv 2"; Table III calls the same units "type 1".
- collaborability is the Table II level; a robot may sit on another only if its level is
  not above the lower robot's (big robots carry small ones). Table III's type ranges
  are kept as data (``collab_types``).
- "—" ports (type B) is 0 ports: non-assemblable.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from teamtree.broker import ConfigError

IDLE_BATTERY_THRESHOLD = 0.3
"""Seed 002 §II.B: a robot is idle with more than 30 % battery and no job."""


class Domain(enum.IntEnum):
    """Capability domains of seed 002 §II.B, in matrix row order."""

    PERCEPTION = 0
    MANIPULATION = 1
    LOCOMOTION = 2

    @property
    def short(self) -> str:
        """One-letter tag used in graph node names (Fig. 10: P, M, L)."""
        return "PML"[self.value]

    @classmethod
    def parse(cls, value: str | int | Domain) -> Domain:
        """Domain from its name (``"perception"``), short tag (``"P"``) or index."""
        if isinstance(value, Domain):
            return value
        if isinstance(value, int):
            return cls(value)
        text = str(value).strip().lower()
        for member in cls:
            if text in (member.name.lower(), member.short.lower()):
                return member
        raise ValueError(f"unknown capability domain {value!r}")


DEFAULT_ACTIONS: Mapping[Domain, tuple[str, ...]] = {
    Domain.PERCEPTION: ("detect", "observe"),
    Domain.MANIPULATION: ("grasp", "release"),
    Domain.LOCOMOTION: ("move",),
}

Position = tuple[int, int, int]


@dataclass(frozen=True)
class Component:
    """One hardware component (or one demanded component of a job).

    ``level`` is the strength level (Table II), ``type`` the specialty type (Table III),
    ``position`` the component's planes (Fig. 6), ``actions`` its action set (§VI.A).
    """

    domain: Domain
    level: int = 1
    type: int = 1
    position: Position = (1, 1, 1)
    actions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain", Domain.parse(self.domain))
        if not self.actions:
            object.__setattr__(self, "actions", DEFAULT_ACTIONS[self.domain])
        if self.level < 1 or self.type < 1:
            raise ValueError("component level and type start at 1")
        if len(self.position) != 3 or min(self.position) < 1:
            raise ValueError("a component position is three planes, each >= 1")
        object.__setattr__(self, "position", tuple(int(v) for v in self.position))

    def raised(self, dy: int) -> Component:
        """The same component ``dy`` height units higher (tower assembly)."""
        x, y, z = self.position
        return replace(self, position=(x, y + dy, z))


@dataclass(frozen=True)
class RobotProfile:
    """What a robot is (seed 002 Tables II, III): its factsheet as plain data.

    ``kind`` names its type (``"M"``), ``size`` its height in units, ``ports`` its
    assembly ports (0: non-assemblable), ``battery`` its charge in [0, 1].
    """

    robot_id: str
    kind: str
    components: tuple[Component, ...]
    size: int
    collab_level: int
    collab_types: tuple[int, ...] = ()
    ports: int = 0
    battery: float = 1.0

    @property
    def assemblable(self) -> bool:
        """True when the robot has assembly ports (Fig. 3)."""
        return self.ports > 0

    def has(self, domain: Domain) -> bool:
        """True when the robot has a component of ``domain``."""
        return any(c.domain == domain for c in self.components)

    def with_battery(self, battery: float) -> RobotProfile:
        """A copy with another battery charge."""
        return replace(self, battery=battery)

    def signature(self) -> tuple[Any, ...]:
        """Everything capability-relevant, without id and battery (interchangeable robots)."""
        return (self.kind, self.components, self.size, self.collab_level, self.ports)

    def to_dict(self) -> dict[str, Any]:
        """The profile as a TOML-shaped dict (inverse of :meth:`from_dict`)."""
        return {
            "id": self.robot_id,
            "kind": self.kind,
            "size": self.size,
            "collaborability": self.collab_level,
            "collaborability_types": list(self.collab_types),
            "ports": self.ports,
            "battery": self.battery,
            "components": [
                {
                    "domain": c.domain.name.lower(),
                    "level": c.level,
                    "type": c.type,
                    "position": list(c.position),
                    "actions": list(c.actions),
                }
                for c in self.components
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, path: str | None = None) -> RobotProfile:
        """Build a profile from a TOML table; raises ConfigError naming the bad key.

        With only ``id`` and ``kind`` (and optionally ``battery``) the Table II/III type
        is used; any other field given overrides the table.
        """
        return _profile_from_dict(data, path=path)


# ---------------------------------------------------------------------------
# Tables II and III


@dataclass(frozen=True)
class _Part:
    domain: Domain
    count: int
    level: int
    type: int


@dataclass(frozen=True)
class RobotType:
    """One row of Tables II and III (amount from Table II)."""

    kind: str
    amount: int
    parts: tuple[_Part, ...]
    size: int
    collab_level: int
    collab_types: tuple[int, ...]
    ports: int
    notes: str = field(default="", compare=False)

    def components(self) -> tuple[Component, ...]:
        """The type's components with the position convention of this module."""
        out: list[Component] = []
        for part in self.parts:
            y = 1 if part.domain == Domain.LOCOMOTION else self.size
            out.extend(
                Component(part.domain, part.level, part.type, (1, y, 1)) for _ in range(part.count)
            )
        return tuple(out)

    def make(self, robot_id: str, *, battery: float = 1.0) -> RobotProfile:
        """A robot of this type."""
        return RobotProfile(
            robot_id=robot_id,
            kind=self.kind,
            components=self.components(),
            size=self.size,
            collab_level=self.collab_level,
            collab_types=self.collab_types,
            ports=self.ports,
            battery=battery,
        )


_P, _M, _L = Domain.PERCEPTION, Domain.MANIPULATION, Domain.LOCOMOTION

ROBOT_TYPES: Mapping[str, RobotType] = {
    t.kind: t
    for t in (
        RobotType("B", 2, (_Part(_P, 1, 1, 1), _Part(_M, 2, 1, 1), _Part(_L, 1, 2, 1)), 4, 1,
                  (1,), 0),
        RobotType("L", 1, (_Part(_P, 1, 1, 1), _Part(_M, 2, 1, 1), _Part(_L, 1, 2, 1)), 5, 4,
                  (1, 2, 3, 4), 3),
        RobotType("M", 3, (_Part(_P, 1, 1, 1), _Part(_M, 2, 1, 1), _Part(_L, 1, 2, 1)), 3, 3,
                  (1, 2, 3), 2),
        RobotType("S1", 1, (_Part(_P, 1, 1, 1), _Part(_M, 1, 1, 1), _Part(_L, 1, 1, 1)), 2, 3,
                  (1, 2, 3), 1),
        RobotType("S2", 1, (_Part(_P, 1, 1, 1), _Part(_M, 1, 2, 2), _Part(_L, 1, 1, 1)), 2, 3,
                  (1, 2, 3), 1),
        RobotType("O1", 1, (_Part(_P, 1, 3, 3),), 2, 2, (3,), 1),
        RobotType("O2", 1, (_Part(_M, 1, 2, 2),), 2, 2, (2,), 1),
        RobotType("O3", 1, (_Part(_M, 1, 1, 1),), 2, 2, (2,), 1),
        RobotType("O4", 1, (_Part(_P, 1, 2, 2), _Part(_L, 1, 1, 1)), 2, 2, (2,), 1),
    )
}  # fmt: skip
"""Tables II (levels, amounts) and III (types) of seed 002, keyed by type name."""

FACTORY_ORDER: tuple[str, ...] = tuple(k for k, t in ROBOT_TYPES.items() for _ in range(t.amount))
"""The 12 robots of Table II in order: B B L M M M S1 S2 O1 O2 O3 O4."""


def make_robot(kind: str, robot_id: str | None = None, *, battery: float = 1.0) -> RobotProfile:
    """A robot of Table II/III type ``kind``; raises ConfigError for an unknown type."""
    try:
        rtype = ROBOT_TYPES[kind]
    except KeyError:
        raise ConfigError(
            f"unknown robot type {kind!r}; use one of {sorted(ROBOT_TYPES)}", key="kind"
        ) from None
    return rtype.make(robot_id or kind.lower(), battery=battery)


def factory_robots(n: int | None = None) -> list[RobotProfile]:
    """``n`` robots drawn round-robin from Table II's mix (all 12 when ``n`` is None).

    Ids follow the paper: the type name in lower case plus a per-type counter for
    letter types (``b1``, ``b2``, ``l1``, ``m3``); digit types are ``s1``, ``o4`` and, when
    repeated, ``s1_2``.
    """
    count = len(FACTORY_ORDER) if n is None else n
    if count < 0:
        raise ValueError("n must be >= 0")
    reps = max(1, math.ceil(count / len(FACTORY_ORDER)))
    kinds = list(FACTORY_ORDER) * reps
    seen: dict[str, int] = {}
    out: list[RobotProfile] = []
    for kind in kinds[:count]:
        seen[kind] = seen.get(kind, 0) + 1
        k = seen[kind]
        if kind[-1].isdigit():
            rid = kind.lower() if k == 1 else f"{kind.lower()}_{k}"
        else:
            rid = f"{kind.lower()}{k}"
        out.append(make_robot(kind, rid))
    return out


# ---------------------------------------------------------------------------
# dict (TOML) loading

_PROFILE_KEYS = {
    "id",
    "kind",
    "size",
    "collaborability",
    "collaborability_types",
    "ports",
    "battery",
    "components",
}
_COMPONENT_KEYS = {"domain", "level", "type", "position", "actions", "count"}


def _want_int(value: Any, key: str, path: str | None, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"must be an integer >= {minimum}, got {value!r}", path=path, key=key)
    return value


def _components_from(items: Any, path: str | None, prefix: str) -> tuple[Component, ...]:
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise ConfigError("must be a list of component tables", path=path, key=prefix)
    out: list[Component] = []
    for i, item in enumerate(items):
        where = f"{prefix}[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError("must be a table", path=path, key=where)
        unknown = sorted(set(item) - _COMPONENT_KEYS)
        if unknown:
            raise ConfigError(
                f"unknown key(s) {unknown}; allowed: {sorted(_COMPONENT_KEYS)}",
                path=path,
                key=f"{where}.{unknown[0]}",
            )
        if "domain" not in item:
            raise ConfigError("is required", path=path, key=f"{where}.domain")
        try:
            domain = Domain.parse(item["domain"])
        except ValueError:
            raise ConfigError(
                f"unknown domain {item['domain']!r}; use perception, manipulation or locomotion",
                path=path,
                key=f"{where}.domain",
            ) from None
        level = _want_int(item.get("level", 1), f"{where}.level", path, 1)
        ctype = _want_int(item.get("type", level), f"{where}.type", path, 1)
        count = _want_int(item.get("count", 1), f"{where}.count", path, 1)
        pos = item.get("position", (1, 1, 1))
        if (
            not isinstance(pos, Sequence)
            or len(pos) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pos)
        ):
            raise ConfigError(
                f"must be three integers >= 1, got {pos!r}", path=path, key=f"{where}.position"
            )
        actions = item.get("actions", ())
        if not isinstance(actions, Sequence) or not all(isinstance(a, str) for a in actions):
            raise ConfigError("must be a list of strings", path=path, key=f"{where}.actions")
        comp = Component(domain, level, ctype, tuple(pos), tuple(actions))
        out.extend([comp] * count)
    return tuple(out)


def _profile_from_dict(data: Mapping[str, Any], *, path: str | None) -> RobotProfile:
    if not isinstance(data, Mapping):
        raise ConfigError("a robot profile must be a table", path=path)
    unknown = sorted(set(data) - _PROFILE_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key(s) {unknown}; allowed: {sorted(_PROFILE_KEYS)}",
            path=path,
            key=unknown[0],
        )
    robot_id = data.get("id")
    if not isinstance(robot_id, str) or not robot_id or any(ch in robot_id for ch in "/+#$"):
        raise ConfigError(
            f"must be a non-empty string without / + # $, got {robot_id!r}", path=path, key="id"
        )
    kind = data.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"must be a string, got {kind!r}", path=path, key="kind")
    base: RobotProfile | None = None
    if kind in ROBOT_TYPES:
        base = ROBOT_TYPES[kind].make(robot_id)
    elif "components" not in data:
        raise ConfigError(
            f"unknown robot type {kind!r}; use one of {sorted(ROBOT_TYPES)} or give components",
            path=path,
            key="kind",
        )
    battery = data.get("battery", 1.0)
    if isinstance(battery, bool) or not isinstance(battery, int | float) or not 0 <= battery <= 1:
        raise ConfigError(f"must be a number in [0, 1], got {battery!r}", path=path, key="battery")
    if "components" in data:
        components = _components_from(data["components"], path, "components")
    else:
        assert base is not None
        components = base.components
    if base is None:
        for key in ("size", "collaborability"):
            if key not in data:
                raise ConfigError("is required with custom components", path=path, key=key)
    size = _want_int(data.get("size", base.size if base else 1), "size", path, 1)
    collab = _want_int(
        data.get("collaborability", base.collab_level if base else 1), "collaborability", path, 1
    )
    ports = _want_int(data.get("ports", base.ports if base else 0), "ports", path, 0)
    ctypes_raw = data.get("collaborability_types", base.collab_types if base else (collab,))
    if not isinstance(ctypes_raw, Sequence) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in ctypes_raw
    ):
        raise ConfigError("must be a list of integers >= 1", path=path, key="collaborability_types")
    return RobotProfile(
        robot_id=robot_id,
        kind=kind or "custom",
        components=components,
        size=size,
        collab_level=collab,
        collab_types=tuple(ctypes_raw),
        ports=ports,
        battery=float(battery),
    )


def profiles_from_dicts(
    items: Iterable[Mapping[str, Any]], *, path: str | None = None
) -> list[RobotProfile]:
    """Profiles from a list of TOML tables; duplicate ids raise ConfigError."""
    out: list[RobotProfile] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        try:
            prof = RobotProfile.from_dict(item, path=path)
        except ConfigError as exc:
            key = f"robots[{i}].{exc.key}" if exc.key else f"robots[{i}]"
            msg = str(exc).split("] ", 1)[-1] if exc.key else str(exc)
            if path and msg.startswith(f"{path}: "):
                msg = msg[len(path) + 2 :]
            raise ConfigError(msg, path=path, key=key) from None
        if prof.robot_id in seen:
            raise ConfigError(
                f"duplicate robot id {prof.robot_id!r}", path=path, key=f"robots[{i}].id"
            )
        seen.add(prof.robot_id)
        out.append(prof)
    return out
