"""A pure discrete simulator of one robot executing a multitask tree (seed 004 §IV-V).

A *step* is one round: the chosen behaviours start together, each runs its whole
duration (``Durations``) and the round ends when the last finishes; the step's time
is the longest duration. This is the paper's optimality count ("the minimum number
of time steps, where one step is one full action", §IV). Event-driven rounds (a new
round when *any* resource is released, §III.C) give the same schedule here: only
picks and places ever run together (moves need the base exclusively), and they take
equal time by default.

Planners: ``greedy`` (the paper: one ``allocate`` per round), ``sequential`` (the
one-at-a-time baseline), ``lookahead`` and ``optimal`` (``search``), or any policy
``state -> requests``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from teamtree.hardware.resources import Access, ResourceType
from teamtree.planners.multitask.allocator import (
    Mode,
    MultitaskAllocator,
    MultitaskState,
    Request,
)
from teamtree.planners.multitask.model import BehaviourKind, MultitaskProblem, distance

__all__ = [
    "RoundPolicy",
    "RunResult",
    "Step",
    "check_state",
    "round_duration",
    "run_policy",
    "simulate",
]

RoundPolicy = Callable[[MultitaskAllocator, MultitaskState], Sequence[Request]]
"""Chooses the requests to grant in a state (empty: nothing can run)."""


@dataclass(frozen=True)
class Step:
    """One round: the behaviours run together, the skips committed, when and how long."""

    index: int
    behaviours: tuple[str, ...]
    skipped: tuple[str, ...]
    start_s: float
    duration_s: float


@dataclass(frozen=True)
class RunResult:
    """A whole run: steps, simulated time, skips, parallelism, and any invariant broken."""

    planner: str
    steps: tuple[Step, ...]
    completed: bool
    time_s: float
    distance_m: float
    final: MultitaskState = field(repr=False)
    violations: tuple[str, ...] = ()

    @property
    def n_steps(self) -> int:
        """Rounds taken."""
        return len(self.steps)

    @property
    def skipped(self) -> tuple[str, ...]:
        """Leaves skipped (§III.C.2), in order."""
        return tuple(s for step in self.steps for s in step.skipped)

    @property
    def parallel(self) -> int:
        """Behaviours that ran in a step together with another."""
        return sum(len(s.behaviours) for s in self.steps if len(s.behaviours) > 1)

    @property
    def executed(self) -> tuple[str, ...]:
        """Leaves executed, in order."""
        return tuple(b for s in self.steps for b in s.behaviours)

    def together(self) -> list[frozenset[str]]:
        """The sets of behaviours that ran in one step (size > 1)."""
        return [frozenset(s.behaviours) for s in self.steps if len(s.behaviours) > 1]


def round_duration(
    alloc: MultitaskAllocator, state: MultitaskState, leaves: Sequence[str]
) -> float:
    """Seconds the round takes: its longest behaviour."""
    d = alloc.problem.durations
    out = 0.0
    for leaf in leaves:
        b = alloc.behaviours[leaf]
        if b.kind is BehaviourKind.MOVE:
            t = d.move(state.world.robot, b.target)
        elif b.kind is BehaviourKind.PICK:
            t = d.pick_s
        else:
            t = d.place_s
        out = max(out, t)
    return out


def check_state(alloc: MultitaskAllocator, state: MultitaskState) -> list[str]:
    """Invariants (§III.B): no exclusive resource with two owners, no gripper with two
    objects, every held object in a gripper that is owned. Returns sentences."""
    out = list(state.resources.violations())
    seen: dict[str, str] = {}
    for obj, grip in sorted(state.world.held):
        if grip in seen:
            out.append(f"gripper {grip} holds {seen[grip]} and {obj}")
        seen[grip] = obj
        if alloc.mode is Mode.MULTITASK and not state.resources[grip].owners:
            out.append(f"gripper {grip} holds {obj} but nobody owns it")
    for r in state.resources.of_type(ResourceType.GRIPPER):
        if r.owners and r.channel is not None and r.channel.access is Access.SHARED:
            out.append(f"gripper {r.name} is shared")
    return out


def run_policy(
    alloc: MultitaskAllocator,
    policy: RoundPolicy,
    *,
    name: str = "policy",
    state: MultitaskState | None = None,
    check: bool = True,
    max_steps: int | None = None,
) -> RunResult:
    """Run rounds until the tree is done or nothing can run; never raises for a stuck tree
    (``completed`` is False). With ``check``, invariants are tested after every start
    and finish and skipped leaves are checked never to run."""
    state = alloc.initial_state() if state is None else state
    limit = max_steps if max_steps is not None else 4 * len(alloc.tree.leaves) + 8
    steps: list[Step] = []
    violations: list[str] = []
    clock = 0.0
    travelled = 0.0
    while not alloc.is_complete(state) and len(steps) < limit:
        granted = tuple(policy(alloc, state))
        skips = tuple(dict.fromkeys(s for r in granted for s in r.skips))
        if not granted:
            trailing = alloc.allocate(state).trailing
            if trailing:
                state = alloc.start(state, (), trailing)
                continue
            break
        leaves = tuple(r.leaf for r in granted)
        dt = round_duration(alloc, state, leaves)
        start_pos = state.world.robot
        state = alloc.start(state, granted, skips)
        if check:
            violations += [f"step {len(steps)} start: {v}" for v in check_state(alloc, state)]
        for leaf in leaves:
            state = alloc.finish(state, leaf)
        if check:
            violations += [f"step {len(steps)} finish: {v}" for v in check_state(alloc, state)]
            ran_skipped = set(leaves) & state.skipped
            if ran_skipped:
                violations.append(f"step {len(steps)}: skipped {sorted(ran_skipped)} executed")
        travelled += distance(start_pos, state.world.robot)
        steps.append(Step(len(steps), leaves, skips, clock, dt))
        clock += dt
    return RunResult(
        planner=name,
        steps=tuple(steps),
        completed=alloc.is_complete(state),
        time_s=clock,
        distance_m=travelled,
        final=state,
        violations=tuple(violations),
    )


def _greedy(alloc: MultitaskAllocator, state: MultitaskState) -> Sequence[Request]:
    return alloc.allocate(state).granted


def simulate(
    problem: MultitaskProblem,
    planner: str = "greedy",
    *,
    check: bool = True,
    max_expansions: int = 200_000,
) -> RunResult:
    """Run ``problem`` with ``planner``: ``greedy`` (the paper, §III.C), ``sequential``
    (one behaviour at a time, the whole robot each), ``lookahead`` (``search``,
    bounded by ``max_expansions``) or ``optimal`` (exhaustive). Raises ValueError
    for another name."""
    if planner == "greedy":
        return run_policy(MultitaskAllocator(problem), _greedy, name=planner, check=check)
    if planner == "sequential":
        alloc = MultitaskAllocator(problem, mode=Mode.SEQUENTIAL)
        return run_policy(alloc, _greedy, name=planner, check=check)
    if planner in ("lookahead", "optimal"):
        from teamtree.planners.multitask.search import exhaustive_plan, lookahead_plan, plan_policy

        alloc = MultitaskAllocator(problem)
        plan = (
            lookahead_plan(alloc, max_expansions=max_expansions)
            if planner == "lookahead"
            else exhaustive_plan(alloc)
        )
        return run_policy(alloc, plan_policy(plan), name=planner, check=check)
    raise ValueError(
        f"unknown planner {planner!r}; expected greedy, sequential, lookahead or optimal"
    )
