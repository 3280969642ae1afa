"""The integration tests' membership check takes an observer's re-sync requests, on the
topic the runtime really publishes them on, and nothing else the observer sends."""

from __future__ import annotations

import pytest

from teamtree.agents.runtime.resync import SYNC_CHANNEL
from teamtree.broker import topics
from tests.conftest import assert_observer_kept_out

TEAM = "tea-party-s1"


def test_an_observers_resync_request_is_not_membership() -> None:
    recorded = [
        {
            "sender": "echo-1a2b",
            "topic": topics.build(TEAM, None, SYNC_CHANNEL),
            "kind": "sync.request",
        },
        {"sender": "pr2", "topic": topics.build(TEAM, "pr2", "state"), "kind": "node.transition"},
    ]
    assert_observer_kept_out(recorded, "echo", TEAM)


def test_anything_else_an_observer_sends_is_caught() -> None:
    recorded = [
        {
            "sender": "echo-1a2b",
            "topic": topics.build(TEAM, "echo-1a2b", "state"),
            "kind": "node.transition",
        }
    ]
    with pytest.raises(AssertionError):
        assert_observer_kept_out(recorded, "echo", TEAM)


def test_a_sender_outside_the_config_is_caught() -> None:
    recorded = [
        {
            "sender": "intruder",
            "topic": topics.build(TEAM, "intruder", "state"),
            "kind": "node.transition",
        }
    ]
    with pytest.raises(AssertionError):
        assert_observer_kept_out(recorded, "echo", TEAM)
