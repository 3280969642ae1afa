"""Dijkstra over an implicit graph, the one used by the LTL searches here (the team
search in ``team`` expands states in the same order, tie-breaking included, on
int-numbered states with a queue of one bucket per distance).

The product automata and the team automaton are built lazily (a state's successors
are computed when it is expanded), so this takes a ``successors`` function instead of
a stored graph. Ties between equal distances go to the state pushed first, which
makes plans deterministic.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from teamtree.broker import SolverLimitError

__all__ = ["PathStep", "shortest_path", "walk_back"]

N = TypeVar("N", bound=Hashable)

PathStep = tuple[N, str, float]
"""One step of a path: (state reached, action taken to reach it, its weight)."""


def shortest_path(
    start: N,
    successors: Callable[[N], Iterable[tuple[N, str, float]]],
    is_goal: Callable[[N], bool],
    *,
    max_states: int | None = None,
    what: str = "search",
) -> tuple[list[PathStep[N]] | None, int]:
    """The cheapest path from `start` to a state where `is_goal` holds, as the steps
    after `start`, and the number of states expanded; ``(None, expanded)`` when no goal
    is reachable. `successors(state)` yields ``(next state, action, weight >= 0)``.
    Raises SolverLimitError (naming `what`) after `max_states` expansions."""
    # A settled state is never improved on (weights are >= 0), so the relaxation needs
    # no "settled" test; locals are bound once because this loop is every search's cost.
    inf = float("inf")
    dist: dict[N, float] = {start: 0.0}
    parent: dict[N, tuple[N, str, float]] = {}
    done: set[N] = set()
    settle = done.add
    tie = itertools.count(1)
    push, pop = heapq.heappush, heapq.heappop
    heap: list[tuple[float, int, N]] = [(0.0, 0, start)]
    while heap:
        d, _, node = pop(heap)
        if node in done:
            continue
        settle(node)
        if is_goal(node):
            return walk_back(parent, start, node), len(done)
        if max_states is not None and len(done) >= max_states:
            raise SolverLimitError(
                f"{what} stopped after {len(done)} states (max_states={max_states})"
            )
        for nxt, action, w in successors(node):
            nd = d + w
            if nd < dist.get(nxt, inf):
                dist[nxt] = nd
                parent[nxt] = (node, action, w)
                push(heap, (nd, next(tie), nxt))
    return None, len(done)


def walk_back(parent: dict[N, tuple[N, str, float]], start: N, node: N) -> list[PathStep[N]]:
    """The steps from `start` to `node` by the ``parent`` links a search left."""
    path: list[PathStep[N]] = []
    while node != start:
        prev, action, w = parent[node]
        path.append((node, action, w))
        node = prev
    path.reverse()
    return path
