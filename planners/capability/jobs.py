"""Jobs 1-5 of seed 002 (§VII.A, §VII.E) as data: demanded components plus the job
layer's initial and goal relations (a box pick-and-place).

Choices: every job is a pick-and-place, so each demands one level-1/type-1
perception, manipulation and locomotion component unless it says more. Job 4 demands a
level-2/type-2 manipulator (the paper's S1 in §VII.A is taken as S2: only S2 and O2
have one, as §VII.C and Table II say). Heights are demands on the manipulator's plane y.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from teamtree.hardware import (
    DEFAULT_LEVELS,
    Component,
    Domain,
    StrengthCapability,
    TypeCapability,
    strength_capability,
    type_capability,
)

Relation = tuple[str, str, str]
"""(object, relation, object) in the job layer, e.g. ("box1", "on", "table")."""


@dataclass(frozen=True)
class JobSpec:
    """A job: what it demands (C^job / T^job) and what the world should look like."""

    name: str
    demands: tuple[Component, ...]
    initial: tuple[Relation, ...] = ()
    goal: tuple[Relation, ...] = ()
    description: str = ""

    def strength(self, n_levels: int = DEFAULT_LEVELS) -> StrengthCapability:
        """C^job (eqs. 2-5 over the demanded components)."""
        return strength_capability(self.demands, n_levels)

    def types(self) -> TypeCapability:
        """T^job, q̂^job, P̂^job (§V.A)."""
        return type_capability(self.demands)

    @property
    def objects(self) -> tuple[str, ...]:
        """Every job-layer object named in the relations, sorted."""
        names = {a for a, _, _ in self.initial + self.goal} | {
            b for _, _, b in self.initial + self.goal
        }
        return tuple(sorted(names))


def _pick_and_place(n_boxes: int, table: str = "table") -> tuple[tuple[Relation, ...], ...]:
    boxes = [f"box{i + 1}" for i in range(n_boxes)]
    fixed = ((table, "on", "ground"), ("place", "on", "ground"))
    initial = fixed + tuple((b, "on", table) for b in boxes)
    goal = fixed + tuple((b, "on", "place") for b in boxes)
    return initial, goal


def _demands(
    *,
    perception: tuple[tuple[int, int], ...] = ((1, 1),),
    manipulation: tuple[int, int] = (1, 1),
    height: int = 1,
) -> tuple[Component, ...]:
    comps = [Component(Domain.PERCEPTION, lv, ty) for lv, ty in perception]
    comps.append(Component(Domain.MANIPULATION, manipulation[0], manipulation[1], (1, height, 1)))
    comps.append(Component(Domain.LOCOMOTION, 1, 1))
    return tuple(comps)


def job_1() -> JobSpec:
    """Job 1: a level-3/type-3 (heat) vision device; only assembly can do it (§VII.A)."""
    init, goal = _pick_and_place(2)
    return JobSpec("job1", _demands(perception=((3, 3),)), init, goal, "find the safe box by heat")


def job_2() -> JobSpec:
    """Job 2: level 1/type 1 in every domain; member selection, no enhancement (§VII.A)."""
    init, goal = _pick_and_place(2)
    return JobSpec("job2", _demands(), init, goal, "pick and place, any capable robot")


def job_3(height: int) -> JobSpec:
    """Job 3: reach a box at ``height`` units (4, 8 and 9 in §VII.A)."""
    init, goal = _pick_and_place(1)
    name = {4: "job3a", 8: "job3b", 9: "job3c"}.get(height, f"job3_h{height}")
    return JobSpec(name, _demands(height=height), init, goal, f"pick from a {height}-unit table")


def job_4() -> JobSpec:
    """Job 4: a level-2/type-2 manipulator (S2 solo, O2 by assembly, §VII.A, §VII.C)."""
    init, goal = _pick_and_place(1)
    return JobSpec("job4", _demands(manipulation=(2, 2)), init, goal, "special gripper")


def job_5() -> JobSpec:
    """Job 5: 8 units high, perception types 1 and 3, type-1 manipulator (§VII.E)."""
    init, goal = _pick_and_place(2)
    return JobSpec(
        "job5",
        _demands(perception=((1, 1), (3, 3)), height=8),
        init,
        goal,
        "find the non-hot box on an 8-unit table",
    )


JOBS: Mapping[str, JobSpec] = {
    j.name: j for j in (job_1(), job_2(), job_3(4), job_3(8), job_3(9), job_4(), job_5())
}
"""Jobs 1, 2, 3(a-c), 4 and 5 by name: job1, job2, job3a, job3b, job3c, job4, job5."""
