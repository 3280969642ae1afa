"""The one Dijkstra of the LTL planners, against networkx on random weighted graphs:
the same cheapest cost, a path that follows real edges, None when no goal is
reachable, and the state budget."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.broker import SolverLimitError
from teamtree.planners.ltl import shortest_path

EDGES = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 9), st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.5])),
    max_size=40,
)


def graph(edges: list[tuple[int, int, float]]) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(10))
    for a, b, w in edges:
        if not g.has_edge(a, b) or g[a][b]["weight"] > w:
            g.add_edge(a, b, weight=w, action=f"{a}->{b}")
    return g


@settings(max_examples=200, deadline=None)
@given(edges=EDGES, goals=st.sets(st.integers(0, 9), min_size=1, max_size=3))
def test_cheapest_path_matches_networkx(edges, goals) -> None:
    g = graph(edges)

    def successors(n: int):
        for m in g.successors(n):
            yield m, g[n][m]["action"], g[n][m]["weight"]

    path, expanded = shortest_path(0, successors, lambda n: n in goals)
    lengths = nx.single_source_dijkstra_path_length(g, 0)
    reachable = [lengths[t] for t in goals if t in lengths]
    if not reachable:
        assert path is None
        return
    assert path is not None and 1 <= expanded <= 10
    assert sum(w for _, _, w in path) == pytest.approx(min(reachable))
    at = 0
    for node, action, w in path:
        assert g.has_edge(at, node) and g[at][node]["weight"] == w and action == f"{at}->{node}"
        at = node
    assert at in goals


def test_the_state_budget_names_the_search() -> None:
    def successors(n: int):
        yield n + 1, "step", 1.0

    with pytest.raises(SolverLimitError, match="team search stopped after 5 states"):
        shortest_path(0, successors, lambda n: n < 0, max_states=5, what="team search")
    path, expanded = shortest_path(0, successors, lambda n: n == 3, max_states=5)
    assert [n for n, _, _ in path] == [1, 2, 3] and expanded == 4
