"""Property test at team scale: 8-32 robots, with and without contention avoidance,
random delay, duplication, reordering and crashes of up to three robots.

The guarantees are the ones of ``test_tasktree_property.py`` (no node worked twice or
by two robots at once, THEN order, one child per OR, every run completes), on trees
with more leaves than the team has robots and with fewer. ``TEAMTREE_SCALE_EXAMPLES``
sets the number of random teams (default 10, for CI); the simulation's seed and the
whole configuration are in every assertion message.
"""

from __future__ import annotations

import os
from dataclasses import replace

from hypothesis import event, given
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    ClaimRule,
    CrashSpec,
    NetworkModel,
    SimConfig,
    SimResult,
    TaskTree,
    check_invariants,
    parse_tree,
    simulate,
)
from tests.test_tasktree_property import sim_settings

EXAMPLES = int(os.environ.get("TEAMTREE_SCALE_EXAMPLES", "10"))


@st.composite
def team_trees(draw: st.DrawFn) -> str:
    """An AND of 4-24 parts: leaves, THEN pairs and ORs of two (8-60 leaves)."""
    counter = iter(range(100))
    parts = []
    for _ in range(draw(st.integers(4, 24))):
        kind = draw(st.sampled_from(["leaf", "THEN", "THEN", "OR", "AND"]))
        if kind == "leaf":
            parts.append(f"l{next(counter)}")
        else:
            parts.append(f"{kind}(l{next(counter)}, l{next(counter)})")
    return f"AND({', '.join(parts)})"


def big_team(
    n_robots: int, seed: int, crashes: int, max_delay: float, duplicate_p: float, reorder: bool
) -> SimConfig:
    """A team of `n_robots`, `crashes` of them crashing mid-way through their first
    behaviour, on the drawn network."""
    return SimConfig(
        robots=tuple(f"r{i}" for i in range(n_robots)),
        seed=seed,
        network=NetworkModel(max_delay=max_delay, duplicate_p=duplicate_p, reorder=reorder),
        crashes=tuple(CrashSpec(f"r{i}", on_start=1, fraction=0.5) for i in range(crashes)),
        time_limit=600.0,
    )


def check_big_team(tree: TaskTree, text: str, cfg: SimConfig) -> SimResult:
    """Simulate; fail with the seed and the configuration if a guarantee broke."""
    res = simulate(tree, cfg)
    errors = check_invariants(tree, res)
    assert errors == [], f"{res.summary()} tree={text} config={cfg}\n" + "\n".join(errors)
    assert res.completed, f"did not complete: {res.summary()} tree={text} config={cfg}"
    return res


@sim_settings(EXAMPLES)
@given(
    text=team_trees(),
    n_robots=st.sampled_from([8, 16, 24, 32]),
    avoid=st.booleans(),
    crashes=st.integers(0, 3),
    max_delay=st.sampled_from([0.002, 0.02, 0.1]),
    duplicate_p=st.sampled_from([0.0, 0.2]),
    reorder=st.booleans(),
    rule=st.sampled_from(list(ClaimRule)),
    seed=st.integers(0, 2**32 - 1),
)
def test_big_teams_keep_the_guarantees(
    text: str,
    n_robots: int,
    avoid: bool,
    crashes: int,
    max_delay: float,
    duplicate_p: float,
    reorder: bool,
    rule: ClaimRule,
    seed: int,
) -> None:
    tree = parse_tree(text)
    cfg = big_team(n_robots, seed, crashes, max_delay, duplicate_p, reorder)
    res = check_big_team(tree, text, replace(cfg, rule=rule, avoid_contention=avoid))
    event(
        f"avoid={avoid} lost claims per leaf <= 1: {res.claims - res.claims_won <= len(tree.leaves)}"
    )
