"""Tree mechanics of seed 004 §III.C: Alg. 1, skips and reverts, hand-offs, eq. 1, ORs."""

from __future__ import annotations

from typing import Any

import pytest

from teamtree.broker import SpecificationError
from teamtree.hardware.resources import Access
from teamtree.planners.multitask import (
    AndRule,
    Mode,
    MultitaskAllocator,
    MultitaskProblem,
    ObjectSpec,
    find_compatible,
    pick_and_place_tree,
    problem_from_mission,
    run_policy,
    simulate,
)
from teamtree.planners.tasktree import NodeStatus, tree_from_dict

ONE_GRIPPER = {
    "kind": "one-arm",
    "resources": [
        {"name": "g", "type": "gripper"},
        {"name": "base", "type": "base"},
        {"name": "head", "type": "head"},
    ],
}


def unit(o: str, *, place: bool = True) -> dict[str, Any]:
    kids = [
        {"id": f"move-{o}-1", "behavior": "MOVE", "object": o, "params": {"to": "pick"}},
        {"id": f"pick-{o}", "behavior": "PICK", "object": o},
    ]
    if place:
        kids += [
            {"id": f"move-{o}-2", "behavior": "MOVE", "object": o, "params": {"to": "place"}},
            {"id": f"place-{o}", "behavior": "PLACE", "object": o},
        ]
    return {"type": "then", "id": f"task-{o}", "children": kids}


def problem(
    tree: dict[str, Any] | None,
    objects: dict[str, tuple[tuple[float, float], tuple[float, float]]],
    start: tuple[float, float] = (0.0, 0.0),
    robot: Any = "pr2",
) -> MultitaskProblem:
    mission: dict[str, Any] = {
        "start": list(start),
        "robot": robot,
        "objects": {
            k: {"position": list(p), "destination": list(d)} for k, (p, d) in objects.items()
        },
    }
    if tree is not None:
        mission["tree"] = tree
    return problem_from_mission(mission)


def greedy_round(alloc: MultitaskAllocator, state):
    a = alloc.allocate(state)
    state = alloc.start(state, a.granted, a.skipped)
    for leaf in a.leaves:
        state = alloc.finish(state, leaf)
    return a, state


FIG3 = {"type": "and", "id": "root", "children": [unit("o1", place=False), unit("o2", place=False)]}
SAME_SPOT = {"o1": ((2.0, 0.0), (5.0, 0.0)), "o2": ((2.0, 0.0), (5.0, 3.0))}


def test_fig3_skips_the_second_move_and_picks_both_together() -> None:
    alloc = MultitaskAllocator(problem(FIG3, SAME_SPOT))
    state = alloc.initial_state()
    a, state = greedy_round(alloc, state)
    assert a.leaves == ("move-o1-1",)  # tie broken by tree order
    # the move handed the base on to its pick, which already owns it (shared, still)
    base = state.resources["base"]
    assert base.owners == {"pick-o1"} and base.channel.access is Access.SHARED
    a = alloc.allocate(state)
    assert set(a.leaves) == {"pick-o1", "pick-o2"}
    assert a.skipped == ("move-o2-1",)
    before = alloc.statuses(state, a)
    assert before["pick-o2"] is NodeStatus.ACTIVE and before["move-o2-1"] is NodeStatus.INACTIVE
    state = alloc.start(state, a.granted, a.skipped)
    st = alloc.statuses(state)
    assert st["move-o2-1"] is NodeStatus.SKIPPED
    assert st["pick-o1"] is NodeStatus.WORKING and st["pick-o2"] is NodeStatus.WORKING
    assert st["move-o1-1"] is NodeStatus.DONE
    for leaf in a.leaves:
        state = alloc.finish(state, leaf)
    assert alloc.is_complete(state)
    # each pick keeps its own gripper (no place follows): two objects, two grippers
    assert {g for _, g in state.world.held} == {"left_gripper", "right_gripper"}


def test_a_rejected_skip_reverts_and_the_move_runs_later() -> None:
    tree = {"type": "and", "id": "root", "children": [unit("o1"), unit("o2")]}
    alloc = MultitaskAllocator(problem(tree, SAME_SPOT, start=(2.0, 0.0), robot=ONE_GRIPPER))
    state = alloc.initial_state()
    a = alloc.allocate(state)
    # both THENs skip their move; one gripper: Alg. 1 grants pick-o1, rejects pick-o2
    assert a.leaves == ("pick-o1",)
    assert a.skipped == ("move-o1-1",)
    assert any(r.leaf == "pick-o2" and r.skips == ("move-o2-1",) for r in a.rejected)
    state = alloc.start(state, a.granted, a.skipped)
    assert "move-o2-1" not in state.skipped and "move-o2-1" not in state.done
    state = alloc.finish(state, "pick-o1")
    run = run_policy(alloc, lambda al, s: al.allocate(s).granted, state=state)
    assert run.completed and not run.violations
    assert "move-o2-1" in run.executed  # reverted: done for real after the robot left


