"""Seed 003's adversarial study (Zhou et al., §VI-B, Table I): the hospital mission run
in trials with several random disturbances each, counting how often each reactive
strategy (R1-R4) is triggered, how long local and global reallocations take, and how
many trials the team completes.

The paper triggers the disturbances by hand in Gazebo and gives neither their number
per trial nor when they come, so this simulation is a reading of it (the choices):

- A trial is the Scenario 1 team (DR, A1, Wassi; ``hospital.TEAMS``) at random standby
  starts, redrawn until an offline allocation exists (the paper modifies "the initial
  configuration for each robot ... to prompt a different offline allocation result").
  Starts avoid the regions the formula names: a robot standing in a guarded region
  (p3, p4, p6) at the start of a team plan is read, in the team automaton's joint word,
  as entering it from the previous robot's last state, which the ○-guards forbid (see
  docs/ltl.md, "Limits").
- ``disturbances`` disturbances a trial, at uniform times in the offline plan's
  makespan, of kinds drawn in the proportions of Table I's counts (18 falls, 13 critical
  failures, 10 state changes, 16 blocked corridors): a fall (R1) hits the legged robot;
  a critical failure (R2) any working robot; a lost load or patient (R3) a loaded or
  training robot, which drops to standby; a blocked corridor on the path ahead (R4) a
  wheeled robot (the paper's heap only the legged robot crosses). The robot is drawn
  when the disturbance comes, among those it applies to then; one that applies to no
  robot is counted as not fired.
- Robots step through their plans in simulated time, an action taking its weight in
  seconds, and start only when the robots their plan waits for are done. A disturbance
  takes effect when its robot ends the step it is on (or at once, when it stands).
- R1 is the recovery stand: ``recovery_s`` seconds, no planner. R2 is a global
  reallocation with the robot failed. R3 is Alg. 1 and R4 Alg. 2, each going global
  when it finds no local plan. A blocked corridor is blocked for every wheeled robot;
  one that meets it later on its own plan triggers R4 itself.
- A global reallocation lets every moving robot end its step, then synchronises on
  everyone's trace since the last global one (``reallocate_global``).
- A trial succeeds when every robot still working has finished its plan and the joint
  trace satisfies the formula (``check_trace``); it fails when a global reallocation
  finds no plan (the reason is the planner's).

Reallocation times are the planners' computation only (the paper's global times also
hold the team's communication). Pure: the clock is passed in by the caller.
"""

from __future__ import annotations

import contextlib
import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from teamtree.broker import InfeasibleError, PlanningError, SpecificationError
from teamtree.planners.ltl.hospital import FORMULAS, HOSPITAL_MAP, TEAMS, hospital_robot
from teamtree.planners.ltl.model import TSState
from teamtree.planners.ltl.realloc import (
    EnvironmentChange,
    apply_change,
    block_edge,
    reallocate_environment_change,
    reallocate_global,
    reallocate_state_change,
)
from teamtree.planners.ltl.syntax import atoms, parse
from teamtree.planners.ltl.team import Mission, RobotPlan, TeamPlan
from teamtree.planners.ltl.trace import check_trace

__all__ = [
    "KINDS",
    "PAPER_SUCCESS",
    "PAPER_TABLE_I",
    "STRATEGIES",
    "StudyRow",
    "TrialResult",
    "Trigger",
    "run_trial",
    "study_rows",
]

STRATEGIES = ("R1", "R2", "R3", "R4")
#: Table I: triggered times, local and global reallocation time (s); None: not given
PAPER_TABLE_I: dict[str, tuple[int, float | None, float | None]] = {
    "R1": (18, None, None),
    "R2": (13, None, 3.31),
    "R3": (10, 0.023, 2.93),
    "R4": (16, 0.018, 3.42),
}
PAPER_SUCCESS = 0.8  #: "an 80% success rate of completing the global mission"
#: disturbance kind -> the strategy it triggers
KINDS = {"fall": "R1", "failure": "R2", "state_change": "R3", "blocked": "R4"}


@dataclass(frozen=True)
class Trigger:
    """One reactive strategy run: when (simulated s), by whom, how it was answered
    (``none`` for R1, ``local``, ``global``, or ``impossible``) and in how many seconds."""

    at_s: float
    robot: str
    strategy: str
    scope: str
    took_s: float
    detail: str


