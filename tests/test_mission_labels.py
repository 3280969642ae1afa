"""Labels of a mission.tree body for observers (agents.mission_labels)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.mission_labels import mission_labels, tree_labels
from teamtree.agents.treeprotocol.mission_wire import mission_tree_body
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


def test_mission_labels_reads_a_whole_body_and_ignores_a_malformed_one() -> None:
    tree = parse_tree("THEN(PLACE(object=cup), PLACE(object=tea))")
    labels, leaves = mission_labels(mission_tree_body(tree)) or ({}, [])
    assert [labels[leaf] for leaf in leaves] == ["PLACE(cup)", "PLACE(tea)"]
    assert mission_labels({"tree": tree.to_dict()}) is None  # no kind, no text
    assert mission_labels({**mission_tree_body(tree), "tree": {"id": 3}}) is None


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["id", "kind", "text", "tree", "children", "behavior", "params", "type"]), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(_values)
def test_mission_labels_never_raises(body: object) -> None:
    found = mission_labels(body)
    assert found is None or set(found[1]) <= set(found[0])
