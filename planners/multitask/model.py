"""The pick-and-place world of seed 004 §IV: behaviours, objects, durations, problems.

Leaves of a multitask tree are ``MOVE(o1, to=pick)`` (to the object's position),
``MOVE(o1, to=place)`` (to its destination), ``MOVE(x=1.0, y=2.0)``, ``PICK(o1)`` and
``PLACE(o1)``. ``pick_and_place_tree`` builds Fig. 4: an AND of one
THEN(move, pick, move, place) per object, with leaf ids as Fig. 7 labels them
(``move-o1-1``, ``pick-o1``, ``move-o1-2``, ``place-o1``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.resources import (
    ResourceProfile,
    ResourceType,
    pr2_profile,
    resource_profile_from_dict,
)
from teamtree.planners.tasktree import TaskTree, parse_tree, tree_from_dict

__all__ = [
    "DEFAULT_TOLERANCE",
    "Behaviour",
    "BehaviourKind",
    "Durations",
    "MultitaskProblem",
    "ObjectSpec",
    "Point",
    "World",
    "distance",
    "pick_and_place_tree",
    "problem_from_mission",
]

Point = tuple[float, float]
"""A position on the floor, metres."""

DEFAULT_TOLERANCE = 0.25
"""Metres. The robot is *at* a spot within this distance of it: objects side by side in
one depot (Fig. 6) share a spot, so a move to the second is skipped (§III.C.2). Also
eq. 1's distance floor ("the closest distance before the behaviour is assumed done")."""


def distance(a: Point, b: Point) -> float:
    """Euclidean distance ‖a − b‖."""
    return math.hypot(a[0] - b[0], a[1] - b[1])


class BehaviourKind(StrEnum):
    """The low-level behaviours of seed 004 §III.B."""

    MOVE = "move"
    """Drive the base to a point; needs the base exclusively; hands its resources on."""
    PICK = "pick"
    """Pick an object; base and head shared (still, same place), a gripper exclusively."""
    PLACE = "place"
    """Place a held object; as pick, with the gripper that holds the object."""


@dataclass(frozen=True)
class Behaviour:
    """One leaf read as a behaviour: its kind, object (if any) and target point."""

    leaf: str
    kind: BehaviourKind
    object: str | None
    target: Point


@dataclass(frozen=True)
class ObjectSpec:
    """An object to move: where it starts (green circle, Fig. 6) and its destination (red)."""

    name: str
    position: Point
    destination: Point


@dataclass(frozen=True)
class Durations:
    """Simulated durations (seconds). Not in the paper; chosen as a PR2-like guess.

    A move takes ``move_overhead_s + distance / speed_m_s`` (0.5 m/s is a cautious
    indoor navigation speed for the PR2 base, the overhead covers turning and
    settling); a pick or a place takes a constant. Pick and place take the same
    time, so behaviours run together finish together and synchronous rounds lose
    nothing against event-driven ones (see ``simulate``).
    """

    speed_m_s: float = 0.5
    move_overhead_s: float = 2.0
    pick_s: float = 10.0
    place_s: float = 10.0

    def move(self, start: Point, end: Point) -> float:
        """Seconds to drive from ``start`` to ``end``."""
        return self.move_overhead_s + distance(start, end) / self.speed_m_s


@dataclass(frozen=True)
class World:
    """What the robot knows of the world: its position, what it holds, what is placed."""

    robot: Point
    held: frozenset[tuple[str, str]] = frozenset()
    """(object, gripper) pairs."""
    placed: frozenset[str] = frozenset()

    def holder(self, obj: str) -> str | None:
        """The gripper holding ``obj``, or None."""
        for o, g in self.held:
            if o == obj:
                return g
        return None


