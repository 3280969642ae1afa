"""Dijkstra over an implicit graph, the one used by every LTL search here.

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

__all__ = ["PathStep", "shortest_path"]

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
    dist: dict[N, float] = {start: 0.0}
    parent: dict[N, tuple[N, str, float]] = {}
    done: set[N] = set()
    tie = itertools.count()
    heap: list[tuple[float, int, N]] = [(0.0, next(tie), start)]
    while heap:
        d, _, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        if is_goal(node):
            path: list[PathStep[N]] = []
            cur = node
            while cur != start:
                prev, action, w = parent[cur]
                path.append((cur, action, w))
                cur = prev
            path.reverse()
            return path, len(done)
        if max_states is not None and len(done) >= max_states:
            raise SolverLimitError(
                f"{what} stopped after {len(done)} states (max_states={max_states})"
            )
        for nxt, action, w in successors(node):
            nd = d + w
            if nxt not in done and nd < dist.get(nxt, float("inf")):
                dist[nxt] = nd
                parent[nxt] = (node, action, w)
                heapq.heappush(heap, (nd, next(tie), nxt))
    return None, len(done)