def test_alg1_does_not_take_its_first_request_twice() -> None:
    # a lone pick with two free grippers must be granted once (Alg. 1 line j = i fixed)
    tree = {"type": "and", "id": "root", "children": [unit("o1", place=False)]}
    alloc = MultitaskAllocator(problem(tree, {"o1": ((0.0, 0.0), (1.0, 0.0))}))
    state = alloc.initial_state()
    req = alloc.request(state, "pick-o1", ("move-o1-1",))
    assert req.possible
    assert find_compatible([req], state.resources) == (req,)


def test_three_objects_at_one_spot_two_grippers() -> None:
    tree = {
        "type": "and",
        "id": "root",
        "children": [unit(o, place=False) for o in ("a", "b", "c")],
    }
    objs = {o: ((1.0, 1.0), (3.0, 3.0)) for o in ("a", "b", "c")}
    alloc = MultitaskAllocator(problem(tree, objs, start=(1.0, 1.0)))
    a = alloc.allocate(alloc.initial_state())
    assert set(a.leaves) == {"pick-a", "pick-b"}
    assert {r.leaf for r in a.rejected} >= {"pick-c"}


def test_pick_keeps_its_gripper_until_the_matching_place() -> None:
    alloc = MultitaskAllocator(problem(None, {"o1": ((1.0, 0.0), (4.0, 0.0))}))
    state = alloc.initial_state()
    _, state = greedy_round(alloc, state)  # move
    _, state = greedy_round(alloc, state)  # pick
    grip = state.world.holder("o1")
    assert grip is not None
    res = state.resources[grip]
    assert res.owners == {"place-o1"} and res.channel.access is Access.EXCLUSIVE
    assert state.resources["base"].free and state.resources["head"].free
    _, state = greedy_round(alloc, state)  # move to the destination: hands base to place
    assert state.resources["base"].owners == {"place-o1"}
    _, state = greedy_round(alloc, state)  # place
    assert all(r.free for r in state.resources)
    assert alloc.is_complete(state) and state.world.placed == {"o1"}


def test_a_hand_off_lapses_if_its_heir_is_not_granted() -> None:
    alloc = MultitaskAllocator(problem(None, {"o1": ((1.0, 0.0), (4.0, 0.0))}))
    state = alloc.initial_state()
    _, state = greedy_round(alloc, state)
    assert state.handoffs == {("base", "pick-o1")}
    after = alloc.start(state, ())
    assert after.resources["base"].free and not after.handoffs


def test_eq1_move_potential_counts_available_grippers() -> None:
    objs = {"o1": ((1.0, 0.0), (4.0, 0.0)), "o2": ((0.0, 2.0), (0.0, 6.0))}
    alloc = MultitaskAllocator(problem(None, objs))
    state = alloc.initial_state()
    assert alloc.potential(state, "move-o1-1") == pytest.approx(2 / 1.0)
    assert alloc.potential(state, "move-o2-1") == pytest.approx(2 / 2.0)
    _, state = greedy_round(alloc, state)  # move to o1
    _, state = greedy_round(alloc, state)  # pick o1
    # move to place o1: one free gripper + the one holding o1; move to o2: one free
    assert alloc.potential(state, "move-o1-2") == pytest.approx(2 / 3.0)
    assert alloc.potential(state, "move-o2-1") == pytest.approx(1 / (5**0.5))
    # pick and place always outrank any move (its maximum is n_grippers / tolerance)
    assert alloc.manipulation_potential > 2 / alloc.problem.tolerance


def test_no_move_to_a_pick_when_both_grippers_are_full() -> None:
    objs = {
        "a": ((1.0, 0.0), (5.0, 0.0)),
        "b": ((1.0, 0.0), (5.0, 1.0)),
        "c": ((2.0, 0.0), (6.0, 0.0)),
    }
    alloc = MultitaskAllocator(problem(None, objs))
    state = alloc.initial_state()
    _, state = greedy_round(alloc, state)
    a, state = greedy_round(alloc, state)
    assert set(a.leaves) == {"pick-a", "pick-b"}
    req = alloc.request(state, "move-c-1")
    assert not req.possible and alloc.potential(state, "move-c-1") == 0
    assert "gripper" in req.reason


def test_or_commits_to_one_child() -> None:
    tree = {"type": "or", "id": "root", "children": [unit("o1"), unit("o2")]}
    objs = {"o1": ((3.0, 0.0), (4.0, 0.0)), "o2": ((1.0, 0.0), (1.0, 4.0))}
    alloc = MultitaskAllocator(problem(tree, objs))
    run = simulate(alloc.problem)
    assert run.completed and not run.violations
    assert set(run.executed) == {"move-o2-1", "pick-o2", "move-o2-2", "place-o2"}
    candidates = alloc.candidates(alloc.initial_state())
    assert {r.or_choices[0] for r in candidates} == {("root", 0), ("root", 1)}
    rounds = alloc.rounds(alloc.initial_state())
    assert all(len(r) == 1 for r in rounds)  # one base, and one OR child at a time


