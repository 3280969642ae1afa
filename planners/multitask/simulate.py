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

from collections.abc import Sequence

from teamtree.planners.multitask.allocator import (
    Mode,
    MultitaskAllocator,
    MultitaskState,
    Request,
)
from teamtree.planners.multitask.model import MultitaskProblem
from teamtree.planners.multitask.policy import run_policy
from teamtree.planners.multitask.rounds import RunResult
from teamtree.planners.multitask.search import exhaustive_plan, lookahead_plan, plan_policy

__all__ = ["simulate"]


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
