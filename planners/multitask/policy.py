"""Running a multitask tree round by round under a policy that picks each round's
requests: the one loop the simulator (``simulate``) and the planners' replays
(``search.plan_policy``) share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from teamtree.planners.multitask.allocator import MultitaskAllocator, MultitaskState, Request
from teamtree.planners.multitask.rounds import RoundStepper, RunResult

__all__ = ["RoundPolicy", "run_policy"]

RoundPolicy = Callable[[MultitaskAllocator, MultitaskState], Sequence[Request]]
"""Chooses the requests to grant in a state (empty: nothing can run)."""


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
    and finish and skipped leaves are checked never to run. Drives a ``RoundStepper``,
    finishing each round's behaviours at once in time order."""
    stepper = RoundStepper(alloc, state=state, check=check, max_steps=max_steps)
    while not stepper.complete and not stepper.exhausted:
        granted = tuple(policy(alloc, stepper.state))
        if not granted:
            trailing = alloc.allocate(stepper.state).trailing
            if trailing:
                stepper.skip_trailing(trailing)
                continue
            break
        opened = stepper.start_round(granted)
        for leaf in opened.finish_order:
            stepper.finish(leaf)
    return stepper.result(name)
