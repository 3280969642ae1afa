"""Planning over orderings: exhaustive optimum and a bounded lookahead (beyond seed 004).

§VI notes that the greedy, local method misses orderings (experiments 2 and 3) and
that optimal ones need global information. Here a state is the robot's world,
finished leaves and resources; a transition is any compatible set of behaviours the
tree allows (``MultitaskAllocator.rounds``), executed as one step. The cost is
lexicographic: steps first (the paper's optimality, §IV), then simulated time.

- ``exhaustive_plan``: uniform-cost search (Dijkstra), exact, unbounded.
- ``lookahead_plan``: A* with an admissible lower bound on steps, seeded with the
  greedy plan as incumbent and pruned by it; exact when it finishes within
  ``max_expansions``, otherwise a fortified rollout (each round: the candidate whose
  greedy completion is cheapest, keeping the best plan seen). Never worse than greedy.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from teamtree.planners.multitask.allocator import MultitaskAllocator, MultitaskState, Request
from teamtree.planners.multitask.model import BehaviourKind, distance
from teamtree.planners.multitask.policy import RoundPolicy, run_policy
from teamtree.planners.multitask.rounds import round_duration
from teamtree.planners.tasktree import NodeKind

__all__ = [
    "Plan",
    "exhaustive_plan",
    "greedy_plan",
    "lookahead_plan",
    "lower_bound_steps",
    "plan_policy",
    "transition",
]

Cost = tuple[int, float]


@dataclass(frozen=True)
class Plan:
    """Rounds of leaf ids from a state to the end; ``optimal`` when proven so."""

    rounds: tuple[tuple[str, ...], ...]
    steps: int
    time_s: float
    completed: bool
    optimal: bool = False
    expansions: int = 0
    method: str = ""

    @property
    def cost(self) -> Cost:
        """(steps, time) — compared lexicographically."""
        return (self.steps, self.time_s)


def transition(
    alloc: MultitaskAllocator, state: MultitaskState, rnd: Sequence[Request]
) -> tuple[MultitaskState, float]:
    """Run one round to its end: the next state and the round's duration."""
    leaves = [r.leaf for r in rnd]
    dt = round_duration(alloc, state, leaves)
    skips = tuple(dict.fromkeys(s for r in rnd for s in r.skips))
    state = alloc.start(state, rnd, skips)
    for leaf in leaves:
        state = alloc.finish(state, leaf)
    return _settle(alloc, state), dt


def _settle(alloc: MultitaskAllocator, state: MultitaskState) -> MultitaskState:
    trailing = alloc.allocate(state).trailing
    return alloc.start(state, (), trailing) if trailing else state


def greedy_plan(alloc: MultitaskAllocator, state: MultitaskState | None = None) -> Plan:
    """The paper's method (one ``allocate`` per round) as a plan from ``state``."""
    run = run_policy(alloc, lambda a, s: a.allocate(s).granted, state=state, check=False)
    return Plan(
        tuple(s.behaviours for s in run.steps),
        run.n_steps,
        run.time_s,
        run.completed,
        method="greedy",
    )


def lower_bound_steps(alloc: MultitaskAllocator, state: MultitaskState) -> int:
    """Admissible bound on the steps left: a move per pick/place spot the robot is not at,
    plus per spot one manipulation step and at least ceil(manipulations / grippers).
    Spots are leaders more than 2·tolerance apart (no one stop serves two of them).

    Valid because a move never shares a step with a pick or place (the base). 0 for
    trees with an OR (not every leaf is needed).
    """
    if any(n.kind is NodeKind.OR for n in alloc.tree):
        return 0
    tol = alloc.problem.tolerance
    leaders: list[tuple[float, float]] = []  # pairwise > 2·tol apart: each needs its own stop
    m = 0
    for leaf, b in alloc.behaviours.items():
        if b.kind is BehaviourKind.MOVE or leaf in state.done or leaf in state.skipped:
            continue
        m += 1
        if all(distance(b.target, p) > 2 * tol for p in leaders):
            leaders.append(b.target)
    if not m:
        return 0
    moves = sum(1 for p in leaders if distance(p, state.world.robot) > tol)
    return moves + max(len(leaders), math.ceil(m / max(1, alloc.problem.n_grippers)))


def _reconstruct(parents, key) -> tuple[tuple[str, ...], ...]:
    out = []
    while parents[key] is not None:
        key, rnd = parents[key]
        out.append(rnd)
    return tuple(reversed(out))