@dataclass(frozen=True)
class MultitaskProblem:
    """A tree, a robot (resource profile and start) and the objects its leaves name.

    Raises SpecificationError (from the constructor) when a leaf is not a known
    behaviour or names an unknown object.
    """

    tree: TaskTree
    objects: Mapping[str, ObjectSpec]
    start: Point = (0.0, 0.0)
    profile: ResourceProfile = field(default_factory=pr2_profile)
    durations: Durations = Durations()
    tolerance: float = DEFAULT_TOLERANCE
    behaviours: Mapping[str, Behaviour] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "behaviours", {leaf: self._read(leaf) for leaf in self.tree.leaves}
        )

    def _read(self, leaf: str) -> Behaviour:
        node = self.tree[leaf]
        name = (node.behavior or "").lower()
        params = node.param_dict
        try:
            kind = BehaviourKind(name)
        except ValueError:
            raise SpecificationError(
                f"leaf {leaf}: behaviour {node.behavior!r} is not MOVE, PICK or PLACE"
            ) from None
        obj = params.get("object")
        if obj is not None:
            obj = str(obj)
            if obj not in self.objects:
                raise SpecificationError(f"leaf {leaf}: unknown object {obj!r}")
        if kind is BehaviourKind.MOVE:
            if "x" in params and "y" in params:
                return Behaviour(leaf, kind, obj, (float(params["x"]), float(params["y"])))
            to = params.get("to", "pick")
            if obj is None or to not in ("pick", "place"):
                raise SpecificationError(
                    f"leaf {leaf}: MOVE needs an object and to=pick|place, or x=..., y=..."
                )
            spec = self.objects[obj]
            return Behaviour(leaf, kind, obj, spec.position if to == "pick" else spec.destination)
        if obj is None:
            raise SpecificationError(f"leaf {leaf}: {kind.value.upper()} needs an object")
        spec = self.objects[obj]
        return Behaviour(
            leaf, kind, obj, spec.position if kind is BehaviourKind.PICK else spec.destination
        )

    @property
    def n_grippers(self) -> int:
        """Grippers in service."""
        return self.profile.count(ResourceType.GRIPPER)


def pick_and_place_tree(objects: Sequence[str]) -> TaskTree:
    """Fig. 4: AND over objects of THEN(move to it, pick, move to its destination, place)."""
    units = [
        {
            "type": "then",
            "id": f"task-{o}",
            "children": [
                {"behavior": "MOVE", "object": o, "params": {"to": "pick"}, "id": f"move-{o}-1"},
                {"behavior": "PICK", "object": o, "id": f"pick-{o}"},
                {"behavior": "MOVE", "object": o, "params": {"to": "place"}, "id": f"move-{o}-2"},
                {"behavior": "PLACE", "object": o, "id": f"place-{o}"},
            ],
        }
        for o in objects
    ]
    return tree_from_dict({"type": "and", "id": "root", "children": units})


def _point(value: Any, where: str) -> Point:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise SpecificationError(f"{where}: expected [x, y] in metres")
    return (float(value[0]), float(value[1]))


def problem_from_mission(mission: Mapping[str, Any], *, where: str = "mission") -> MultitaskProblem:
    """Build a problem from an already-parsed ``[mission]`` table (no I/O).

    Keys: ``start = [x, y]``; ``[mission.objects.NAME]`` with ``position`` and
    ``destination``; optional ``tree`` (compact string or table; default Fig. 4 over
    the objects in file order), ``robot`` (``"pr2"`` or a resource table),
    ``tolerance``, and ``[mission.durations]`` (fields of ``Durations``). Raises
    SpecificationError naming the key.
    """
    objects_data = mission.get("objects")
    if not isinstance(objects_data, Mapping) or not objects_data:
        raise SpecificationError(f"{where}.objects: expected tables [{where}.objects.NAME]")
    objects = {}
    for name, spec in objects_data.items():
        if not isinstance(spec, Mapping):
            raise SpecificationError(f"{where}.objects.{name}: expected a table")
        objects[name] = ObjectSpec(
            name,
            _point(spec.get("position"), f"{where}.objects.{name}.position"),
            _point(spec.get("destination"), f"{where}.objects.{name}.destination"),
        )
    start = _point(mission.get("start", [0.0, 0.0]), f"{where}.start")
    tree_data = mission.get("tree")
    if tree_data is None:
        tree = pick_and_place_tree(list(objects))
    elif isinstance(tree_data, str):
        tree = parse_tree(tree_data)
    else:
        tree = tree_from_dict(tree_data, where=f"{where}.tree")
    profile = resource_profile_from_dict(mission.get("robot", "pr2"), where=f"{where}.robot")
    dur_data = mission.get("durations", {})
    if not isinstance(dur_data, Mapping):
        raise SpecificationError(f"{where}.durations: expected a table")
    known = set(Durations.__dataclass_fields__)
    unknown = set(dur_data) - known
    if unknown:
        raise SpecificationError(f"{where}.durations: unknown key(s) {sorted(unknown)}")
    for k, v in dur_data.items():
        if (
            not isinstance(v, int | float)
            or isinstance(v, bool)
            or v < 0
            or (k == "speed_m_s" and v == 0)
        ):
            raise SpecificationError(f"{where}.durations.{k}: expected a non-negative number")
    durations = Durations(**{k: float(v) for k, v in dur_data.items()})
    tolerance = mission.get("tolerance", DEFAULT_TOLERANCE)
    if not isinstance(tolerance, int | float) or tolerance <= 0:
        raise SpecificationError(f"{where}.tolerance: expected a positive number of metres")
    return MultitaskProblem(tree, objects, start, profile, durations, float(tolerance))
