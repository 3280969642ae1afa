"""Labels of a mission.tree body for observers (agents.mission_labels)."""

from __future__ import annotations

from hypothesis import given, settings

from teamtree.agents.observers.mission_labels import tree_labels
from teamtree.planners.multitask import pick_and_place_tree
from teamtree.planners.tasktree import parse_tree
from tests.test_wire import bodies


def test_labels_match_the_tree_nodes_own() -> None:
    for tree in (
        pick_and_place_tree(["o1", "o2"]),
        parse_tree("AND(THEN(cup, AND(sugar, tea_pot)), OR(MOVE(x=1, y=2), apple))"),
    ):
        labels, leaves = tree_labels(tree.to_dict())
        assert leaves == list(tree.leaves)
        assert {leaf: labels[leaf] for leaf in leaves} == {
            leaf: tree[leaf].label for leaf in tree.leaves
        }
    labels, _ = tree_labels(pick_and_place_tree(["o1"]).to_dict())
    assert labels["move-o1-1"] == "MOVE(o1, to=pick)" and labels["task-o1"] == "then"


@settings(max_examples=300, deadline=None)
@given(body=bodies)
def test_hostile_trees_give_labels_not_errors(body) -> None:
    labels, leaves = tree_labels(body)
    assert set(leaves) <= set(labels)
