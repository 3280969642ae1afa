"""The one round loop of seed 004, as a pure stepper driven by a simulator or an agent.

A *round* is the behaviours granted together: they start at once, each runs its whole
duration (``Durations``), and the round is over when the last has finished. The
``RoundStepper`` holds the state between steps and is told what happens:
``start_round`` (what to start now: the granted requests and their skips),
``finish`` (a behaviour ended; the stepper applies its effect), ``skip_trailing``
(nothing runs, but skips are left to commit) and ``idle_until`` (time passed with
nothing to do). It never sleeps, publishes or chooses: ``policy.run_policy`` asks
a policy and finishes each behaviour at once; the multitask agent claims units,
sleeps until each end time and publishes every transition, driving the same stepper.

Behaviours of a round finish in time order (shortest first, then grant order). With
the default durations (a pick and a place take equal time) that is grant order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from teamtree.broker import PlanningError
from teamtree.hardware.resources import Access, ResourceType
from teamtree.planners.multitask.allocator import Mode, MultitaskAllocator, MultitaskState, Request
from teamtree.planners.multitask.model import BehaviourKind, distance

__all__ = [
    "OpenRound",
    "Round",
    "RoundStepper",
    "RunResult",
    "check_state",
    "round_duration",
]


@dataclass(frozen=True)
class Round:
    """A round that ran: the behaviours run together, the skips committed, when and
    how long (simulated seconds)."""

    index: int
    behaviours: tuple[str, ...]
    skipped: tuple[str, ...]
    start_s: float
    duration_s: float


@dataclass(frozen=True)
class OpenRound:
    """A round started and not yet over: its requests and each behaviour's duration."""

    index: int
    requests: tuple[Request, ...]
    skipped: tuple[str, ...]
    start_s: float
    durations: dict[str, float] = field(hash=False)

    @property
    def behaviours(self) -> tuple[str, ...]:
        """The leaves started, in grant order."""
        return tuple(r.leaf for r in self.requests)

    @property
    def finish_order(self) -> tuple[str, ...]:
        """The leaves in the order they end: shortest first, then grant order."""
        leaves = self.behaviours
        return tuple(sorted(leaves, key=lambda leaf: (self.durations[leaf], leaves.index(leaf))))

    def end_s(self, leaf: str) -> float:
        """Simulated time at which `leaf` ends."""
        return self.start_s + self.durations[leaf]

    @property
    def duration_s(self) -> float:
        """The round's length: its longest behaviour."""
        return max(self.durations.values())


@dataclass(frozen=True)
class RunResult:
    """A whole run: rounds, simulated time, skips, parallelism, and any invariant broken."""

    planner: str
    steps: tuple[Round, ...]
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
        """Behaviours that ran in a round together with another."""
        return sum(len(s.behaviours) for s in self.steps if len(s.behaviours) > 1)

    @property
    def executed(self) -> tuple[str, ...]:
        """Leaves executed, in order."""
        return tuple(b for s in self.steps for b in s.behaviours)

    def together(self) -> list[frozenset[str]]:
        """The sets of behaviours that ran in one round (size > 1)."""
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


