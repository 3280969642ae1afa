"""``mission.tree`` is typed: every shipped task-tree config's tree goes out and comes
back equal, and any body decodes or raises MissionWireError naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.config import load_config
from teamtree.agents.treeprotocol.mission_config import mission_tree
from teamtree.agents.treeprotocol.mission_wire import (
    MissionTreeBody,
    MissionWireError,
    decode_mission_tree,
    mission_tree_body,
    tree_from_body,
)
from teamtree.planners.tasktree import parse_tree
from tests.test_protocol_docs import body_of, braces, fields, keys

REPO = Path(__file__).resolve().parent.parent
TREE_CONFIGS = ["tea_party_s1.toml", "tea_party_s2.toml", "tea_party_s3.toml", "human_tea.toml"]


@pytest.mark.parametrize("name", TREE_CONFIGS)
def test_a_configs_tree_round_trips_over_the_wire(name: str) -> None:
    tree = mission_tree(load_config(REPO / "configs" / name))
    body = msgpack.unpackb(msgpack.packb(mission_tree_body(tree)), raw=False)
    back = tree_from_body(body)
    assert back.to_dict() == tree.to_dict() and back.to_string() == tree.to_string()


def test_errors_name_the_field() -> None:
    body = mission_tree_body(parse_tree("THEN(cup, OR(a, b))"))
    body["tree"]["children"][1]["children"][0]["id"] = 7
    with pytest.raises(MissionWireError, match=r"\$\.tree\.children\[1\]\.children\[0\]\.id"):
        decode_mission_tree(body)
    with pytest.raises(MissionWireError, match="missing required field `text`"):
        decode_mission_tree({"kind": "tasktree", "tree": {"id": "root"}})


def test_protocol_md_row_matches_the_type() -> None:
    documented = keys(braces(body_of(REPO / "docs" / "protocol.md", "mission.tree")))
    assert set(documented) == fields(MissionTreeBody)


scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=4)
values = st.recursive(
    scalars,
    lambda v: (
        st.lists(v, max_size=3)
        | st.dictionaries(st.sampled_from(["id", "type", "children", "behavior", "params"]), v)
    ),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None)
@given(values)
def test_any_tree_decodes_or_raises_mission_wire_error(tree: Any) -> None:
    try:
        tree_from_body({"kind": "tasktree", "tree": tree, "text": ""})
    except MissionWireError as exc:
        assert "mission.tree" in str(exc)
