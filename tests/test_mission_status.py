"""The one model of a mission's progress (``mission.status``): its body, how readers
merge the word of several publishers, and how the monitor shows it."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.monitor import MonitorState, render_text
from teamtree.agents.runtime.mission_status import (
    ENDED,
    STATES,
    STATUS_KIND,
    MissionBoard,
    MissionStatus,
    MissionStatusError,
    decode_status,
    merge,
    status_message,
)
from teamtree.broker.envelope import decode
from teamtree.broker.topics import parse


def body(state: str, mission: str = "m1", **kw: object) -> dict:
    return {"kind": "tasktree", "state": state, "mission": mission, **kw}


def test_decode_names_the_bad_field() -> None:
    with pytest.raises(MissionStatusError, match=r"\$\.done"):
        decode_status(body("running", done="2"))
    with pytest.raises(MissionStatusError, match="unknown mission state 'exploded'"):
        decode_status(body("exploded"))
    with pytest.raises(MissionStatusError, match="negative"):
        decode_status(body("running", done=-1, total=3))
    ok = decode_status(body("running", done=1, total=3, unit="leaves"))
    assert (ok.done, ok.total, ok.ended) == (1, 3, False)


def test_an_ended_mission_never_runs_again_and_failure_outranks_success() -> None:
    running = MissionStatus("tasktree", "running", done=2, total=3, unit="leaves")
    done = MissionStatus("tasktree", "succeeded", done=3, total=3, unit="leaves")
    judged = MissionStatus("tasktree", "failed", "the world does not show cup at its goal")
    assert merge(done, running) is done  # a late progress message
    shown = merge(done, judged)  # the run's verdict overrules the robots' word
    assert shown.state == "failed" and shown.reason.startswith("the world")
    assert (shown.done, shown.total, shown.unit) == (3, 3, "leaves")  # the counts kept
    later = MissionStatus("tasktree", "timed_out", "after 30 s")
    assert merge(shown, later) is shown  # the first ending's reason stays


def test_a_leaf_finished_as_the_team_stopped_counts_after_the_verdict() -> None:
    """The run's time-out (no counts) came after the robots' 1 of 7; then a robot that
    finished a second leaf as it stopped says 2 of 7: the ended mission shows 2 (as its
    tree does), and a stale progress message after that does not take it back."""
    progress = MissionStatus("tasktree", "running", done=1, total=7, unit="leaves")
    verdict = MissionStatus("tasktree", "timed_out", "the mission timed out")
    shown = merge(merge(None, progress), verdict)
    assert (shown.state, shown.done, shown.total) == ("timed_out", 1, 7)
    last_word = MissionStatus("tasktree", "running", done=2, total=7, unit="leaves")
    shown = merge(shown, last_word)
    assert (shown.state, shown.reason, shown.done) == ("timed_out", "the mission timed out", 2)
    assert merge(shown, progress) is shown


@settings(max_examples=300, deadline=None, print_blob=True)
@given(st.lists(st.sampled_from(STATES), min_size=1, max_size=12))
def test_merge_never_leaves_an_ending(states: list[str]) -> None:
    shown = None
    ended_at = None
    for i, state in enumerate(states):
        shown = merge(shown, MissionStatus("ltl", state, reason=str(i)))
        if state in ENDED and ended_at is None:
            ended_at = i
        if ended_at is not None:
            assert shown.ended, (states, shown)
    failures = [s for s in states if s in ENDED - {"succeeded"}]
    if failures:
        assert shown.state == failures[0], (states, shown)


def test_the_board_shows_the_running_mission_then_the_last_ended() -> None:
    board = MissionBoard()
    board.feed(STATUS_KIND, "queue", body("pending", "m1"), 1)
    board.feed(STATUS_KIND, "r1", body("running", "m1", done=1, total=2, unit="leaves"), 2)
    board.feed(STATUS_KIND, "queue", body("pending", "m2"), 3)
    assert board.current() == "m1"  # the running one, not the newer pending one
    board.feed(STATUS_KIND, "queue", body("cancelled", "m1", reason="cancelled by ops"), 4)
    assert board.current() == "m2"
    view = board.view("m1")
    assert view["ended"] and view["by"] == "queue"
    assert view["headline"] == "CANCELLED: cancelled by ops · 1/2 leaves"
    assert board.feed(STATUS_KIND, "r1", {"kind": 3}, 5) is None  # malformed: ignored


def test_a_run_verdict_is_a_valid_retained_message_of_its_mission() -> None:
    out = status_message("t1", "run", "m9", MissionStatus("kitting", "timed_out", "after 5 s"))
    topic = parse(out.topic)
    assert (topic.agent, topic.channel, topic.recipient, out.retain) == (
        "run",
        "mission_status",
        "m9",
        True,
    )
    env = decode(out.payload, topic=out.topic)
    assert env.kind == STATUS_KIND and decode_status(env.body).mission == "m9"


def feed(state: MonitorState, sender: str, status: MissionStatus, mission: str) -> None:
    out = status_message(state.team, sender, mission, status)
    state.feed(decode(out.payload, topic=out.topic), parse(out.topic))


def test_the_monitor_shows_the_state_and_its_reason_and_a_lost_broker() -> None:
    state = MonitorState("t1")
    state.link(True)
    feed(state, "planner", MissionStatus("ltl", "running", done=3, total=8, unit="plan steps",
                                         detail="formula: 0 of 2 robots through their plan"),
         "m1")  # fmt: skip
    snap = state.snapshot()
    assert snap["connected"] and snap["status"]["state"] == "running"
    text = render_text(snap)
    assert "ltl" in text and "3/8 plan steps" in text and "formula: 0 of 2" in text
    feed(state, "run", MissionStatus("ltl", "failed", "formula NOT satisfied: r2 lost"), "m1")
    snap = state.snapshot()
    assert msgspec.json.decode(msgspec.json.encode(snap))["status"]["ended"] is True
    assert "FAILED: formula NOT satisfied: r2 lost · 3/8 plan steps" in render_text(snap)
    state.feed_sys("$SYS/broker/uptime", b"12 seconds")
    state.link(False)
    text = render_text(state.snapshot())
    assert text.startswith("DISCONNECTED from the broker since")
    assert "broker (stale" in text


def test_the_page_stops_the_leaves_of_a_mission_that_failed() -> None:
    """A robot works a leaf when its mission times out: the page draws that leaf (and
    the goal nodes above it) stopped with nobody on it, says so in the agent's row,
    closes its timeline span and lists the ending under Alerts, once."""
    from teamtree.agents.observers.web import WebState
    from teamtree.broker.envelope import Envelope
    from teamtree.planners.tasktree import parse_tree

    state = WebState("t1")

    def send(sender: str, channel: str, kind: str, body: dict, ts: int) -> None:
        agent = "_" if channel == "mission" else sender
        env = Envelope(kind=kind, sender=sender, hid=ts, ts=ts, hlc=(ts, 0, sender), body=body)
        state.feed(env, parse(f"teamtree/v1/t1/{agent}/{channel}"))

    text = "THEN(cup, sugar)"
    tree = {"kind": "tasktree", "tree": parse_tree(text).to_dict(), "text": text, "mission": "m1"}
    send("pr2", "connection", "presence", {"state": "ONLINE", "kind": "robot"}, 1000)
    send("pr2", "mission", "mission.tree", tree, 1000)
    send("pr2", "state", "node.transition", {"node": "root/0", "status": "working"}, 2000)
    assert state.snapshot()["tree"]["nodes"]["root/0"] == {
        **state.snapshot()["tree"]["nodes"]["root/0"], "state": "working", "by": "pr2"
    }  # fmt: skip
    ended = MissionStatus("tasktree", "timed_out", "after 30 s", total=2, unit="leaves")
    for sender in ("run", "queue"):  # said twice: one alert
        out = status_message("t1", sender, "m1", ended)
        state.feed(decode(out.payload, topic=out.topic), parse(out.topic))
    snap = state.snapshot()
    nodes = snap["tree"]["nodes"]
    assert nodes["root/0"]["state"] == "stopped" and nodes["root/0"]["by"] is None
    assert nodes["root"]["state"] == "stopped" and nodes["root/1"]["state"] != "stopped"
    assert "stopped" in snap["agents"]["pr2"]["status"] and snap["agents"]["pr2"]["node"] is None
    assert all(span["end"] is not None for span in snap["timeline"]["spans"])
    failures = [a for a in snap["alerts"] if a["kind"] == "failure"]
    assert len(failures) == 1 and "TIMED OUT: after 30 s" in failures[0]["text"], snap["alerts"]
    assert snap["status"]["state"] == "timed_out" and "run" not in snap["agents"]


def test_a_mission_cancelled_before_it_ran_does_not_hide_the_one_that_did() -> None:
    board = MissionBoard()
    board.feed(STATUS_KIND, "queue", body("running", "m1"), 1)
    board.feed(STATUS_KIND, "queue", body("pending", "m2"), 2)
    board.feed(STATUS_KIND, "queue", body("cancelled", "m2", reason="before it started"), 3)
    board.feed(STATUS_KIND, "queue", body("succeeded", "m1"), 4)
    assert board.current() == "m1"


def test_the_counts_survive_whichever_ending_comes_first() -> None:
    """Retained statuses come back in any order: the queue's ending (no counts) before
    or after the robots' (with counts), the board shows the counts."""
    counted = MissionStatus("tasktree", "succeeded", "root done", 2, 2, unit="leaves")
    bare = MissionStatus("tasktree", "succeeded", "done in 2.8 s")
    for first, second in ((counted, bare), (bare, counted)):
        shown = merge(merge(None, first), second)
        assert (shown.done, shown.total, shown.unit) == (2, 2, "leaves"), (first, second)
        assert shown.reason == first.reason
