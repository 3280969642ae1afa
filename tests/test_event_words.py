"""The monitor's and the team page's "now" column says in words what a member did:
no raw event kind (``ltl.done``, ``behaviour.started``) reaches the operator, and no
member is shown working a leaf unless it is ONLINE and its mission still runs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers import MonitorState, event_words
from teamtree.agents.observers.monitor import render_text
from teamtree.agents.observers.web import WebState
from teamtree.agents.runtime.mission_status import MissionStatus, status_message
from teamtree.agents.runtime.presence_wire import Presence
from teamtree.broker import Envelope, HlcStamp
from teamtree.broker.envelope import decode
from teamtree.broker.topics import parse
from teamtree.planners.tasktree import parse_tree

TEAM = "t1"
TEXT = "THEN(cup, tea_pot)"
MISSION = {"kind": "tasktree", "tree": parse_tree(TEXT).to_dict(), "text": TEXT, "mission": "m1"}
CUP, TEA = "root/0", "root/1"


def _feed(state: MonitorState, sender: str, channel: str, kind: str, n: int, body=None) -> None:
    body = {"seq": n} if body is None else body
    env = Envelope(kind, sender, n, 1000 + n, HlcStamp(1000 + n, 0, sender), body)
    agent = "_" if channel == "mission" else sender
    state.feed(env, parse(f"teamtree/v1/{TEAM}/{agent}/{channel}"))


def _status(state: MonitorState | WebState, mission: str, status: MissionStatus) -> None:
    out = status_message(TEAM, "run", mission, status)
    state.feed(decode(out.payload, topic=out.topic), parse(out.topic))


def _working_pr2(state: MonitorState | WebState, presence: str = "ONLINE") -> None:
    """pr2, `presence`, works PLACE(tea_pot) of a running mission."""
    _feed(state, "pr2", "connection", "presence", 1, {"state": "ONLINE", "kind": "robot"})
    _feed(state, "pr2", "mission", "mission.tree", 2, MISSION)
    _status(state, "m1", MissionStatus("tasktree", "running", total=2, unit="leaves"))
    _feed(state, "pr2", "state", "node.transition", 3, {"node": TEA, "status": "working"})
    if presence != "ONLINE":
        _feed(state, "pr2", "connection", "presence", 4, {"state": presence})


def _agents(state: MonitorState | WebState) -> dict:
    return state.snapshot()["agents"]


def test_the_now_column_reads_in_words() -> None:
    state = MonitorState(TEAM)
    _feed(state, "DR", "ltl.status", "ltl.done", 1)
    _feed(state, "cobot", "events", "kitting.done", 2)
    _feed(state, "pr2-driver", "events", "behaviour.started", 3)
    assert state.row("DR").status == "finished its LTL task"
    assert state.row("cobot").status == "finished the kit"
    assert state.row("pr2-driver").status == "started a behaviour"


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[a-z_]{1,12}(\.[a-z_]{1,12}){0,3}", fullmatch=True))
def test_no_kind_is_shown_raw(kind: str) -> None:
    words = event_words(kind)
    assert words and "." not in words and "_" not in words, (kind, words)


def test_an_online_member_of_a_running_mission_is_shown_working() -> None:
    state = MonitorState(TEAM)
    _working_pr2(state)
    assert _agents(state)["pr2"]["status"] == "working PLACE(tea_pot)"


@pytest.mark.parametrize("presence", [p.value for p in Presence if p is not Presence.ONLINE])
def test_a_member_not_online_is_shown_stopped_not_working(presence: str) -> None:
    """The monitor's row (and its terminal page) and the team page's row of a robot
    that went OFFLINE, broke its connection (killed) or is of unknown presence while
    it held a leaf: the leaf is stopped, and why."""
    monitor, page = MonitorState(TEAM), WebState(TEAM)
    for state in (monitor, page):
        _working_pr2(state, presence)
        row = _agents(state)["pr2"]
        assert row["presence"] == presence
        assert row["status"] == f"stopped PLACE(tea_pot) ({presence})", row
    assert "working" not in render_text(monitor.snapshot())


@pytest.mark.parametrize("ending", ["succeeded", "failed", "timed_out", "cancelled"])
def test_no_member_is_shown_working_once_the_mission_ended(ending: str) -> None:
    state = MonitorState(TEAM)
    _working_pr2(state)
    _status(state, "m1", MissionStatus("tasktree", ending, "it ended"))
    assert _agents(state)["pr2"]["status"] == "stopped PLACE(tea_pot) (the mission ended)"
    assert "working" not in render_text(state.snapshot())


def test_a_snapshot_without_the_leaf_ends_its_work_in_words() -> None:
    """A robot worked PLACE(tea_pot) when its last mission ended; its next run's first
    snapshot works nothing, and then it is killed: its row says it let the leaf go, not
    that it still works PLACE(tea_pot); a later snapshot that has it done says so."""
    for state in (MonitorState(TEAM), WebState(TEAM)):
        _working_pr2(state)
        snapshot = {"agent": "pr2", "done": [CUP], "working": None}
        _feed(state, "pr2", "snapshot", "node.snapshot", 5, snapshot)
        _feed(state, "pr2", "connection", "presence", 6, {"state": "CONNECTION_BROKEN"})
        row = _agents(state)["pr2"]
        assert row["node"] is None and row["status"] == "released PLACE(tea_pot)", row
        _feed(state, "pr2", "connection", "presence", 7, {"state": "ONLINE", "kind": "robot"})
        snapshot = {"agent": "pr2", "done": [CUP], "working": TEA}
        _feed(state, "pr2", "snapshot", "node.snapshot", 8, snapshot)
        assert _agents(state)["pr2"]["status"] == "working PLACE(tea_pot)"
        snapshot = {"agent": "pr2", "done": [CUP, TEA], "working": None}
        _feed(state, "pr2", "snapshot", "node.snapshot", 9, snapshot)
        assert _agents(state)["pr2"]["status"] == "done PLACE(tea_pot)"