@dataclass(frozen=True)
class TrialResult:
    """One trial: its seed, starts, triggers, and how it ended."""

    trial: int
    seed: int
    starts: dict[str, str]
    success: bool
    reason: str
    triggers: tuple[Trigger, ...]
    not_fired: int
    finished_s: float
    offline_s: float
    failed_robots: tuple[str, ...] = ()  #: the robots a critical failure took out
    #: each robot's executed trace, one segment per team plan (as ``check_trace`` reads)
    segments: dict[str, list[list[TSState]]] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyRow:
    """Table I's column for one strategy, ours beside the paper's."""

    strategy: str
    triggered: int
    local_s: float | None
    global_s: float | None
    paper_triggered: int
    paper_local_s: float | None
    paper_global_s: float | None


@dataclass
class _Robot:
    name: str
    legged: bool
    plan: RobotPlan
    step: int = 0  #: index in plan.states of where the robot stands
    plan_trace: list[TSState] = field(default_factory=list)  #: since the plan started
    segment: list[TSState] = field(default_factory=list)  #: since the last global one
    segments: list[list[TSState]] = field(default_factory=list)  #: closed segments
    busy_until: float | None = None  #: end of the step (or the stand) under way
    stepping: bool = False  #: busy with a step of its plan, not a recovery stand
    failed: bool = False
    pending: list[str] = field(default_factory=list)  #: disturbances waiting for a step's end

    def adopt(self, plan: RobotPlan) -> None:
        self.plan, self.step, self.plan_trace = plan, 0, [plan.states[0]]

    @property
    def here(self) -> TSState:
        return self.plan_trace[-1]

    @property
    def finished(self) -> bool:
        return self.failed or self.step >= len(self.plan.actions)


def _starts(rng: random.Random, types: Sequence[str], formula: str) -> dict[str, str]:
    named = atoms(parse(formula))
    regions = sorted(set(HOSPITAL_MAP.regions) - named)
    return {t: rng.choice(regions) for t in types}


