"""The kitting scenario of seed 001 as data and pure logic (§IV.A, Table II, Fig. 6).

Twenty subtasks fill 4 workspaces × 5 spots; within a workspace the spots are filled in
order (chains 0→…→4, 5→…→9, 10→…→14, 15→…→19); subtask i is workspace i//5+1, spot
i%5+1. Durations are per workspace, from the authors' simulation code. The pattern of
colours is not given numerically anywhere; :data:`DEFAULT_PATTERN` is our choice, five
blocks of each colour (green, pink, orange, blue as in Table I).

This module also builds the scenario forms of the MILPs: the allocation costs of eqs.
(10)-(14) and τ_new with the schedule constraints of eqs. (15)-(23).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from teamtree.broker import SpecificationError
from teamtree.planners.allocation.allocation import Allocation, AllocationProblem
from teamtree.planners.allocation.scheduling import ScheduleProblem, ScheduleTask

HUMAN = "human"
ROBOT = "robot"


class Colour(enum.Enum):
    """Block colours (Table I: where each colour lies for the human and the robot)."""

    GREEN = "green"  # close to both
    PINK = "pink"  # close to the human, far from the robot
    ORANGE = "orange"  # far from the human, close to the robot
    BLUE = "blue"  # far from both


_G, _P, _O, _B = Colour.GREEN, Colour.PINK, Colour.ORANGE, Colour.BLUE
DEFAULT_PATTERN: tuple[Colour, ...] = (
    _G, _P, _O, _B, _G,
    _P, _B, _O, _G, _P,
    _O, _G, _B, _P, _O,
    _B, _O, _P, _G, _B,
)  # fmt: skip
"""Our default pattern: W1..W4 row by row, five of each colour."""

WORKSPACE_DURATIONS: Mapping[int, tuple[float, float]] = {
    1: (5.567, 11.982),
    2: (13.515, 20.087),
    3: (13.552, 20.044),
    4: (7.547, 9.479),
}
"""Nominal (human t_h, robot t_r) seconds per workspace, from the authors' simulation code."""


class SubtaskState(enum.Enum):
    """States of one subtask, Fig. 6.

    INITIAL                         nobody has touched it
    ASSIGNED_TO_HUMAN               the robot put the block on the human's tray (R2)
    ASSIGNED_TO_ROBOT_CORRECTLY     the human put the right block on the robot's tray (H2)
    ASSIGNED_TO_ROBOT_INCORRECTLY   the human put a wrong block on the robot's tray (H2, error)
    MISPLACED                       a wrong block (colour or order) lies on the spot (H1, error)
    PLACED_CORRECTLY                done; the goal state of every subtask
    """

    INITIAL = "initial"
    ASSIGNED_TO_HUMAN = "assigned_to_human"
    ASSIGNED_TO_ROBOT_CORRECTLY = "assigned_to_robot_correctly"
    ASSIGNED_TO_ROBOT_INCORRECTLY = "assigned_to_robot_incorrectly"
    MISPLACED = "misplaced"
    PLACED_CORRECTLY = "placed_correctly"


class HumanAction(enum.Enum):
    """The human's actions, Table II."""

    H1 = "select a task for themselves"
    H2 = "assign a task to the robot"
    H3 = "return a block from the shared workspace"
    H4 = "perform a task assigned by the robot"
    H5 = "cancel a task assigned to the robot"
    H6 = "reject a task assigned by the robot"


class RobotAction(enum.Enum):
    """The robot's actions, Table II."""

    R1 = "select a task for itself"
    R2 = "assign a task to the human"
    R3 = "return a wrong block from the shared workspace"
    R4 = "perform a correct task assigned by the human"
    R5 = "cancel a task assigned to the human"
    R6 = "reject a task assigned by the human"


KittingAction = HumanAction | RobotAction
"""A human's or the robot's action in the kitting subtask's state machine (Table II)."""
_S = SubtaskState
_H = HumanAction
_R = RobotAction