def test_sequential_mode_runs_one_behaviour_at_a_time_and_never_skips() -> None:
    tree = {"type": "and", "id": "root", "children": [unit("o1"), unit("o2")]}
    prob = problem(tree, SAME_SPOT, start=(2.0, 0.0))
    seq = simulate(prob, "sequential")
    assert seq.completed and seq.n_steps == 8 and not seq.skipped and seq.parallel == 0
    # each THEN runs start to finish: the whole robot is handed on within it
    assert seq.executed[:4] == ("move-o1-1", "pick-o1", "move-o1-2", "place-o1")
    alloc = MultitaskAllocator(prob, mode=Mode.SEQUENTIAL)
    assert all(n.access is Access.EXCLUSIVE for n in alloc.needs(alloc.initial_state(), "pick-o1"))
    greedy = simulate(prob, "greedy")
    assert greedy.n_steps < seq.n_steps


def test_max_total_rule_completes_and_matches_alg1_on_pick_and_place() -> None:
    objs = {
        "o1": ((1.0, 0.0), (4.0, 0.0)),
        "o2": ((1.0, 0.0), (4.0, 0.1)),
        "o3": ((2.0, 2.0), (0.0, 3.0)),
    }
    prob = problem(None, objs)
    alg1 = run_policy(MultitaskAllocator(prob), lambda a, s: a.allocate(s).granted)
    best = run_policy(
        MultitaskAllocator(prob, and_rule=AndRule.MAX_TOTAL), lambda a, s: a.allocate(s).granted
    )
    assert alg1.completed and best.completed
    assert alg1.executed == best.executed


def test_two_robots_each_allocate_their_own_resources() -> None:
    """Teams (issue 5 §5): per-robot allocators; the peer rule decides who does which
    subtree (here: fixed), ``blocked`` hides the peer's leaves, ``mark_done`` records them."""
    objs = {o: ((float(i), 0.0), (float(i), 3.0)) for i, o in enumerate(("o1", "o2", "o3", "o4"))}
    tree = pick_and_place_tree(list(objs))
    mine = {"r1": {"o1", "o2"}, "r2": {"o3", "o4"}}
    robots = {
        rid: MultitaskAllocator(
            MultitaskProblem(tree, {k: ObjectSpec(k, *v) for k, v in objs.items()}, start)
        )
        for rid, start in (("r1", (0.0, -1.0)), ("r2", (3.0, -1.0)))
    }
    blocked = {
        rid: {
            leaf
            for leaf in tree.leaves
            if not any(leaf.endswith(o) or f"-{o}-" in leaf for o in mine[rid])
        }
        for rid in robots
    }
    states = {rid: a.initial_state() for rid, a in robots.items()}
    for _ in range(20):
        for rid, alloc in robots.items():
            a = alloc.allocate(states[rid], blocked[rid])
            assert all(r.leaf not in blocked[rid] for r in a.granted)
            s = alloc.start(states[rid], a.granted, a.skipped)
            for leaf in a.leaves:
                s = alloc.finish(s, leaf)
            states[rid] = s
            other = "r2" if rid == "r1" else "r1"
            for leaf in a.leaves:
                states[other] = robots[other].mark_done(states[other], leaf)
            for skip in a.skipped:
                states[other] = robots[other].mark_done(states[other], skip)
    assert all(robots[r].is_complete(states[r]) for r in robots)
    assert states["r1"].world.placed == {"o1", "o2"} and states["r2"].world.placed == {"o3", "o4"}


@pytest.mark.parametrize(
    ("mission", "match"),
    [
        ({}, "objects"),
        ({"objects": {"o1": {"position": [0, 0]}}}, "destination"),
        ({"objects": {"o1": {"position": [0, 0], "destination": [1, 1]}}, "start": [0]}, "start"),
        (
            {
                "objects": {"o1": {"position": [0, 0], "destination": [1, 1]}},
                "tree": "AND(WAVE(o1))",
            },
            "not MOVE, PICK or PLACE",
        ),
        (
            {"objects": {"o1": {"position": [0, 0], "destination": [1, 1]}}, "tree": "PICK(o9)"},
            "unknown object",
        ),
        (
            {
                "objects": {"o1": {"position": [0, 0], "destination": [1, 1]}},
                "durations": {"pick": 3},
            },
            "unknown key",
        ),
        (
            {"objects": {"o1": {"position": [0, 0], "destination": [1, 1]}}, "tolerance": 0},
            "tolerance",
        ),
    ],
)
def test_bad_missions_name_the_key(mission: dict[str, Any], match: str) -> None:
    with pytest.raises(SpecificationError, match=match):
        problem_from_mission(mission)


def test_compact_tree_form_works() -> None:
    prob = problem_from_mission(
        {
            "objects": {"o1": {"position": [1, 0], "destination": [2, 0]}},
            "tree": "THEN(MOVE(o1, to=pick), PICK(o1), MOVE(x=2, y=0), PLACE(o1))",
        }
    )
    run = simulate(prob)
    assert run.completed and run.n_steps == 4
    assert tree_from_dict(pick_and_place_tree(["a"]).to_dict()).leaves == (
        "move-a-1",
        "pick-a",
        "move-a-2",
        "place-a",
    )