class _Trial:
    """One trial's simulation (see the module docstring)."""

    def __init__(
        self,
        rng: random.Random,
        mission: Mission,
        plan: TeamPlan,
        clock: Callable[[], float],
        recovery_s: float,
    ):
        self.rng, self.mission, self.team_plan, self.clock = rng, mission, plan, clock
        self.recovery_s = recovery_s
        self.robots = {
            n: _Robot(n, mission.robots[n].kind == "quadruped", plan[n]) for n in plan.plans
        }
        for r in self.robots.values():
            r.adopt(plan[r.name])
            r.segment = [r.here]
        self.now = 0.0
        self.triggers: list[Trigger] = []
        self.not_fired = 0
        self.outcome: str | None = None  #: the reason a global reallocation gave up

    # -- stepping ----------------------------------------------------------------------

    def _waiting(self, r: _Robot) -> bool:
        return any(not self.robots[w].finished for w in r.plan.waits_for)

    def _start_steps(self) -> None:
        for r in self.robots.values():
            if r.busy_until is not None or r.finished or self._waiting(r):
                continue
            a, b = r.plan.states[r.step], r.plan.states[r.step + 1]
            if self.mission.robots[r.name].ts.transition(a, b) is None:  # meets a block
                self._blocked(r, None)
                if self.outcome is not None:
                    return
                continue
            r.busy_until, r.stepping = self.now + r.plan.weights[r.step], True

    def _end_step(self, r: _Robot) -> None:
        r.busy_until = None
        if not r.stepping:  # a recovery stand: the robot is where it was
            return
        r.stepping = False
        r.step += 1
        r.plan_trace.append(r.plan.states[r.step])
        r.segment.append(r.plan.states[r.step])

    def run(self, disturbances: Sequence[tuple[float, str, str]]) -> None:
        """Simulate until nobody moves; ``disturbances``: ``(at_s, kind, robot)``, the
        robot drawn when it comes where ``robot`` is empty."""
        queue = list(disturbances)
        heapq.heapify(queue)
        while self.outcome is None:
            self._start_steps()
            if self.outcome is not None:
                return
            moving = [r for r in self.robots.values() if r.busy_until is not None]
            next_step = min((r.busy_until for r in moving), default=None)  # type: ignore[type-var]
            if queue and (next_step is None or queue[0][0] <= next_step):
                at, kind, name = heapq.heappop(queue)
                self.now = max(self.now, at)
                targets = [
                    r
                    for r in self.robots.values()
                    if kind in self._applicable(r) and name in ("", r.name)
                ]
                if not targets:
                    self.not_fired += 1
                    continue
                robot = self.rng.choice(targets)
                if robot.busy_until is None:
                    self._disturb(robot, kind)
                else:
                    robot.pending.append(kind)
                continue
            if next_step is None:
                return  # nobody moves and nothing else comes: the trial is over
            self.now = next_step
            for r in [r for r in moving if r.busy_until == next_step]:
                self._end_step(r)
                while r.pending and self.outcome is None and r.busy_until is None:
                    self._disturb(r, r.pending.pop(0))

    # -- disturbances ------------------------------------------------------------------

    def _applicable(self, r: _Robot) -> list[str]:
        if r.failed:
            return []
        kinds = ["failure"]
        if r.legged:
            kinds.append("fall")
        if not r.finished and r.here.mode != "standby":
            kinds.append("state_change")
        if not r.legged and not r.finished and self._edge_ahead(r) is not None:
            kinds.append("blocked")
        return kinds

    def _edge_ahead(self, r: _Robot) -> tuple[str, str] | None:
        states = r.plan.states
        for i in range(r.step, len(states) - 1):
            if states[i].region != states[i + 1].region:
                return states[i].region, states[i + 1].region
        return None

    def _disturb(self, r: _Robot, kind: str) -> None:
        if kind not in self._applicable(r):  # no longer, now that its step is over
            self.not_fired += 1
            return
        if kind == "fall":
            self.triggers.append(Trigger(self.now, r.name, "R1", "none", 0.0, "recovery stand"))
            r.busy_until, r.stepping = self.now + self.recovery_s, False
        elif kind == "failure":
            self._global(r, "R2", "critical failure", failed=[r.name])
        elif kind == "state_change":
            self._state_change(r)
        else:
            self._blocked(r, self._edge_ahead(r))

    def _state_change(self, r: _Robot) -> None:
        lost = TSState(r.here.region, "standby")
        executed = [*r.plan_trace, lost]
        r.segment.append(lost)
        t0 = self.clock()
        try:
            new = reallocate_state_change(self.mission, r.plan, executed)
        except (InfeasibleError, PlanningError) as exc:
            took = self.clock() - t0
            r.plan_trace = executed
            self._global(r, "R3", f"lost its {r.here.mode} at {lost.region}: {exc}", tried=took)
            return
        took = self.clock() - t0
        self.triggers.append(
            Trigger(self.now, r.name, "R3", "local", took, f"lost at {lost.region}")
        )
        r.adopt(new)

    def _blocked(self, r: _Robot, edge: tuple[str, str] | None) -> None:
        change = EnvironmentChange()
        what = "met a corridor blocked earlier"
        if edge is not None:
            change = block_edge(self.mission, r.name, *edge)
            what = f"corridor {edge[0]}-{edge[1]} blocked"
            for other in self.robots.values():
                if other is not r and not other.legged and not other.failed:
                    with contextlib.suppress(SpecificationError):  # no such corridor
                        apply_change(
                            self.mission, other.name, block_edge(self.mission, other.name, *edge)
                        )
        t0 = self.clock()
        try:
            new, _ = reallocate_environment_change(self.mission, r.plan, r.plan_trace, change)
        except (InfeasibleError, PlanningError) as exc:
            self._global(r, "R4", f"{what}: {exc}", tried=self.clock() - t0)
            return
        took = self.clock() - t0
        self.triggers.append(Trigger(self.now, r.name, "R4", "local", took, what))
        r.adopt(new)

    def _global(
        self, r: _Robot, strategy: str, why: str, *, failed: Sequence[str] = (), tried: float = 0.0
    ) -> None:
        for other in self.robots.values():  # every moving robot ends its step first
            if other.busy_until is not None:
                self._end_step(other)
        executed = {n: list(x.segment) for n, x in self.robots.items()}
        t0 = self.clock()
        try:
            new = reallocate_global(self.mission, self.team_plan, executed, failed=failed)
        except (InfeasibleError, SpecificationError) as exc:
            took = self.clock() - t0
            self.triggers.append(Trigger(self.now, r.name, strategy, "impossible", took, why))
            self.outcome = f"{strategy} on {r.name} ({why}): {exc}"
            return
        took = self.clock() - t0
        self.triggers.append(Trigger(self.now, r.name, strategy, "global", took, why))
        self.team_plan = new
        for name, x in self.robots.items():
            x.failed = name in self.mission.failed
            x.segments.append(x.segment)
            x.adopt(new[name])
            x.segment = [x.here]
            if x.failed:
                x.pending.clear()

    # -- the verdict -------------------------------------------------------------------

    def verdict(self) -> tuple[bool, str]:
        if self.outcome is not None:
            return False, self.outcome
        stuck = [r.name for r in self.robots.values() if not r.finished]
        if stuck:
            return False, f"stuck: {', '.join(stuck)} never finished its plan"
        segments = {n: [*r.segments, r.segment] for n, r in self.robots.items()}
        systems = {n: self.mission.robots[n].ts for n in self.robots}
        found = check_trace(self.mission.automaton, segments, systems=systems)
        return found.satisfied, found.reason


