"""Property test: random trees × 2-6 robots × random delay, duplication, reordering, crashes.

Checks the runtime's guarantees on the pure simulation: no behaviour completed twice or
run by two robots at once, no robot running more behaviours than its capacity, THEN
order respected, exactly one child of each OR, the mission completes. Robots run one
behaviour at a time (seed 000) or, multitasking, up to 3. Hypothesis prints the
falsifying example; the simulation's seed is in every assertion message.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    ClaimRule,
    CrashSpec,
    JoinSpec,
    NetworkModel,
    SimConfig,
    SimResult,
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


@st.composite
def wide_tree_texts(draw: st.DrawFn) -> str:
    """An AND of 3-6 parts (leaves or small goals): room for two behaviours at once."""
    counter = iter(range(40))

    def part() -> str:
        if draw(st.booleans()):
            return f"l{next(counter)}"
        kind = draw(st.sampled_from(["THEN", "AND", "OR"]))
        return f"{kind}({', '.join(f'l{next(counter)}' for _ in range(draw(st.integers(1, 3))))})"

    return f"AND({', '.join(part() for _ in range(draw(st.integers(3, 6))))})"


def _needed_leaves(tree: TaskTree) -> int:
    def count(n: TaskNode) -> int:
        if n.is_leaf:
            return 1
        kids = [count(c) for c in n.children]
        return min(kids) if n.kind.value == "or" else sum(kids)

    return count(tree.root)


def _simulate_and_check(text: str, cfg: SimConfig) -> SimResult:
    """Run ``cfg`` on the tree ``text``; fail with the seed if a guarantee broke."""
    tree = parse_tree(text)
    res = simulate(tree, cfg)
    errors = check_invariants(tree, res)
    assert errors == [], f"{res.summary()} tree={text} config={cfg}\n" + "\n".join(errors)
    done = sum(e.completed for e in res.executions)
    assert done >= _needed_leaves(tree), f"{res.summary()} tree={text}"
    return res


def _most_at_once(res: SimResult) -> int:
    """The most behaviours one robot ran at once (for Hypothesis' statistics)."""
    ex = res.executions  # in start order
    return max(
        (
            1 + sum(f.robot == e.robot and (f.end is None or f.end > e.start) for f in ex[:i])
            for i, e in enumerate(ex)
        ),
        default=0,
    )


def sim_settings(examples: int) -> settings:
    """Hypothesis settings of the network-simulation property tests: the same draws on
    every run (``derandomize``), and no deadline (a run of a big team takes seconds)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=True,
    )


NETWORKS = {
    "max_delay": st.sampled_from([0.001, 0.02, 0.1, 0.3]),
    "duplicate_p": st.sampled_from([0.0, 0.2, 0.5]),
    "reorder": st.booleans(),
    "crash": st.booleans(),
    "join": st.booleans(),
    "rule": st.sampled_from(list(ClaimRule)),
    "seed": st.integers(0, 2**32 - 1),
}


def _team(n_robots: int, capacity: int, crash_on: int, **net: Any) -> SimConfig:
    """A random team: ``net`` holds the NETWORKS draws."""
    return SimConfig(
        robots=tuple(f"r{i}" for i in range(n_robots)),
        seed=net["seed"],
        network=NetworkModel(
            max_delay=net["max_delay"], duplicate_p=net["duplicate_p"], reorder=net["reorder"]
        ),
        crashes=(CrashSpec("r0", on_start=crash_on, fraction=0.5),) if net["crash"] else (),
        joins=(JoinSpec("late", at=0.4),) if net["join"] else (),
        rule=net["rule"],
        time_limit=600.0,
        capacity=capacity,
    )


@sim_settings(200)
@given(text=tree_texts(), n_robots=st.integers(2, 6), **NETWORKS)
def test_random_teams_keep_the_guarantees(text: str, n_robots: int, **net: Any) -> None:
    _simulate_and_check(text, _team(n_robots, 1, 1, **net))


@sim_settings(300)
@given(
    text=st.one_of(tree_texts(), wide_tree_texts()),
    n_robots=st.integers(2, 5),
    capacity=st.integers(1, 3),
    **NETWORKS,
)
def test_random_multitasking_teams_keep_the_guarantees(
    text: str, n_robots: int, capacity: int, **net: Any
) -> None:
    res = _simulate_and_check(text, _team(n_robots, capacity, 2, **net))
    event(f"capacity {capacity}, most at once {_most_at_once(res)}")


@sim_settings(150)
@given(
    text=st.one_of(wide_tree_texts(), tree_texts()),
    n_robots=st.integers(2, 4),
    seed=st.integers(0, 2**32 - 1),
    on_start=st.integers(1, 3),
    fraction=st.floats(0.05, 0.95),
    max_delay=st.sampled_from([0.001, 0.02, 0.1, 0.3]),
    duplicate_p=st.sampled_from([0.0, 0.3]),
    reorder=st.booleans(),
    join=st.booleans(),
)
def test_crash_of_a_multitasking_robot_keeps_the_guarantees(
    text: str,
    n_robots: int,
    seed: int,
    on_start: int,
    fraction: float,
    max_delay: float,
    duplicate_p: float,
    reorder: bool,
    join: bool,
) -> None:
    cfg = SimConfig(
        robots=tuple(f"r{i}" for i in range(n_robots)),
        seed=seed,
        network=NetworkModel(max_delay=max_delay, duplicate_p=duplicate_p, reorder=reorder),
        crashes=(CrashSpec("r0", on_start=on_start, fraction=fraction),),
        joins=(JoinSpec("late", at=0.4),) if join else (),
        time_limit=600.0,
        capacity=2,
    )
    res = _simulate_and_check(text, cfg)
    if res.crashed:  # the crash ended every behaviour r0 ran then
        r0 = [e for e in res.executions if e.robot == "r0"]
        assert all(e.end is not None for e in r0), res.summary()
        last = max(e.end for e in r0 if e.end is not None)
        event(f"r0 crashed running {sum(e.aborted and e.end == last for e in r0)}")


@sim_settings(150)
@given(
    text=st.one_of(wide_tree_texts(), tree_texts()),
    n_robots=st.integers(2, 4),
    seed=st.integers(0, 2**32 - 1),
    on_start=st.integers(1, 3),
    fraction=st.floats(0.05, 0.95),
    max_delay=st.sampled_from([0.001, 0.02, 0.1]),
    duplicate_p=st.sampled_from([0.0, 0.3]),
    reorder=st.booleans(),
    lease=st.sampled_from([0.2, 0.5, 1.5]),
    capacity=st.integers(1, 2),
)
def test_frozen_holder_with_leases_keeps_the_guarantees(
    text: str,
    n_robots: int,
    seed: int,
    on_start: int,
    fraction: float,
    max_delay: float,
    duplicate_p: float,
    reorder: bool,
    lease: float,
    capacity: int,
) -> None:
    """r0 freezes with its driver mid-behaviour; its body runs on until its lease
    lapses. Peers wait lease + margin after the Will (margin 0.1 s covers the 50 ms
    clock skew), so no leaf runs on two bodies and the mission completes."""
    cfg = SimConfig(
        robots=tuple(f"r{i}" for i in range(n_robots)),
        seed=seed,
        network=NetworkModel(max_delay=max_delay, duplicate_p=duplicate_p, reorder=reorder),
        freezes=(CrashSpec("r0", on_start=on_start, fraction=fraction),),
        duration=(0.2, 2.0),
        lease=lease,
        lease_margin=0.1,
        clock_skew_ms=50,
        time_limit=600.0,
        capacity=capacity,
    )
    res = _simulate_and_check(text, cfg)
    if res.crashed:  # each body of r0 stopped by its lease at the latest
        event(f"r0 froze; lease {lease}")
        assert all(e.end is not None for e in res.executions if e.robot == "r0"), res.summary()
