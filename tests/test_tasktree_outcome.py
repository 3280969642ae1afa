"""planners.tasktree.outcome: which nodes finished leaves satisfy, checked against the
simulation's own judgement of a run (peer_sim's satisfied times) on random trees."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    Execution,
    NodeKind,
    leaves_still_needed,
    parse_tree,
    satisfied_nodes,
)
from teamtree.planners.tasktree.peer_sim import _satisfied_times


@st.composite
def trees(draw, depth: int = 3) -> str:
    names = iter(f"o{i}" for i in range(1000))

    def node(d: int) -> str:
        if d == 0 or draw(st.booleans()):
            return next(names)
        op = draw(st.sampled_from(["THEN", "AND", "OR"]))
        kids = [node(d - 1) for _ in range(draw(st.integers(1, 3)))]
        return f"{op}({', '.join(kids)})"

    op = draw(st.sampled_from(["THEN", "AND", "OR"]))
    return f"{op}({', '.join(node(depth - 1) for _ in range(draw(st.integers(1, 3))))})"


@given(text=trees(), data=st.data())
@settings(max_examples=300, deadline=None)
def test_satisfied_nodes_agree_with_the_simulations_judgement(text: str, data) -> None:
    tree = parse_tree(text)
    leaves = list(tree.leaves)
    finished = set(data.draw(st.lists(st.sampled_from(leaves), unique=True)))
    runs = [Execution(node=n, robot="r", start=0.0, end=1.0, completed=True) for n in finished]
    judged = {n for n, t in _satisfied_times(tree, runs).items() if t is not None}
    assert satisfied_nodes(tree, finished) == judged, text
    needed = leaves_still_needed(tree, finished)
    assert (tree.root.id in judged) == (needed == []), (text, finished, needed)
    assert not set(needed) & finished
    for leaf in needed:  # never a leaf whose OR already has a satisfied branch
        for anc in tree.ancestors(leaf):
            if tree[anc].kind is NodeKind.OR:
                assert not any(c.id in judged for c in tree[anc].children), (text, leaf)
