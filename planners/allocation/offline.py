"""The offline optimal allocation of seed 001 §V.3: who places which colour when only
time counts.

Noormohammadi-Asl et al. compare the study's assignments with the allocation that
minimises completion time alone (no preference, no errors) at two human walking speeds:
at 1.2 m/s the robot gets four pink subtasks, at 0.7 m/s five pink and one green, "for
all three patterns". The paper gives no distances, no robot times and the patterns B-D
only as pictures, so this module makes its inputs explicit and reports how the answer
moves with them. Readings chosen:

- **Where each colour lies** (``NEAR``): as §IV.A's text says, pink near the robot and
  far from the human, orange the other way round, green near both and blue far from
  both. Table I prints pink and orange with the Human and Robot columns swapped; §V.3's
  own reading ("assigning pink blocks to the robot and blue and orange blocks to the
  human") needs the text's version.
- **Times at 1.2 m/s** (``ColourTimes.from_workspaces``): for each agent, a near table
  takes the mean of the authors' simulation's two short workspaces (W1, W4) and a far
  one the mean of its two long ones (W2, W3): human 6.56 / 13.53 s, robot 10.73 /
  20.07 s. The robot's times can be scaled (``robot_factor``): the real Fetch of the
  user study navigates between its tables, and the paper says only that it is slower
  than the human.
- **A slower human**: a subtask's time is ``handling`` (default 0 s) plus walking, and
  the walking part scales by 1.2 / v.
- **Optimal**: the paper's own planner at its first decision step with preference
  and performance set aside (E[α_f] = 1: a human cost is its time; E[α_e] = 0: a robot
  cost is its time): the allocation MILP of eqs. (11)-(13), least maximum load with the
  total work as tie-break (``allocation``'s ε), then the schedule of eqs. (15)-(23)
  for its makespan, every subtask initial. Eq. (14) (the robot gets a subtask it can
  start now) is left out: it paces the online planner, and time alone does not ask
  for it (with it, a pattern with no pink on a first spot hands the robot a green).
  The human is assigned its blocks by the robot as in the study (free for the robot,
  the human starting 2 s later).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from teamtree.broker import SpecificationError
from teamtree.planners.allocation.kitting import (
    DEFAULT_PATTERN,
    HUMAN,
    ROBOT,
    WORKSPACE_DURATIONS,
    Colour,
    KittingScenario,
    Subtask,
    SubtaskState,
    kitting_allocation_problem,
    kitting_schedule_problem,
)
from teamtree.planners.allocation.planner import plan
from teamtree.planners.allocation.solvers import SolveOptions, SolverName

__all__ = [
    "NEAR",
    "NORMAL_SPEED",
    "PAPER_OFFLINE",
    "SLOW_SPEED",
    "ColourTimes",
    "OfflineAllocation",
    "colour_summary",
    "offline_allocation",
    "random_pattern",
]

NORMAL_SPEED = 1.2
SLOW_SPEED = 0.7

NEAR: Mapping[str, frozenset[Colour]] = {
    HUMAN: frozenset({Colour.GREEN, Colour.ORANGE}),
    ROBOT: frozenset({Colour.GREEN, Colour.PINK}),
}
"""Colours whose table is near each agent (§IV.A's text)."""

PAPER_OFFLINE: Mapping[float, Mapping[Colour, int]] = {
    NORMAL_SPEED: {Colour.PINK: 4},
    SLOW_SPEED: {Colour.PINK: 5, Colour.GREEN: 1},
}
"""§V.3: the robot's subtasks by colour in the offline optimum, per human speed (m/s)."""


@dataclass(frozen=True)
class ColourTimes:
    """Seconds per subtask at the normal speed: (near, far) for each agent, plus the
    part of the human's time that does not depend on walking speed."""

    human: tuple[float, float]
    robot: tuple[float, float]
    handling: float = 0.0

    @classmethod
    def from_workspaces(
        cls, durations: Mapping[int, tuple[float, float]] = WORKSPACE_DURATIONS
    ) -> ColourTimes:
        """Near = mean of W1 and W4, far = mean of W2 and W3, per agent."""

        def mean(agent: int, *ws: int) -> float:
            return sum(durations[w][agent] for w in ws) / len(ws)

        return cls((mean(0, 1, 4), mean(0, 2, 3)), (mean(1, 1, 4), mean(1, 2, 3)))

    def scaled_robot(self, factor: float) -> ColourTimes:
        """The same with every robot time multiplied by ``factor``."""
        if not factor > 0:
            raise SpecificationError(f"robot factor {factor} must be positive")
        near, far = self.robot
        return ColourTimes(self.human, (near * factor, far * factor), self.handling)

    def human_time(self, colour: Colour, speed: float) -> float:
        """The human's seconds for one block of ``colour`` walking at ``speed`` m/s."""
        if not speed > 0:
            raise SpecificationError(f"human speed {speed} m/s must be positive")
        t = self.human[0] if colour in NEAR[HUMAN] else self.human[1]
        walking = max(t - self.handling, 0.0)
        return self.handling + walking * NORMAL_SPEED / speed

    def robot_time(self, colour: Colour) -> float:
        """The robot's seconds for one block of ``colour``."""
        return self.robot[0] if colour in NEAR[ROBOT] else self.robot[1]


@dataclass(frozen=True)
class OfflineAllocation:
    """The plan: who places each spot (``agents[i]`` for subtask i), its schedule's
    makespan, the team's total work, and the robot's subtasks counted by colour."""

    agents: tuple[str, ...]
    makespan: float
    work: float
    robot_colours: Mapping[Colour, int]
    solver: str

    def robot_summary(self) -> str:
        """E.g. ``"4 pink"`` or ``"5 pink + 1 green"`` (``"none"`` when the human does all)."""
        return colour_summary(self.robot_colours)


def colour_summary(counts: Mapping[Colour, int]) -> str:
    """Counts by colour in Table I's order, e.g. ``"5 pink + 1 green"``."""
    order = (Colour.PINK, Colour.GREEN, Colour.ORANGE, Colour.BLUE)
    parts = [f"{counts[c]} {c.value}" for c in order if counts.get(c)]
    return " + ".join(parts) or "none"


def random_pattern(seed: int, spots: int = 5) -> tuple[Colour, ...]:
    """A shuffled pattern with ``spots`` blocks of each colour (4 × spots subtasks)."""
    out = [c for c in Colour for _ in range(spots)]
    random.Random(seed).shuffle(out)
    return tuple(out)


def offline_allocation(
    times: ColourTimes,
    speed: float,
    pattern: Sequence[Colour] = DEFAULT_PATTERN,
    *,
    spots: int = 5,
    solver: SolverName = "auto",
    options: SolveOptions | None = None,
) -> OfflineAllocation:
    """The allocation of ``pattern`` (workspaces of ``spots`` spots filled in order)
    that the paper's planner makes on time alone for a human walking at ``speed`` m/s,
    and its schedule's makespan. Raises ``SpecificationError`` on a pattern that is not
    whole workspaces. Blocks for the solves."""
    n = len(pattern)
    if n == 0 or n % spots:
        raise SpecificationError(f"pattern has {n} colours: need whole workspaces of {spots}")
    subtasks = tuple(
        Subtask(
            i, i // spots + 1, i % spots + 1, c, times.human_time(c, speed), times.robot_time(c)
        )
        for i, c in enumerate(pattern)
    )
    scenario = KittingScenario(subtasks, spots)
    states = [SubtaskState.INITIAL] * n
    opts = options or SolveOptions(time_limit=10.0, mip_gap=0.0)
    problem = kitting_allocation_problem(scenario, states, p_follow=1.0, p_error=0.0)
    result = plan(
        replace(problem, at_least_one=()),
        lambda alloc: kitting_schedule_problem(scenario, states, alloc),
        solver=solver,
        allocation_options=opts,
        schedule_options=opts,
    )
    assignment = result.allocation.assignment
    agents = tuple(assignment[s.id] for s in subtasks)
    colours = Counter(s.colour for s, a in zip(subtasks, agents, strict=True) if a == ROBOT)
    work = sum(
        s.t_human if a == HUMAN else s.t_robot for s, a in zip(subtasks, agents, strict=True)
    )
    return OfflineAllocation(
        agents,
        round(result.schedule.makespan, 6),
        round(work, 6),
        dict(colours),
        result.allocation.result.solver if result.allocation.result else solver,
    )
