"""Incremental activation spreading gives exactly what a full pass gives, after any
sequence of leaves done, started and released (random trees and changes)."""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import parse_tree, spread_activation
from teamtree.planners.tasktree.incremental import IncrementalSpread


@st.composite
def trees(draw: st.DrawFn) -> str:
    counter = iter(range(200))

    def node(depth: int) -> str:
        if depth >= 3 or draw(st.integers(0, 9)) < 3:
            return f"l{next(counter)}"
        kind = draw(st.sampled_from(["THEN", "AND", "OR"]))
        return f"{kind}({', '.join(node(depth + 1) for _ in range(draw(st.integers(1, 4))))})"

    return draw(st.sampled_from(["AND", "THEN", "OR"])) + f"({node(1)}, {node(1)})"


@given(trees(), st.data())
@settings(
    max_examples=int(os.environ.get("TEAMTREE_INCREMENTAL_EXAMPLES", "100")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_incremental_spreading_matches_the_full_pass(text: str, data: st.DataObject) -> None:
    tree = parse_tree(text)
    leaves = list(tree.leaves)
    spread = IncrementalSpread(tree)
    done: set[str] = set()
    working: set[str] = set()
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    pots = {leaf: rng.uniform(0.0, 2.0) for leaf in leaves}
    inhib = {leaves[0]: 0.5}
    for _ in range(data.draw(st.integers(1, 12))):
        for leaf in data.draw(st.lists(st.sampled_from(leaves), max_size=3)):
            what = data.draw(st.sampled_from(["done", "work", "release"]))
            if what == "done":
                done.add(leaf)
                working.discard(leaf)
            elif what == "work":
                working.add(leaf)
            else:
                working.discard(leaf)
        spread.apply(done, working)
        view = spread.view(pots, default_potential=1.0, inhibition=inhib)
        full = spread_activation(tree, done, working, pots, inhibition=inhib)
        assert dict(view) == full, f"tree={text} done={sorted(done)} working={sorted(working)}"
        for leaf in leaves:
            assert view.leaf_value(leaf) == full[leaf].level * full[leaf].potential
