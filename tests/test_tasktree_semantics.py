"""Tree semantics per tick (§2.2): one robot, expected-state tables for THEN, AND, OR, nested.

Codes: I inactive, A active, W working, D done. Each row is the state of the listed
nodes right after that tick; a behaviour runs for ``dur`` ticks and then finishes.
"""

from __future__ import annotations

import pytest

from teamtree.planners.tasktree import (
    BehaviourFinished,
    NodeStatus,
    StartBehaviour,
    TaskController,
    Tick,
    parse_tree,
    select_behaviour,
    spread_activation,
)

CODE = {
    NodeStatus.INACTIVE: "I",
    NodeStatus.ACTIVE: "A",
    NodeStatus.WORKING: "W",
    NodeStatus.DONE: "D",
}


def run(text: str, columns: list[str], potentials: dict[str, float], ticks: int, dur: int = 1):
    tree = parse_tree(text)
    ids = [tree.find(c) for c in columns]
    pots = {tree.find(k): v for k, v in potentials.items()}
    ctl = TaskController(tree, "r", potentials=pots)
    rows = [" ".join(CODE[ctl.statuses()[i]] for i in ids)]
    running: tuple[str, int] | None = None
    for k in range(ticks):
        now = (k + 1, 0, "r")
        for a in ctl.handle(Tick(), now):
            if isinstance(a, StartBehaviour):
                running = (a.node, k + dur)
        rows.append(" ".join(CODE[ctl.statuses()[i]] for i in ids))
        if running is not None and running[1] == k + 1:
            ctl.handle(BehaviourFinished(running[0]), (k + 1, 1, "r"))
            running = None
    return rows


def test_then_runs_children_in_order() -> None:
    rows = run("THEN(a, b, c)", ["root", "a", "b", "c"], {"c": 9.0}, ticks=4)
    assert rows == [
        "A A I I",  # before the first tick: only the first child is allowed
        "W W I I",
        "W D W I",
        "W D D W",
        "D D D D",
    ]


def test_and_picks_highest_potential_first() -> None:
    rows = run("AND(a, b, c)", ["root", "a", "b", "c"], {"a": 1.0, "b": 3.0, "c": 2.0}, ticks=4)
    assert rows == [
        "A A A A",
        "W A W A",
        "W A D W",
        "W W D D",
        "D D D D",
    ]


def test_or_runs_exactly_one_child() -> None:
    rows = run("OR(a, b)", ["root", "a", "b"], {"a": 1.0, "b": 2.0}, ticks=3)
    assert rows == [
        "A A A",
        "W I W",  # b chosen: the OR commits to it, a is no longer allowed
        "D I D",  # the OR is done; a is not needed
        "D I D",
    ]


def test_or_with_sequence_branch_commits_on_start() -> None:
    rows = run("OR(THEN(a, b), c)", ["root", "a", "b", "c"], {"a": 2.0, "c": 1.0}, ticks=3)
    assert rows == [
        "A A I A",
        "W W I I",
        "W D W I",
        "D D D I",
    ]


def test_nested_fig2_with_two_tick_behaviours() -> None:
    rows = run(
        "AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))",
        ["cup", "sugar", "tea_pot", "sandwich", "orange", "apple", "burger"],
        {"sandwich": 5, "cup": 4, "apple": 3, "orange": 2, "burger": 1, "sugar": 6, "tea_pot": 7},
        ticks=12,
        dur=2,
    )
    assert rows == [
        "A I I A I I I",
        "A I I W I I I",  # sandwich (5) beats cup (4)
        "A I I W I I I",
        "W I I D A A I",  # sandwich done: the OR opens; cup (4) beats apple (3)
        "W I I D A A I",
        "D A W D A A I",  # cup done: tea_pot (7) beats sugar (6)
        "D A W D A A I",
        "D W D D A A I",
        "D W D D A A I",
        "D D D D I W I",  # apple (3) beats orange (2); the OR closes on start
        "D D D D I W I",
        "D D D D I D W",
        "D D D D I D W",
    ]


@pytest.mark.parametrize(
    ("done", "working", "expected"),
    [
        (set(), set(), "root/1/0"),  # highest potential allowed leaf
        ({"root/1/0"}, set(), "root/1/1/1"),
        ({"root/1/0"}, {"root/1/1/0"}, "root/0/0"),  # OR committed elsewhere
        ({"root/1/0", "root/1/1/0"}, set(), "root/1/2"),
    ],
)
def test_spread_and_select(done: set[str], working: set[str], expected: str) -> None:
    tree = parse_tree("AND(THEN(cup, sugar), THEN(sandwich, OR(orange, apple), burger))")
    pots = {"root/0/0": 1.0, "root/1/0": 5.0, "root/1/1/1": 4.0, "root/1/2": 3.0}
    acts = spread_activation(tree, done, working, pots, default_potential=0.5)
    assert select_behaviour(tree, acts) == expected
    # bottom-up: a goal's potential is its best selectable child's
    assert acts["root"].potential == max(acts[c.id].potential for c in tree.root.children)


def test_zero_potential_is_never_selected() -> None:
    tree = parse_tree("AND(a, b)")
    acts = spread_activation(tree, set(), set(), {"root/0": 0.0, "root/1": 0.0})
    assert select_behaviour(tree, acts) is None


def test_one_behaviour_at_a_time() -> None:
    tree = parse_tree("AND(a, b)")
    ctl = TaskController(tree, "r")
    first = ctl.handle(Tick(), (1, 0, "r"))
    assert sum(isinstance(a, StartBehaviour) for a in first) == 1
    assert ctl.handle(Tick(), (2, 0, "r")) == []


def test_spreading_follows_done_and_working_back_and_forth() -> None:
    # the structural pass is remembered per tree; a change of done or working redoes it
    tree = parse_tree("THEN(a, OR(b, c), d)")
    a, b, c, d = tree.leaves
    first = spread_activation(tree, set(), set(), {b: 2.0})
    assert first[a].level == 1.0 and first[b].level == 0.0
    assert spread_activation(tree, {a}, set(), {b: 2.0})[b].potential == 2.0
    taken = spread_activation(tree, {a}, {c}, {b: 2.0})
    assert taken[b].level == 0.0 and taken[c].committed
    assert spread_activation(tree, set(), set(), {b: 2.0}) == first
    assert spread_activation(parse_tree("THEN(a, OR(b, c), d)"), {a, c}, set())[d].level == 1.0