def _search(
    alloc: MultitaskAllocator,
    start: MultitaskState,
    *,
    heuristic: bool,
    incumbent: Cost | None,
    max_expansions: int | None,
) -> tuple[Plan | None, int, bool]:
    """Best-first search; returns (plan or None, expansions, exhausted budget)."""
    start = _settle(alloc, start)
    tie = itertools.count()
    g: dict[tuple, Cost] = {start.key(): (0, 0.0)}
    parents: dict[tuple, tuple[tuple, tuple[str, ...]] | None] = {start.key(): None}
    h0 = lower_bound_steps(alloc, start) if heuristic else 0
    heap = [((h0, 0.0), next(tie), (0, 0.0), start)]
    expansions = 0
    while heap:
        _, _, pushed, state = heapq.heappop(heap)
        key = state.key()
        cost = g[key]
        if pushed > cost:
            continue  # a stale entry: a cheaper way here was found after it was pushed
        if alloc.is_complete(state):
            rounds = _reconstruct(parents, key)
            return Plan(rounds, cost[0], cost[1], True, True, expansions), expansions, False
        if max_expansions is not None and expansions >= max_expansions:
            return None, expansions, True
        expansions += 1
        for rnd in alloc.rounds(state):
            nxt, dt = transition(alloc, state, rnd)
            nkey = nxt.key()
            ncost = (cost[0] + 1, round(cost[1] + dt, 9))
            if nkey in g and g[nkey] <= ncost:
                continue
            h = lower_bound_steps(alloc, nxt) if heuristic else 0
            f = (ncost[0] + h, ncost[1])
            if incumbent is not None and f >= incumbent:
                continue
            g[nkey] = ncost
            parents[nkey] = (key, tuple(r.leaf for r in rnd))
            heapq.heappush(heap, (f, next(tie), ncost, nxt))
    return None, expansions, False


def exhaustive_plan(alloc: MultitaskAllocator, state: MultitaskState | None = None) -> Plan:
    """The optimum by uniform-cost search over every compatible round; exact, unbounded.

    Returns a plan with ``completed`` False when no ordering finishes the tree.
    """
    state = alloc.initial_state() if state is None else state
    plan, n, _ = _search(alloc, state, heuristic=False, incumbent=None, max_expansions=None)
    if plan is None:
        return Plan((), 0, 0.0, False, False, n, "exhaustive")
    return Plan(plan.rounds, plan.steps, plan.time_s, True, True, n, "exhaustive")


def lookahead_plan(
    alloc: MultitaskAllocator,
    state: MultitaskState | None = None,
    *,
    max_expansions: int = 200_000,
    max_rollouts: int = 2_000,
) -> Plan:
    """A plan at least as good as greedy's: exact (A*) within ``max_expansions``,
    else a fortified greedy rollout using at most ``max_rollouts`` greedy completions."""
    state = alloc.initial_state() if state is None else state
    base = greedy_plan(alloc, state)
    incumbent = base.cost if base.completed else None
    plan, n, exhausted = _search(
        alloc, state, heuristic=True, incumbent=incumbent, max_expansions=max_expansions
    )
    if plan is not None:
        return Plan(plan.rounds, plan.steps, plan.time_s, True, True, n, "lookahead-exact")
    if not exhausted:  # nothing beats greedy: greedy is optimal
        return Plan(base.rounds, base.steps, base.time_s, base.completed, base.completed, n,
                    "lookahead-exact")  # fmt: skip
    return _rollout(alloc, state, base, max_rollouts, n)


def _rollout(
    alloc: MultitaskAllocator, state: MultitaskState, base: Plan, max_rollouts: int, n: int
) -> Plan:
    state = _settle(alloc, state)
    done: list[tuple[str, ...]] = []
    spent = (0, 0.0)
    rest = base  # the incumbent's remainder from `state`
    budget = max_rollouts
    while not alloc.is_complete(state) and rest.rounds:
        best_cost = rest.cost if rest.completed else (10**9, math.inf)
        best_first: tuple[str, ...] = rest.rounds[0]
        best_rest: Plan | None = None
        for rnd in alloc.rounds(state):
            if budget <= 0:
                break
            budget -= 1
            nxt, dt = transition(alloc, state, rnd)
            tail = greedy_plan(alloc, nxt)
            if not tail.completed:
                continue
            c = (1 + tail.steps, round(dt + tail.time_s, 9))
            if c < best_cost:
                best_cost, best_first, best_rest = c, tuple(r.leaf for r in rnd), tail
        rnd = _match(alloc, state, best_first)
        state, dt = transition(alloc, state, rnd)
        done.append(best_first)
        spent = (spent[0] + 1, round(spent[1] + dt, 9))
        if best_rest is not None:
            rest = best_rest
        else:
            rest = Plan(rest.rounds[1:], rest.steps - 1, rest.time_s - dt, rest.completed)
    complete = alloc.is_complete(state)
    return Plan(tuple(done), spent[0], spent[1], complete, False, n, "lookahead-rollout")


def _match(
    alloc: MultitaskAllocator, state: MultitaskState, leaves: Sequence[str]
) -> tuple[Request, ...]:
    want = frozenset(leaves)
    for rnd in alloc.rounds(state):
        if frozenset(r.leaf for r in rnd) == want:
            return rnd
    raise RuntimeError(f"round {sorted(want)} is not possible in this state")


def plan_policy(plan: Plan) -> RoundPolicy:
    """A policy for ``run_policy`` replaying ``plan`` round by round.

    Raises RuntimeError when a planned round is not possible in the state reached.
    """
    rounds = iter(plan.rounds)

    def policy(alloc: MultitaskAllocator, state: MultitaskState) -> Sequence[Request]:
        nxt = next(rounds, None)
        return () if nxt is None else _match(alloc, state, nxt)

    return policy