def run_trial(
    trial: int,
    seed: int,
    clock: Callable[[], float],
    *,
    disturbances: int = 6,
    scenario: str = "scenario1",
    recovery_s: float = 5.0,
    script: Sequence[tuple[float, str, str]] | None = None,
    starts: dict[str, str] | None = None,
) -> TrialResult:
    """One trial of the study, seeded by ``seed`` (see the module docstring).

    ``script`` replaces the random disturbances by ``(at_s, kind, robot)`` entries
    (kinds: ``KINDS``; an empty robot is drawn as for a random one); ``starts`` fixes
    the robots' start regions."""
    if disturbances < 0:
        raise SpecificationError(f"disturbances must be ≥ 0, not {disturbances}")
    rng = random.Random(seed)
    types = TEAMS[scenario]
    fixed = dict(starts) if starts else None
    for _ in range(1 if fixed else 50):
        starts = fixed or _starts(rng, types, FORMULAS[scenario])
        robots = [hospital_robot(t, t, (starts[t], "standby")) for t in types]
        t0 = clock()
        try:
            mission = Mission(FORMULAS[scenario], robots)
            plan = mission.allocate()
        except InfeasibleError:
            continue
        offline = clock() - t0
        break
    else:
        raise InfeasibleError(f"no start of {list(types)} on the map gave an allocation")
    horizon = max(plan.makespan, 1.0)
    kinds, weights = zip(*((k, PAPER_TABLE_I[s][0]) for k, s in KINDS.items()), strict=True)
    times = [
        (rng.uniform(0.0, horizon), rng.choices(kinds, weights)[0], "") for _ in range(disturbances)
    ]
    if script is not None:
        unknown = sorted({k for _, k, _ in script} - set(KINDS))
        if unknown:
            raise SpecificationError(f"unknown disturbance kinds {unknown}; known: {list(KINDS)}")
        times = list(script)
    sim = _Trial(rng, mission, plan, clock, recovery_s)
    sim.run(times)
    ok, reason = sim.verdict()
    return TrialResult(
        trial,
        seed,
        starts,
        ok,
        reason,
        tuple(sim.triggers),
        sim.not_fired,
        sim.now,
        offline,
        tuple(sorted(mission.failed)),
        {n: [*r.segments, r.segment] for n, r in sim.robots.items()},
    )


def study_rows(results: Sequence[TrialResult]) -> list[StudyRow]:
    """Table I from the trials: per strategy, how often triggered and the mean local
    and global reallocation time (None where there was none)."""
    rows = []
    for s in STRATEGIES:
        mine = [t for r in results for t in r.triggers if t.strategy == s]
        local = [t.took_s for t in mine if t.scope == "local"]
        glob = [t.took_s for t in mine if t.scope in ("global", "impossible")]
        paper = PAPER_TABLE_I[s]
        rows.append(
            StudyRow(
                s,
                len(mine),
                sum(local) / len(local) if local else None,
                sum(glob) / len(glob) if glob else None,
                *paper,
            )
        )
    return rows
