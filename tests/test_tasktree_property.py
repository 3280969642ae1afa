"""Property test: random trees × 2-6 robots × random delay, duplication, reordering, crashes.

Checks DESIGN.md's guarantees on the pure simulation: no behaviour completed twice or
run by two robots at once, THEN order respected, exactly one child of each OR, the
mission completes. Hypothesis prints the falsifying example; the simulation's seed is
in every assertion message.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    ClaimRule,
    CrashSpec,
    JoinSpec,
    NetworkModel,
    SimConfig,
    TaskNode,
    TaskTree,
    check_invariants,
    parse_tree,
    simulate,
)


@st.composite
def tree_texts(draw: st.DrawFn, max_leaves: int = 9) -> str:
    counter = iter(range(max_leaves * 4))

    def node(depth: int) -> str:
        if depth >= 3 or draw(st.integers(0, 9)) < 4:
            return f"l{next(counter)}"
        kind = draw(st.sampled_from(["THEN", "AND", "OR"]))
        n = draw(st.integers(1, 3))
        return f"{kind}({', '.join(node(depth + 1) for _ in range(n))})"

    return draw(st.sampled_from(["AND", "THEN", "OR"])) + f"({node(1)}, {node(1)})"


def _needed_leaves(tree: TaskTree) -> int:
    def count(n: TaskNode) -> int:
        if n.is_leaf:
            return 1
        kids = [count(c) for c in n.children]
        return min(kids) if n.kind.value == "or" else sum(kids)

    return count(tree.root)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    text=tree_texts(),
    n_robots=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
    max_delay=st.sampled_from([0.001, 0.02, 0.1, 0.3]),
    duplicate_p=st.sampled_from([0.0, 0.2, 0.5]),
    reorder=st.booleans(),
    crash=st.booleans(),
    join=st.booleans(),
    rule=st.sampled_from(list(ClaimRule)),
)
def test_random_teams_keep_the_guarantees(
    text: str,
    n_robots: int,
    seed: int,
    max_delay: float,
    duplicate_p: float,
    reorder: bool,
    crash: bool,
    join: bool,
    rule: ClaimRule,
) -> None:
    tree = parse_tree(text)
    robots = tuple(f"r{i}" for i in range(n_robots))
    cfg = SimConfig(
        robots=robots,
        seed=seed,
        network=NetworkModel(max_delay=max_delay, duplicate_p=duplicate_p, reorder=reorder),
        crashes=(CrashSpec("r0", on_start=1, fraction=0.5),) if crash else (),
        joins=(JoinSpec("late", at=0.4),) if join else (),
        rule=rule,
        time_limit=600.0,
    )
    res = simulate(tree, cfg)
    errors = check_invariants(tree, res)
    assert errors == [], f"{res.summary()} tree={text} config={cfg}\n" + "\n".join(errors)
    done = sum(e.completed for e in res.executions)
    assert done >= _needed_leaves(tree), f"{res.summary()} tree={text}"
