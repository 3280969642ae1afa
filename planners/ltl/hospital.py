"""The hospital scenario of seed 003 as data (from the authors' configuration, see
docs/scenarios.md): map, robots DR / A1 / Wassi, and the study 1, study 2 and φ1 formulas.

φ1 (Scenario 1) cannot be taken as printed: its last conjunct closes five parentheses
where it opens three, ``◇(c1 ∧ Training ∧ ◇(c7 ∧ Training ∧ ◇(c6 ∧ Training)))))``, so
two nested operands are lost. ``scenario1`` reads it as study 2's shape, with the
training along c1 → c7 → c6 and the return to p4 nested last, as the scenario's
sentence orders them ("complete a walk training … and then send the patient back to
p4"). ``scenario1_flat`` drops the two extra parentheses instead, leaving ``◇(p4 ∧
Standby)`` a conjunct of its own: then nothing orders the return after the training,
and the optimal plan takes the patient to p4 first and trains afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence

from teamtree.broker import SpecificationError
from teamtree.planners.ltl.model import (
    Edge,
    ModeAction,
    RegionMap,
    RobotModel,
    TransitionSystem,
    TSState,
)

__all__ = [
    "FORMULAS",
    "HOSPITAL_MAP",
    "ROBOT_TYPES",
    "hospital_robot",
    "hospital_team",
    "replicated_team",
]

_REGIONS: dict[str, tuple[float, float]] = {
    "p1": (6.8, 0.0),
    "p2": (7.0, 6.0),
    "p3": (6.0, 12.0),
    "p4": (-5.7, 0.0),
    "p5": (-6.0, 6.0),
    "p6": (-4.0, 12.0),
    "c1": (0.0, 0.0),
    "c2": (0.0, 6.0),
    "c3": (0.0, 12.0),
    "c4": (0.0, 17.0),
    "c5": (-12.0, 16.0),
    "c6": (-11.0, -5.0),
    "c7": (0.0, -5.0),
    "c8": (-16.2, 15.6),
    "c9": (-15.0, 21.7),
    "c10": (-15.0, 26.8),
    "c11": (-15.0, 32.0),
    "x1": (-19.0, 21.0),
    "x2": (-10.0, 21.0),
    "w1": (-21.0, 29.4),
    "w2": (-8.2, 29.0),
    "s1": (-16.58, 12.0),
}


def _both(a: str, b: str, w: float = 10.0) -> list[Edge]:
    return [Edge(a, b, w), Edge(b, a, w)]


_EDGES: list[Edge] = [
    *_both("c1", "c2"),
    *_both("c1", "c7"),
    *_both("c1", "p1"),
    *_both("c1", "p4"),
    *_both("c2", "c3"),
    *_both("c2", "p2"),
    *_both("c2", "p5"),
    *_both("c3", "c4"),
    *_both("c3", "p3"),
    Edge("c3", "p6", 10.0, {"quadruped": 5.0}),
    Edge("p6", "c3", 10.0),
    *_both("c4", "c5", 20.0),
    *_both("c5", "c6", 40.0),
    *_both("c6", "c7", 20.0),
    Edge("c5", "c8", 10.0),
    Edge("c5", "c9", 10.0),
    Edge("c9", "c5", 15.0),
    Edge("c8", "c5", 10.0),
    *_both("c8", "c9"),
    Edge("c8", "s1", 10.0),
    Edge("s1", "c8", 5.0),
    *_both("c9", "x1"),
    *_both("c9", "x2"),
    *_both("c9", "c10"),
    *_both("c10", "c11"),
    *_both("c10", "w1"),
    *_both("c10", "w2"),
    *_both("c11", "w1"),
    *_both("c11", "w2"),
]

HOSPITAL_MAP = RegionMap(_REGIONS, _EDGES, stay_weight=0.01)

_DELIVERY = (
    ModeAction("pick", "standby", "loaded", 10.0, frozenset({"s1"})),
    ModeAction("drop", "loaded", "standby", 10.0),
)
_TRAINING = (
    ModeAction("start_training", "standby", "training", 10.0, frozenset({"c1"})),
    ModeAction("terminate_training", "training", "standby", 10.0),
)

# type -> (kind for edge weights, operating states, actions, start state)
ROBOT_TYPES: dict[str, tuple[str, tuple[str, ...], tuple[ModeAction, ...], TSState]] = {
    "DR": ("wheeled", ("standby", "loaded"), _DELIVERY, TSState("x2", "standby")),
    "A1": (
        "quadruped",
        ("standby", "loaded", "training"),
        _DELIVERY + _TRAINING,
        TSState("s1", "standby"),
    ),
    "Wassi": ("wheeled", ("standby", "training"), _TRAINING, TSState("p2", "standby")),
}

FORMULAS: dict[str, str] = {
    "study1": (
        "<>(p6 && standby) && []((!p6 && X p6) -> loaded) && "
        "<>(p3 && standby) && []((!p3 && X p3) -> loaded)"
    ),
    "study2": (
        "<>(c7 && training && <>(c6 && training && <>(c7 && training && <>(p4 && standby)))) "
        "&& []((!p4 && X p4) -> training) && <>(p6 && standby) && "
        "[]((!p6 && X p6) -> loaded) && <>(p3 && standby) && []((!p3 && X p3) -> loaded)"
    ),
    "scenario1": (
        "<>(p3 && standby) && []((!p3 && X p3) -> loaded) && "
        "<>(p6 && standby) && []((!p6 && X p6) -> loaded) && "
        "<>(c1 && training && <>(c7 && training && <>(c6 && training && <>(p4 && standby)))) "
        "&& []((!p4 && X p4) -> training)"
    ),
    "scenario1_flat": (
        "<>(p3 && standby) && []((!p3 && X p3) -> loaded) && "
        "<>(p6 && standby) && []((!p6 && X p6) -> loaded) && "
        "<>(p4 && standby) && []((!p4 && X p4) -> training) && "
        "<>(c1 && training && <>(c7 && training && <>(c6 && training)))"
    ),
}

TEAMS: dict[str, tuple[str, ...]] = {
    "study1": ("DR", "A1"),
    "study2": ("DR", "A1", "Wassi"),
    "scenario1": ("DR", "A1", "Wassi"),
    "scenario1_flat": ("DR", "A1", "Wassi"),
}


def hospital_robot(
    robot_type: str, name: str | None = None, start: TSState | tuple[str, str] | None = None
) -> RobotModel:
    """A robot of type DR, A1 or Wassi on the hospital map (default start from the config)."""
    if robot_type not in ROBOT_TYPES:
        raise SpecificationError(f"unknown robot type {robot_type!r}; known: {list(ROBOT_TYPES)}")
    kind, modes, actions, default = ROBOT_TYPES[robot_type]
    init = TSState(*start) if start is not None else default
    ts = TransitionSystem.from_map(HOSPITAL_MAP, modes, actions, init, kind=kind)
    return RobotModel(name or robot_type, ts, kind)


def hospital_team(scenario: str) -> tuple[str, list[RobotModel]]:
    """``(formula, robots)`` for ``study1``, ``study2`` or ``scenario1``."""
    if scenario not in FORMULAS:
        raise SpecificationError(f"unknown scenario {scenario!r}; known: {list(FORMULAS)}")
    return FORMULAS[scenario], [hospital_robot(t) for t in TEAMS[scenario]]


_SPREAD: Sequence[str] = ("x2", "s1", "p2", "c9", "c2", "x1", "c10", "p5", "w2", "c1")


def replicated_team(n: int, scenario: str = "study2") -> tuple[str, list[RobotModel]]:
    """``n`` robots cycling through the scenario's robot types, starting at spread-out
    standby states (the first three at their configured starts). For the benchmark."""
    formula, _ = hospital_team(scenario)
    types = TEAMS[scenario]
    robots: list[RobotModel] = []
    for i in range(n):
        t = types[i % len(types)]
        if i < len(types):
            robots.append(hospital_robot(t, t))
        else:
            region = _SPREAD[i % len(_SPREAD)]
            robots.append(hospital_robot(t, f"{t}_{i}", TSState(region, "standby")))
    return formula, robots