TRANSITIONS: Mapping[tuple[SubtaskState, KittingAction, bool], SubtaskState] = {
    (_S.INITIAL, _H.H1, True): _S.PLACED_CORRECTLY,
    (_S.INITIAL, _H.H1, False): _S.MISPLACED,
    (_S.INITIAL, _H.H2, True): _S.ASSIGNED_TO_ROBOT_CORRECTLY,
    (_S.INITIAL, _H.H2, False): _S.ASSIGNED_TO_ROBOT_INCORRECTLY,
    (_S.INITIAL, _R.R1, True): _S.PLACED_CORRECTLY,
    (_S.INITIAL, _R.R2, True): _S.ASSIGNED_TO_HUMAN,
    (_S.ASSIGNED_TO_HUMAN, _H.H4, True): _S.PLACED_CORRECTLY,
    (_S.ASSIGNED_TO_HUMAN, _H.H6, True): _S.INITIAL,
    (_S.ASSIGNED_TO_HUMAN, _R.R5, True): _S.INITIAL,
    (_S.ASSIGNED_TO_ROBOT_CORRECTLY, _R.R4, True): _S.PLACED_CORRECTLY,
    (_S.ASSIGNED_TO_ROBOT_CORRECTLY, _R.R6, True): _S.INITIAL,
    (_S.ASSIGNED_TO_ROBOT_CORRECTLY, _H.H5, True): _S.INITIAL,
    (_S.ASSIGNED_TO_ROBOT_INCORRECTLY, _R.R3, True): _S.INITIAL,
    (_S.ASSIGNED_TO_ROBOT_INCORRECTLY, _H.H5, True): _S.INITIAL,
    (_S.MISPLACED, _R.R3, True): _S.INITIAL,
    (_S.MISPLACED, _H.H3, True): _S.INITIAL,
    (_S.PLACED_CORRECTLY, _H.H3, True): _S.INITIAL,
}
"""The subtask state graph of Fig. 6: (state, action, action correct) → next state.

Choices: R6 (rejecting the human's assignment) returns the subtask to INITIAL, from where
the robot may assign it (R2); H3 may also take a correctly placed block away.
"""


def next_state(state: SubtaskState, action: KittingAction, correct: bool = True) -> SubtaskState:
    """The state after ``action`` (Fig. 6); raises ``SpecificationError`` if not allowed."""
    try:
        return TRANSITIONS[state, action, correct]
    except KeyError:
        raise SpecificationError(
            f"action {action.name} ({'correct' if correct else 'wrong'}) is not possible "
            f"in state {state.value}"
        ) from None


def needs_correction(state: SubtaskState) -> bool:
    """Whether the robot must correct a human error first (τ^e of Fig. 9)."""
    return state in (_S.MISPLACED, _S.ASSIGNED_TO_ROBOT_INCORRECTLY)


@dataclass(frozen=True)
class Subtask:
    """One spot to fill: its index, workspace (1-4), spot (1-5), colour and durations."""

    index: int
    workspace: int
    spot: int
    colour: Colour
    t_human: float
    t_robot: float

    @property
    def id(self) -> str:
        """The task id used in the MILPs (``t<index>``)."""
        return f"t{self.index}"