class RoundStepper:
    """The state of one run between steps (see the module docstring).

    With ``check``, invariants are tested after every start and once a round is over,
    and skipped leaves are checked never to run; with ``strict`` too, the first
    violation raises PlanningError instead of being collected in ``violations``.
    ``max_steps`` (default ``4 * leaves + 8``) bounds the rounds: ``exhausted`` says
    when it is reached.
    """

    def __init__(
        self,
        alloc: MultitaskAllocator,
        *,
        state: MultitaskState | None = None,
        check: bool = True,
        strict: bool = False,
        max_steps: int | None = None,
    ):
        self.alloc = alloc
        self.state = alloc.initial_state() if state is None else state
        self.check = check
        self.strict = strict
        self.max_steps = max_steps if max_steps is not None else 4 * len(alloc.tree.leaves) + 8
        self.rounds: list[Round] = []
        self.violations: list[str] = []
        self.clock = 0.0
        self.travelled = 0.0
        self.current: OpenRound | None = None
        self._running: set[str] = set()
        self._start_pos = self.state.world.robot

    @property
    def complete(self) -> bool:
        """Whether the tree is done."""
        return self.alloc.is_complete(self.state)

    @property
    def exhausted(self) -> bool:
        """Whether ``max_steps`` rounds have run."""
        return len(self.rounds) >= self.max_steps

    def set_state(self, state: MultitaskState) -> None:
        """Replace the state between rounds (e.g. units a peer finished were adopted).
        Raises PlanningError while a round is open."""
        self._between_rounds("replace the state")
        self.state = state

    def idle_until(self, clock_s: float) -> None:
        """Nothing ran until `clock_s` (simulated seconds); the clock never goes back."""
        self.clock = max(self.clock, clock_s)

    def skip_trailing(self, trailing: Sequence[str]) -> None:
        """Commit skips left when nothing can run (no round is counted)."""
        self._between_rounds("commit skips")
        self.state = self.alloc.start(self.state, (), tuple(trailing))

    def start_round(self, granted: Sequence[Request]) -> OpenRound:
        """Start the granted behaviours together and commit their skips. Raises
        PlanningError when a round is open, nothing is granted or a granted leaf is
        already finished."""
        self._between_rounds("start another")
        granted = tuple(granted)
        if not granted:
            raise PlanningError("a round needs at least one granted behaviour")
        leaves = tuple(r.leaf for r in granted)
        finished = set(leaves) & self.state.finished
        if finished:
            raise PlanningError(f"granted leaves already finished: {sorted(finished)}")
        skips = tuple(dict.fromkeys(s for r in granted for s in r.skips))
        durations = {leaf: round_duration(self.alloc, self.state, [leaf]) for leaf in leaves}
        opened = OpenRound(len(self.rounds), granted, skips, self.clock, durations)
        self._start_pos = self.state.world.robot
        self.state = self.alloc.start(self.state, granted, skips)
        self._checked("start")
        self.current = opened
        self._running = set(leaves)
        return opened

    def finish(self, leaf: str) -> Round | None:
        """A behaviour of the open round ended: apply its effect. Returns the round once
        its last behaviour is done (the clock moves to its end), else None. Raises
        PlanningError for a leaf that is not running."""
        opened = self.current
        if opened is None or leaf not in self._running:
            raise PlanningError(f"{leaf!r} is not running in the open round")
        self.state = self.alloc.finish(self.state, leaf)
        self._running.discard(leaf)
        if self._running:
            return None
        self._checked("finish")
        if self.check:
            ran_skipped = set(opened.behaviours) & self.state.skipped
            if ran_skipped:
                self._violation(f"step {opened.index}: skipped {sorted(ran_skipped)} executed")
        self.travelled += distance(self._start_pos, self.state.world.robot)
        done = Round(
            opened.index, opened.behaviours, opened.skipped, opened.start_s, opened.duration_s
        )
        self.rounds.append(done)
        self.clock = opened.start_s + opened.duration_s
        self.current = None
        return done

    def result(self, planner: str) -> RunResult:
        """The run so far as a ``RunResult`` named `planner`."""
        return RunResult(
            planner=planner,
            steps=tuple(self.rounds),
            completed=self.complete,
            time_s=self.clock,
            distance_m=self.travelled,
            final=self.state,
            violations=tuple(self.violations),
        )

    def _between_rounds(self, what: str) -> None:
        if self.current is not None:
            raise PlanningError(f"round {self.current.index} is still running; cannot {what}")

    def _checked(self, when: str) -> None:
        if not self.check:
            return
        for v in check_state(self.alloc, self.state):
            self._violation(f"step {len(self.rounds)} {when}: {v}")

    def _violation(self, text: str) -> None:
        if self.strict:
            raise PlanningError(text)
        self.violations.append(text)
