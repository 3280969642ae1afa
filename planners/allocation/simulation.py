"""A pure, seeded simulation of one kitting episode (seed 001 §VI, docs/scenarios.md).

A simulated human follows (does a task from its tray) with probability P_follow, else leads:
assigns a task to the robot with probability 0.3636·P_f² − 1.356·P_f + 0.9982 (far
workspaces W2, W3 twice as likely), else does an unassigned task (near W1, W4 twice as
likely). Each leading action is wrong with probability P_error: a wrong colour (on the
next spot, or on the robot's tray). The cobot runs
Algorithm 1: it sees each human action when it ends, detects errors, updates the task and
its beliefs, re-plans (allocation + schedule MILPs, in-process) when the task changed, and
starts the first robot task of the schedule that it can start, assignments first
(``robot_pick``; an assignment waits while the human's tray slot for that workspace is
full; the schedule does not model the tray).

Only a leading action can be wrong: a human who follows does the task the robot put on its
tray (H4, "inherently correct", §IV.A), so how often the tray is empty when the human looks
decides how often a following human has to lead, and err. As in the paper and the
authors' simulation, assigning (R2) takes the robot no time (``assign_robot_time``) and
the human first walks to the table, acting from ``human_min_start`` (3 s) on, by when the
robot has stocked its tray. (With 2 s of robot time per R2 scheduled among 10-20 s R1s
and the human acting at t = 0, the tray was empty so often that a human with P_follow =
0.9 led half of its actions; at P_error = 0.8 that gave 20-31 wrong actions per run where
Table III has 1.3-10.9.)

Step by step against the authors' simulated human (their public simulation code,
``Human.action_selection``): (1) with its tray stocked it does a tray task with
probability P_follow, inherently correct; (2) else, when it has an unassigned task, it
leads: assigns (probability above, and only while more than one task is free or its tray
holds one) or does one itself; (3) else a tray task; (4) else it waits. Same here, with
these differences, two of them fixed to follow the authors: an H2 takes the human no time
(they drop the block on the robot's tray, which is at hand, and walk nowhere; this module
had it take half of t_h), and every error is a wrong colour on the next spot of a
workspace (this module also put half of the wrong placements on a spot out of order,
which their human never does; ``out_of_order_share`` keeps that variant). Left as they
are: their human, with nothing else to do, takes back a task it gave the robot (H5 then
H1); here it waits. Their erring human may also fill the spot after its own misplaced
block; here an error needs a free spot whose predecessor is placed.

Choices: time advances event by event (no clock reads); an assigned task the human ignores counts
as F3 only when one was waiting on the tray; follow evidence and error evidence are taken
when the action ends; the simulated human never uses H3, H5 or H6 (nor did the authors').
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from teamtree.broker import PlanningError
from teamtree.planners.allocation.allocation import Allocation
from teamtree.planners.allocation.beliefs import (
    BeliefConfig,
    ErrorEvidence,
    FixedBeliefs,
    FollowEvidence,
    HumanBeliefs,
)
from teamtree.planners.allocation.kitting import (
    HUMAN,
    ROBOT,
    HumanAction,
    InProgress,
    KittingScenario,
    RobotAction,
    SubtaskState,
    kitting_allocation_problem,
    kitting_schedule_problem,
    needs_correction,
    next_state,
    preds_done,
)
from teamtree.planners.allocation.planner import Plan, plan
from teamtree.planners.allocation.scheduling import Schedule
from teamtree.planners.allocation.solvers import SolveOptions, SolverName, SolverPool

_S = SubtaskState
EPS = 1e-6


@dataclass(frozen=True)
class SimulatedHuman:
    """The simplified human of §VI: following preference and error-proneness."""

    p_follow: float
    p_error: float
    far_workspaces: tuple[int, ...] = (2, 3)
    near_workspaces: tuple[int, ...] = (1, 4)
    preference_weight: int = 2
    out_of_order_share: float = 0.0
    assign_time_fraction: float = 0.0

    @property
    def p_assign(self) -> float:
        """Probability that a leading human assigns rather than does a task (docs/scenarios.md)."""
        p = self.p_follow
        return min(1.0, max(0.0, 0.3636 * p * p - 1.356 * p + 0.9982))


@dataclass(frozen=True)
class CobotConfig:
    """How the cobot plans: adaptive or fixed beliefs, solver, limits (docs/scenarios.md)."""

    adaptive: bool = True
    fixed_p_follow: float = 1.0
    fixed_p_error: float = 0.0
    beliefs: BeliefConfig = field(default_factory=BeliefConfig)
    solver: SolverName = "auto"
    allocation_options: SolveOptions = field(default_factory=lambda: SolveOptions(time_limit=3.0))
    schedule_options: SolveOptions = field(
        default_factory=lambda: SolveOptions(time_limit=4.0, mip_gap=0.004)
    )
    max_time: float = 5000.0


@dataclass(frozen=True)
class Event:
    """One action in the episode trace."""

    time: float
    agent: str
    action: str
    task: int
    correct: bool = True


class BeliefPoint(NamedTuple):
    """The cobot's view at ``time``: E[α_f], E[α_e] and the subtasks it has assigned to
    the human so far (C_r^h); a point at the start and after every change of either."""

    time: float
    alpha_f: float
    alpha_e: float
    robot_to_human: int


@dataclass(frozen=True)
class EpisodeResult:
    """Per-run metrics of §VI, the final board and the trace."""

    wrong_human_actions: int
    robot_to_human: int
    human_to_robot: int
    makespan: float
    alpha_f: float
    alpha_e: float
    pattern_correct: bool
    final_states: tuple[SubtaskState, ...]
    plans: int
    solve_time: float
    trace: tuple[Event, ...]
    series: tuple[BeliefPoint, ...] = ()  #: Figs. 16 and 17 of one episode


@dataclass
class _Pending:
    task: int
    action: HumanAction | RobotAction
    correct: bool
    end: float
    evidence_follow: FollowEvidence | None = None
    evidence_error: ErrorEvidence | None = None


def simulate_episode(
    scenario: KittingScenario,
    human: SimulatedHuman,
    cobot: CobotConfig | None = None,
    *,
    seed: int = 0,
    pool: SolverPool | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> EpisodeResult:
    """Run one episode to completion. Blocks for the in-process solves.

    ``on_plan`` is called with every plan the cobot makes (benchmarks collect the
    mid-episode problems with it). Raises ``PlanningError`` when the episode exceeds
    ``cobot.max_time`` (a stuck team).
    """
    cfg = cobot or CobotConfig()
    rng = random.Random(seed)
    beliefs: HumanBeliefs | FixedBeliefs = (
        HumanBeliefs(cfg.beliefs)
        if cfg.adaptive
        else FixedBeliefs(cfg.fixed_p_follow, cfg.fixed_p_error)
    )
    n = scenario.n
    states = [_S.INITIAL] * n
    locked: set[int] = set()
    trace: list[Event] = []
    h_pending: _Pending | None = None
    r_pending: _Pending | None = None
    h_next, r_next = scenario.human_min_start, 0.0  # the human walks to the table first
    h_wait = r_wait = False
    version = 0
    planned_version = -1
    current: Plan | None = None
    plan_time = 0.0
    warm_alloc: Allocation | None = None
    warm_sched: Schedule | None = None
    wrong = r2h = h2r = plans = 0
    solve_time = 0.0
    t = 0.0

    series: list[BeliefPoint] = []

    def mark(now: float) -> None:
        snap = beliefs.snapshot()
        point = BeliefPoint(now, snap["alpha_f"], snap["alpha_e"], r2h)
        if not series or point[1:] != series[-1][1:]:
            series.append(point)

    mark(0.0)

    def done() -> bool:
        return all(s is _S.PLACED_CORRECTLY for s in states) and h_pending is None

    while True:
        # who acts next: earliest time; on ties the human, unless it is merely waiting
        h_key = (h_next, 2 if h_wait else 0)
        r_key = (r_next, 3 if r_wait else 1)
        if h_wait and r_wait:
            raise PlanningError("kitting episode deadlocked: both agents wait")
        human_turn = h_key <= r_key
        t = h_next if human_turn else r_next
        if t > cfg.max_time:
            raise PlanningError(f"kitting episode exceeded {cfg.max_time} s")
        if human_turn:
            h_wait = False
            if h_pending is not None:
                p = h_pending
                states[p.task] = next_state(states[p.task], p.action, p.correct)
                locked.discard(p.task)
                if p.evidence_follow is not None:
                    beliefs.observe_follow(p.evidence_follow)
                if p.evidence_error is not None:
                    beliefs.observe_error(p.evidence_error)
                mark(t)
                version += 1
                h_pending = None
                if r_wait:  # the task changed: the waiting robot looks again
                    r_wait, r_next = False, t
            if all(s is _S.PLACED_CORRECTLY for s in states):
                break
            h_pending = _human_decide(scenario, human, states, locked, rng, t)
            if h_pending is None:
                h_wait, h_next = True, r_next
                if r_wait:  # let the robot see that the human waits (it may lead)
                    r_wait, r_next = False, t
            else:
                locked.add(h_pending.task)
                h_next = h_pending.end
                a = h_pending.action
                if a is HumanAction.H2:
                    h2r += 1
                if not h_pending.correct:
                    wrong += 1
                trace.append(Event(t, HUMAN, a.name, h_pending.task, h_pending.correct))
                if r_wait:
                    r_wait, r_next = False, t
            continue
        # robot's turn
        r_wait = False
        if r_pending is not None:
            p = r_pending
            if p.action is RobotAction.R2:
                states[p.task] = _S.ASSIGNED_TO_HUMAN
            elif p.action is RobotAction.R3:
                states[p.task] = next_state(states[p.task], RobotAction.R3)
            else:
                states[p.task] = _S.PLACED_CORRECTLY
            locked.discard(p.task)
            version += 1
            r_pending = None
            if h_wait:
                h_wait, h_next = False, t
        if done():
            break
        if all(s is _S.PLACED_CORRECTLY for s in states):
            r_wait, r_next = True, h_next
            continue
        in_prog = None
        if h_pending is not None:
            in_prog = InProgress(h_pending.task, h_pending.action, max(0.0, h_pending.end - t))
        if planned_version != version or current is None:
            ap = kitting_allocation_problem(
                scenario, states, beliefs.p_follow, beliefs.p_error, in_prog
            )
            current = plan(
                ap,
                lambda al, ip=in_prog: kitting_schedule_problem(scenario, states, al, ip),
                solver=cfg.solver,
                allocation_options=cfg.allocation_options,
                schedule_options=cfg.schedule_options,
                warm_allocation=warm_alloc,
                warm_schedule=warm_sched,
                pool=pool,
            )
            plans += 1
            solve_time += current.solve_time
            if on_plan is not None:
                on_plan(current)
            warm_alloc, warm_sched = current.allocation, current.schedule
            planned_version, plan_time = version, t
        action = robot_pick(scenario, states, locked, current.schedule, t - plan_time)
        if action is None and h_wait:
            action = robot_fallback(scenario, states, locked)
        if action is None:
            # nothing the robot can start now: wait for the human (or the planned start)
            r_wait, r_next = True, h_next
            continue
        r_pending = _robot_start(scenario, states, action, t)
        locked.add(r_pending.task)
        r_next = r_pending.end
        if r_pending.action is RobotAction.R2:
            r2h += 1
            mark(t)
        trace.append(Event(t, ROBOT, r_pending.action.name, r_pending.task))
        version += 1  # the lock changed what the human can do; the plan stays valid
        planned_version = version
        if h_wait:
            h_wait, h_next = False, t

    snap = beliefs.snapshot()
    pattern_ok = all(s is _S.PLACED_CORRECTLY for s in states)
    return EpisodeResult(
        wrong, r2h, h2r, t, snap["alpha_f"], snap["alpha_e"], pattern_ok, tuple(states),
        plans, solve_time, tuple(trace), tuple(series),
    )  # fmt: skip


def _weighted_choice(
    rng: random.Random, items: list[int], scenario: KittingScenario, prefer: tuple[int, ...],
    weight: int,
) -> int:  # fmt: skip
    pool = []
    for i in items:
        pool.extend([i] * (weight if scenario.subtasks[i].workspace in prefer else 1))
    return rng.choice(pool)


@dataclass(frozen=True)
class HumanDecision:
    """What the simulated human starts next: the subtask, the action, whether it is done
    right, and how long it takes."""

    task: int
    action: HumanAction
    correct: bool
    duration: float


def decide_human(
    scenario: KittingScenario,
    human: SimulatedHuman,
    states: list[SubtaskState],
    locked: set[int],
    rng: random.Random,
) -> HumanDecision | None:
    """The simulated human's next action (§VI policy of the module docstring), or ``None``
    when it has nothing to do. ``locked`` holds subtasks the robot is acting on."""
    p = _human_decide(scenario, human, states, locked, rng, 0.0)
    if p is None:
        return None
    assert isinstance(p.action, HumanAction)
    return HumanDecision(p.task, p.action, p.correct, p.end)


def _human_decide(
    scenario: KittingScenario,
    human: SimulatedHuman,
    states: list[SubtaskState],
    locked: set[int],
    rng: random.Random,
    t: float,
) -> _Pending | None:
    n = scenario.n
    tray = [
        i for i in range(n)
        if states[i] is _S.ASSIGNED_TO_HUMAN and i not in locked and preds_done(scenario, states, i)
    ]  # fmt: skip
    free = [
        i for i in range(n)
        if states[i] is _S.INITIAL and i not in locked and preds_done(scenario, states, i)
    ]  # fmt: skip
    follow = rng.random() < human.p_follow
    is_error = rng.random() < human.p_error
    if tray and (follow or not free):
        i = rng.choice(tray)
        return _Pending(i, HumanAction.H4, True, t + scenario.subtasks[i].t_human,
                        FollowEvidence.DID_ASSIGNED)  # fmt: skip
    if not free:
        return None
    refrained = FollowEvidence.REFRAINED if tray else None
    err = ErrorEvidence.ERROR if is_error else ErrorEvidence.CORRECT
    if rng.random() < human.p_assign and (len(free) > 1 or tray):
        i = _weighted_choice(rng, free, scenario, human.far_workspaces, human.preference_weight)
        dur = human.assign_time_fraction * scenario.subtasks[i].t_human
        return _Pending(i, HumanAction.H2, not is_error, t + dur,
                        FollowEvidence.ASSIGNED_TO_ROBOT, err)  # fmt: skip
    if is_error and rng.random() < human.out_of_order_share:
        ooo = [
            i for i in range(n)
            if states[i] is _S.INITIAL and i not in locked
            and not preds_done(scenario, states, i)
            and (p := scenario.predecessor(i)) is not None
            and states[p] is not _S.MISPLACED and p not in locked
        ]  # fmt: skip
        if ooo:
            i = rng.choice(ooo)
            return _Pending(i, HumanAction.H1, False, t + scenario.subtasks[i].t_human,
                            refrained, err)  # fmt: skip
    i = _weighted_choice(rng, free, scenario, human.near_workspaces, human.preference_weight)
    return _Pending(i, HumanAction.H1, not is_error, t + scenario.subtasks[i].t_human,
                    refrained, err)  # fmt: skip


def robot_pick(
    scenario: KittingScenario,
    states: list[SubtaskState],
    locked: set[int],
    sched: Schedule,
    elapsed: float,
) -> str | None:
    """The robot task of the schedule to start now (Algorithm 1, GetAction), if any.

    ``elapsed`` is the time since the schedule was planned; ``locked`` holds subtasks
    someone is acting on. Returns a schedule task id (``t<i>``, ``a<i>``, ``e<i>``), or
    ``None`` when nothing can start or the robot's next planned task is not due yet.

    Choice: while assigning takes the robot no time (``assign_robot_time`` 0), every
    assignment of the schedule that the human's tray has room for is made first, before
    the robot's next own task, as the authors' cobot makes its due assignments before its
    own actions; an assignment left for after a 10-20 s R1 would leave a following human
    with an empty tray, and so leading (and erring) instead.
    """
    if scenario.assign_robot_time <= 0:
        for tid in sched.sequence.get(ROBOT, ()):
            i = int(tid[1:])
            if (
                tid[0] == "a"
                and i not in locked
                and states[i] in (_S.INITIAL, _S.ASSIGNED_TO_ROBOT_CORRECTLY)
                and _tray_has_room(scenario, states, locked, i)
            ):
                return tid
    for tid in sched.sequence.get(ROBOT, ()):
        i = int(tid[1:])
        if i in locked:
            continue
        st = states[i]
        kind = tid[0]
        if kind == "e" and not needs_correction(st):
            continue
        if kind == "a" and (
            st not in (_S.INITIAL, _S.ASSIGNED_TO_ROBOT_CORRECTLY)
            or not _tray_has_room(scenario, states, locked, i)
        ):
            continue
        if kind == "t" and (
            st not in (_S.INITIAL, _S.ASSIGNED_TO_ROBOT_CORRECTLY, _S.ASSIGNED_TO_HUMAN)
            or not preds_done(scenario, states, i)
        ):
            continue
        if sched.start[tid] - elapsed > EPS:
            return None  # the robot's next planned task is not due yet
        return tid
    return None


def robot_fallback(
    scenario: KittingScenario, states: list[SubtaskState], locked: set[int]
) -> str | None:
    """When both would wait, the robot leads: a correction, else any subtask it can start."""
    for i in range(scenario.n):
        if i not in locked and needs_correction(states[i]):
            return f"e{i}"
    for i in range(scenario.n):
        if (
            i not in locked
            and states[i] in (_S.INITIAL, _S.ASSIGNED_TO_ROBOT_CORRECTLY, _S.ASSIGNED_TO_HUMAN)
            and preds_done(scenario, states, i)
        ):
            return f"t{i}"
    return None


def _tray_has_room(
    scenario: KittingScenario, states: list[SubtaskState], locked: set[int], i: int
) -> bool:
    """Whether the human's tray has a free slot for workspace of ``i``."""
    p = scenario.predecessor(i)
    if p is not None and states[p] is not _S.PLACED_CORRECTLY and p not in locked:
        return False  # only the next spot of a workspace goes on the tray
    w = scenario.subtasks[i].workspace
    used = sum(
        1 for j, s in enumerate(scenario.subtasks)
        if s.workspace == w and states[j] is _S.ASSIGNED_TO_HUMAN
    )  # fmt: skip
    return used < scenario.tray_slots_per_workspace


def _robot_start(
    scenario: KittingScenario, states: list[SubtaskState], tid: str, t: float
) -> _Pending:
    i = int(tid[1:])
    s = scenario.subtasks[i]
    st = states[i]
    if tid[0] == "e":
        dur = scenario.tray_return_time if st is _S.ASSIGNED_TO_ROBOT_INCORRECTLY else s.t_robot
        return _Pending(i, RobotAction.R3, True, t + dur)
    if tid[0] == "a":
        if st is _S.ASSIGNED_TO_ROBOT_CORRECTLY:  # R6 (reject), then R2
            states[i] = next_state(st, RobotAction.R6)
        return _Pending(i, RobotAction.R2, True, t + scenario.assign_robot_time)
    if st is _S.ASSIGNED_TO_HUMAN:  # R5 (cancel), then R1
        states[i] = next_state(st, RobotAction.R5)
        return _Pending(i, RobotAction.R1, True, t + s.t_robot)
    if st is _S.ASSIGNED_TO_ROBOT_CORRECTLY:
        return _Pending(i, RobotAction.R4, True, t + s.t_robot)
    return _Pending(i, RobotAction.R1, True, t + s.t_robot)