@dataclass(frozen=True)
class KittingScenario:
    """The kitting task: subtasks, in-order precedence, action times and penalties.

    ``c_h`` is the paper's c_f and the human-side c_v (eq. 12), ``c_r`` the robot-side
    c_v (eq. 13), ``c_e`` the error penalty. Defaults follow docs/scenarios.md: c_h =
    1.5·(max t_h + max t_r), c_e = 2·c_h. Choice: c_r defaults to c_h, as eq. (10)
    uses one c_v for both sides. The human's tray holds ``tray_slots_per_workspace``
    blocks per workspace (one, as in the authors' simulation).

    Assigning a subtask to the human (R2, and R6 before it when the human had given it
    to the robot) takes the robot ``assign_robot_time`` (0: "we assume that rejecting the
    human agent's assignments and allocating tasks to the human takes zero seconds",
    §IV.B, and the authors' simulation moves the block at once); the human starts the
    subtask at least ``assign_time`` (2 s, the authors' scheduler) after the assignment
    began. Choice: returning a wrong block from the robot's tray keeps its 2 s of robot
    time (``tray_return_time``, docs/scenarios.md), which the paper does not waive.
    """

    subtasks: tuple[Subtask, ...]
    spots_per_workspace: int = 5
    assign_time: float = 2.0
    assign_robot_time: float = 0.0
    tray_return_time: float = 2.0
    human_min_start: float = 3.0
    tray_slots_per_workspace: int = 1
    c_h: float | None = None
    c_e: float | None = None
    c_r: float | None = None

    @classmethod
    def default(
        cls, pattern: Sequence[Colour] = DEFAULT_PATTERN, **kwargs: float
    ) -> KittingScenario:
        """The 20-subtask scenario with the given colour pattern."""
        return cls.build(4, 5, pattern=pattern, **kwargs)

    @classmethod
    def build(
        cls,
        workspaces: int,
        spots: int,
        *,
        pattern: Sequence[Colour] | None = None,
        durations: Mapping[int, tuple[float, float]] | None = None,
        **kwargs: float,
    ) -> KittingScenario:
        """A scenario of ``workspaces × spots`` subtasks (durations cycle over W1-W4)."""
        n = workspaces * spots
        durs = durations or WORKSPACE_DURATIONS
        if pattern is None:
            colours = list(Colour)
            pattern = [colours[(i * 7 + i // spots) % 4] for i in range(n)]
        if len(pattern) != n:
            raise SpecificationError(f"pattern has {len(pattern)} colours, need {n}")
        subs = []
        for i in range(n):
            w = i // spots + 1
            th, tr = durs[(w - 1) % len(durs) + 1]
            subs.append(Subtask(i, w, i % spots + 1, pattern[i], th, tr))
        return cls(tuple(subs), spots, **kwargs)

    def __post_init__(self) -> None:
        th = max(s.t_human for s in self.subtasks)
        tr = max(s.t_robot for s in self.subtasks)
        ch = 1.5 * (th + tr) if self.c_h is None else self.c_h
        object.__setattr__(self, "c_h", ch)
        object.__setattr__(self, "c_e", 2.0 * ch if self.c_e is None else self.c_e)
        object.__setattr__(self, "c_r", ch if self.c_r is None else self.c_r)

    @property
    def n(self) -> int:
        """Number of subtasks."""
        return len(self.subtasks)

    def predecessor(self, i: int) -> int | None:
        """The spot before ``i`` in its workspace, or ``None`` for spot 1."""
        return None if i % self.spots_per_workspace == 0 else i - 1

    @property
    def precedence(self) -> tuple[tuple[int, int], ...]:
        """All in-order pairs (i, i+1) within workspaces (Fig. 8)."""
        return tuple((p, i) for i in range(self.n) if (p := self.predecessor(i)) is not None)


def preds_done(scenario: KittingScenario, states: Sequence[SubtaskState], i: int) -> bool:
    """Whether every earlier spot of ``i``'s workspace is placed correctly."""
    p = scenario.predecessor(i)
    return p is None or states[p] is SubtaskState.PLACED_CORRECTLY


@dataclass(frozen=True)
class InProgress:
    """A human action the robot sees under way: the subtask, its kind and the time left."""

    task: int
    action: HumanAction
    remaining: float


def kitting_allocation_problem(
    scenario: KittingScenario,
    states: Sequence[SubtaskState],
    p_follow: float,
    p_error: float,
    in_progress: InProgress | None = None,
) -> AllocationProblem:
    """Eqs. (10)-(14): costs for human and robot, and the robot's startable-task row.

    τ holds every subtask not placed correctly and not under way by the human (a subtask
    the human is carrying to the robot's tray counts as assigned to the robot).
    Human cost: t_h·p_f + c_f(1 − p_f) + c_h·x^robot; robot: t_r + p_e·c_e + c_r·x^human.
    Eq. (14) is dropped while a human error waits for correction (the robot has work).
    """
    busy = in_progress.task if in_progress and in_progress.action is not _H.H2 else None
    eff = list(states)
    if in_progress and in_progress.action is _H.H2:
        eff[in_progress.task] = _S.ASSIGNED_TO_ROBOT_CORRECTLY
    tau = [i for i in range(scenario.n) if eff[i] is not _S.PLACED_CORRECTLY and i != busy]
    cost = np.empty((len(tau), 2))
    for k, i in enumerate(tau):
        s = scenario.subtasks[i]
        x_robot = 1.0 if eff[i] is _S.ASSIGNED_TO_ROBOT_CORRECTLY else 0.0
        x_human = 1.0 if eff[i] is _S.ASSIGNED_TO_HUMAN else 0.0
        cost[k, 0] = s.t_human * p_follow + scenario.c_h * (1 - p_follow) + scenario.c_h * x_robot
        cost[k, 1] = s.t_robot + p_error * scenario.c_e + scenario.c_r * x_human
    at_least: tuple[tuple[str, frozenset[str]], ...] = ()
    if not any(needs_correction(eff[i]) for i in tau):
        startable = [
            i for i in tau
            if eff[i] in (_S.INITIAL, _S.ASSIGNED_TO_ROBOT_CORRECTLY, _S.ASSIGNED_TO_HUMAN)
            and preds_done(scenario, eff, i)
            and not (in_progress and in_progress.task == i)
        ]  # fmt: skip
        u = [i for i in startable if eff[i] is not _S.ASSIGNED_TO_HUMAN] or startable
        if u:
            at_least = ((ROBOT, frozenset(scenario.subtasks[i].id for i in u)),)
    return AllocationProblem(
        tuple(scenario.subtasks[i].id for i in tau), (HUMAN, ROBOT), cost, at_least
    )


def kitting_schedule_problem(
    scenario: KittingScenario,
    states: Sequence[SubtaskState],
    allocation: Allocation,
    in_progress: InProgress | None = None,
) -> ScheduleProblem:
    """τ_new and the constraints of eqs. (15)-(23) for an allocation.

    τ_new = τ ∪ τ^a ∪ τ^e: ``t<i>`` is subtask i done by its agent; ``a<i>`` (robot,
    ``assign_robot_time``, with a lag so that the human starts i ``assign_time`` after it
    began) puts the block on the human's tray before the human does i (not needed
    when it is already there); ``e<i>`` (robot) corrects a human error on i first — a
    misplaced block costs t_r, a wrong block on the robot's tray ``tray_return_time``.
    Human subtasks start no earlier than ``human_min_start``; the human is free after the
    action under way. V of eqs. (21)-(22) is every robot task; the scheduler keeps those
    that can start at 0. Choice: a subtask the human is carrying to the robot's tray is
    planned as the robot's with a release at the end of that action.
    """
    eff = list(states)
    busy_release: dict[int, float] = {}
    human_free = 0.0
    if in_progress is not None:
        human_free = in_progress.remaining
        if in_progress.action is _H.H2:
            eff[in_progress.task] = _S.ASSIGNED_TO_ROBOT_CORRECTLY
        else:
            busy_release[in_progress.task] = in_progress.remaining
    tasks: list[ScheduleTask] = []
    prec: list[tuple[str, str]] = []
    inprog_h2 = in_progress.task if in_progress and in_progress.action is _H.H2 else None
    for tid, agent in allocation.assignment.items():
        i = int(tid[1:])
        s = scenario.subtasks[i]
        if needs_correction(eff[i]):
            dur = (
                scenario.tray_return_time
                if eff[i] is _S.ASSIGNED_TO_ROBOT_INCORRECTLY
                else s.t_robot
            )
            tasks.append(ScheduleTask(f"e{i}", ROBOT, dur))
            prec.append((f"e{i}", tid))
        if agent == HUMAN:
            tasks.append(ScheduleTask(tid, HUMAN, s.t_human, scenario.human_min_start))
            if eff[i] is not _S.ASSIGNED_TO_HUMAN:
                rel = in_progress.remaining if i == inprog_h2 and in_progress else 0.0
                d = scenario.assign_robot_time
                lag = max(0.0, scenario.assign_time - d)
                tasks.append(ScheduleTask(f"a{i}", ROBOT, d, rel, lag=lag))
                prec.append((f"a{i}", tid))
        else:
            rel = in_progress.remaining if i == inprog_h2 and in_progress else 0.0
            tasks.append(ScheduleTask(tid, ROBOT, s.t_robot, rel))
    present = set(allocation.assignment)
    final: list[ScheduleTask] = []
    for t in tasks:
        if t.id.startswith("t"):
            i = int(t.id[1:])
            p = scenario.predecessor(i)
            if p is not None and p in busy_release:
                t = ScheduleTask(t.id, t.agent, t.duration, max(t.release, busy_release[p]))
            if p is not None and f"t{p}" in present:
                prec.append((f"t{p}", t.id))
        final.append(t)
    robot_tasks = frozenset(t.id for t in final if t.agent == ROBOT)
    return ScheduleProblem(
        tuple(final),
        tuple(prec),
        (robot_tasks,) if robot_tasks else (),
        {HUMAN: human_free, ROBOT: 0.0},
    )


def human_robot_costs(
    t_human: Sequence[float],
    t_robots: Sequence[Sequence[float]],
    p_follow: float,
    p_error: float,
    c_h: float,
    c_e: float,
) -> np.ndarray:
    """Eq. (10) for one human and several robots: column 0 the human, then one per robot.

    The n-agent reading of the scenario form (no prior assignments, so no c_v terms).
    """
    th = np.asarray(t_human, dtype=float)
    cols = [th * p_follow + c_h * (1 - p_follow)]
    for tr in t_robots:
        cols.append(np.asarray(tr, dtype=float) + p_error * c_e)
    return np.stack(cols, axis=1)
