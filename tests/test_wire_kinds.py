"""The kinds teamtree sends (``wire_kinds``), their schemas and channel names: every
kind in the docs' message tables is known (so ``teamtree echo --kind`` never refuses a
real one), every declared body type is a known kind's, and every schema is a valid
JSON Schema."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest

from teamtree.agents.observers.echo_filter import EchoFilter
from teamtree.agents.observers.record_channels import channel_topic, record_schema
from teamtree.agents.observers.wire_kinds import KNOWN_KINDS, _types, kinds_matching
from teamtree.broker import ConfigError

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _documented_kinds() -> set[str]:
    """Kinds in the ``kind`` column (the second) of the docs' message tables."""
    found = set()
    for path in DOCS.glob("*.md"):
        in_table = False
        for line in path.read_text().splitlines():
            if not line.startswith("|"):
                in_table = False
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if not in_table:  # a table's header row
                in_table = len(cells) > 1 and cells[1].lower() == "kind"
                continue
            for name in re.findall(r"`([a-z][a-z0-9_]*\.[a-z0-9_.\\|]+)`", cells[1]):
                parts = name.replace("\\|", "|").split("|")
                stem = parts[0].rsplit(".", 1)[0]
                found |= {parts[0], *(f"{stem}.{p}" for p in parts[1:])}
    return found


def test_every_kind_the_docs_list_is_known() -> None:
    documented = _documented_kinds()
    assert {"node.transition", "mission.result", "kitting.plan", "favor.grant"} <= documented
    assert documented - KNOWN_KINDS == set()


def test_every_declared_body_type_is_a_known_kind() -> None:
    assert set(_types()) <= KNOWN_KINDS


@pytest.mark.parametrize("kind", sorted(KNOWN_KINDS))
def test_each_kind_has_a_valid_json_schema(kind: str) -> None:
    schema = record_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["kind"] == {"const": kind}


def test_channel_names_are_the_topic_below_the_team_then_the_kind() -> None:
    assert (
        channel_topic("teamtree/v1/t/pr2/state", "node.transition") == "/pr2/state/node.transition"
    )
    assert channel_topic("teamtree/v1/t/_/mission", "mission.tree") == "/_/mission/mission.tree"
    assert channel_topic("teamtree/v1/t/pr2/claims/bx", "node.claim") == "/pr2/claims/bx/node.claim"


def test_kind_patterns_match_known_kinds_only() -> None:
    assert kinds_matching("node.claim*") == ["node.claim", "node.claim_decided", "node.claim_reply"]
    assert kinds_matching("robot.*") == []
    with pytest.raises(ConfigError, match="is no kind of message teamtree sends"):
        EchoFilter.parse(kinds=["robot.*"])
