"""Units: what a team of multitask robots divides (planners.multitask.units)."""

from __future__ import annotations

from hypothesis import given, settings

from teamtree.planners.multitask import (
    UNIT_BEHAVIOR,
    MultitaskAllocator,
    MultitaskProblem,
    ObjectSpec,
    adopt_peer_unit,
    pick_and_place_tree,
    unit_of,
    unit_tree,
)
from teamtree.planners.tasktree import NodeKind, TaskController, Tick, parse_tree
from tests.test_tasktree_property import tree_texts


def test_fig4_units_are_the_four_thens() -> None:
    tree = pick_and_place_tree(["o1", "o2", "o3", "o4"])
    units = unit_of(tree)
    assert set(units.values()) == {"task-o1", "task-o2", "task-o3", "task-o4"}
    assert units["move-o2-1"] == units["place-o2"] == "task-o2"
    top = unit_tree(tree)
    assert (
        top.to_string()
        == "AND(" + ", ".join(f"UNIT(leaves=4, unit=task-o{i})" for i in range(1, 5)) + ")"
    )
    assert all(top[u].behavior == UNIT_BEHAVIOR for u in top.leaves)


def test_units_stop_at_the_first_then_or_leaf_below_and_or() -> None:
    tree = parse_tree("AND(THEN(a, AND(b, c)), OR(d, THEN(e, f)), g)")
    units = unit_of(tree)
    assert units == {
        "root/0/0": "root/0", "root/0/1/0": "root/0", "root/0/1/1": "root/0",
        "root/1/0": "root/1/0", "root/1/1/0": "root/1/1", "root/1/1/1": "root/1/1",
        "root/2": "root/2",
    }  # fmt: skip
    top = unit_tree(tree)
    assert top["root/1"].kind is NodeKind.OR  # OR exclusivity carries over to units
    assert sorted(top.leaves) == sorted(set(units.values()))


def test_a_then_at_the_root_is_one_unit() -> None:
    tree = parse_tree("THEN(a, AND(b, c), d)")
    assert set(unit_of(tree).values()) == {"root"}
    assert unit_tree(tree).leaves == ("root",)


@settings(max_examples=200, deadline=None)
@given(text=tree_texts())
def test_units_partition_the_leaves(text: str) -> None:
    tree = parse_tree(text)
    units = unit_of(tree)
    assert set(units) == set(tree.leaves)
    for leaf, unit in units.items():
        assert unit == leaf or unit in tree.ancestors(leaf), (text, leaf, unit)
        assert tree[unit].is_leaf or tree[unit].kind is NodeKind.THEN
        # everything strictly above a unit is an AND or an OR
        assert all(tree[a].kind in (NodeKind.AND, NodeKind.OR) for a in tree.ancestors(unit))
    for unit in set(units.values()):
        assert sorted(tree.leaf_ids(unit)) == sorted(k for k, u in units.items() if u == unit)
    # the unit tree's peer rule sees every unit as a leaf it can claim
    top = unit_tree(tree)
    ctl = TaskController(top, "me", capacity=len(top.leaves), auto_select=False)
    assert not ctl.handle(Tick(), (1, 0, "me"))  # auto_select=False claims nothing on ticks
    assert any(ctl.allowed(u) for u in top.leaves)


def test_adopting_a_peer_unit_marks_its_leaves_and_objects() -> None:
    objects = {
        "o1": ObjectSpec("o1", (1.0, 0.0), (1.0, 2.0)),
        "o2": ObjectSpec("o2", (3.0, 0.0), (3.0, 2.0)),
    }
    alloc = MultitaskAllocator(MultitaskProblem(pick_and_place_tree(["o1", "o2"]), objects))
    state = adopt_peer_unit(alloc, alloc.initial_state(), unit_leaves("task-o2", alloc))
    assert state.world.placed == {"o2"}
    assert alloc.satisfied(state, "task-o2") and not alloc.satisfied(state, "task-o1")
    offered = {r.leaf for r in alloc.candidates(state)}
    assert offered and all(leaf.split("-")[1] == "o1" for leaf in offered)
    again = adopt_peer_unit(alloc, state, unit_leaves("task-o2", alloc))
    assert again == state  # idempotent


def unit_leaves(unit: str, alloc: MultitaskAllocator) -> tuple[str, ...]:
    return alloc.tree.leaf_ids(unit)


def test_units_on_the_same_route_are_bundled_as_far_as_grippers_go() -> None:
    from teamtree.agents.multitask.robot import multitask_problem
    from teamtree.agents.runtime.config import load_config
    from teamtree.planners.multitask import co_located_units
    from tests.conftest import REPO

    problem = multitask_problem(load_config(REPO / "configs" / "pr2_multitask_team.toml"))
    alloc = MultitaskAllocator(problem)
    state = alloc.initial_state()
    every = [f"task-o{i}" for i in range(1, 7)]

    def move(leaf: str):
        return alloc.request(state, leaf)

    # o1 and o2: same pick spot, same destination -> bundled (two grippers, room for one)
    assert co_located_units(alloc, state, move("move-o1-1"), every) == ["task-o2"]
    # o5 and o6 share a pick spot but go to opposite ends -> not bundled
    assert co_located_units(alloc, state, move("move-o5-1"), every) == []
    # not a move: nothing
    assert co_located_units(alloc, state, alloc.request(state, "pick-o1"), every) == []
    # a gripper already holding an object leaves no room
    held = alloc.start(state, [move("move-o3-1")])
    held = alloc.finish(held, "move-o3-1")
    held = alloc.start(held, [alloc.request(held, "pick-o3")])
    held = alloc.finish(held, "pick-o3")
    assert co_located_units(alloc, held, alloc.request(held, "move-o1-1"), every) == []
