"""The integration tests' membership check takes an observer's re-sync requests, on the
topic the runtime really publishes them on, and nothing else the observer sends."""

from __future__ import annotations

import pytest

from teamtree.agents.runtime.resync import SYNC_CHANNEL
from teamtree.broker import topics
from tests.conftest import assert_observer_kept_out

TEAM = "tea-party-s1"


def _record(sender: str, agent: str | None, channel: str, kind: str) -> dict[str, str]:
    return {"sender": sender, "topic": topics.build(TEAM, agent, channel), "kind": kind}


def test_an_observers_resync_request_is_not_membership() -> None:
    recorded = [
        _record("echo-1a2b", None, SYNC_CHANNEL, "sync.request"),
        _record("pr2", "pr2", "state", "node.transition"),
    ]
    assert_observer_kept_out(recorded, "echo", TEAM)


@pytest.mark.parametrize(
    "sender", ["echo-1a2b", "intruder"], ids=["the observer publishes", "not in the config"]
)
def test_anything_else_on_the_wire_is_caught(sender: str) -> None:
    recorded = [_record(sender, sender, "state", "node.transition")]
    with pytest.raises(AssertionError):
        assert_observer_kept_out(recorded, "echo", TEAM)
