"""The web view's pure parts: the team picture (WebState) and the people's work
(HumanWork, human_rows, the timeline's person panels), fed envelopes as the broker
delivers them, including garbage."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.human_work import HumanWork, human_rows
from teamtree.agents.observers.timeline import node_intervals
from teamtree.agents.observers.web import MAX_ALERTS, MAX_SPANS, WebState
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import parse
from teamtree.planners.tasktree import parse_tree
from tests.conftest import teamtree_cmd

TEAM = "t1"
TREE = parse_tree("THEN(AND(burger, cup), OR(tea_pot, sugar))").to_dict()
MISSION = {"kind": "tasktree", "tree": TREE, "text": "THEN(AND(burger, cup), OR(tea_pot, sugar))"}
BURGER, CUP, TEA, SUGAR = "root/0/0", "root/0/1", "root/1/0", "root/1/1"


def env(sender: str, kind: str, body, ts: int, hid: int = 1) -> Envelope:
    return Envelope(kind=kind, sender=sender, hid=hid, ts=ts, hlc=(ts, 0, sender), body=body)


def feed(state: WebState, sender: str, channel: str, kind: str, body, ts: int) -> None:
    agent = "_" if channel in ("mission", "dialog") and kind != "dialog.resolved" else sender
    state.feed(env(sender, kind, body, ts), parse(f"teamtree/v1/{TEAM}/{agent}/{channel}"))


def world(ts: int, hand: dict, at_goal: set[str]) -> dict:
    """A ``world.state`` body (``WorldStateBody``): alice's hand `hand`, objects `at_goal`."""
    objects = {
        o: {"shape": "box", "dims": [0.05, 0.05, 0.05], "position": [0.5, 0.0, 0.75],
            "at_goal": o in at_goal, "held_by": None}
        for o in ("burger", "cup", "tea_pot", "sugar")
    }  # fmt: skip
    hands = {"alice": {"position": [1.0, 0.0, 0.9], **hand}}
    robots = {"pr2": {"name": "pr2", "arm": [0.0, 0.0, 0.9]}}
    return {"t": ts / 1000, "objects": objects, "robots": robots, "hands": hands, "violations": 0}


def story(state: WebState) -> None:
    """pr2 places the burger; alice reaches for the cup, holds it and places it."""
    feed(state, "pr2", "connection", "presence", {"state": "ONLINE", "kind": "robot"}, 1000)
    feed(state, "alice", "factsheet", "factsheet", {"kind": "human", "hand": "alice"}, 1000)
    feed(state, "pr2", "mission", "mission.tree", MISSION, 1000)
    feed(state, "pr2", "state", "node.transition", {"node": BURGER, "status": "working"}, 2000)
    feed(
        state,
        "world",
        "state",
        "world.state",
        world(2500, {"target": "cup", "holding": None}, set()),
        2500,
    )
    feed(
        state,
        "world",
        "state",
        "world.state",
        world(3000, {"target": "cup", "holding": "cup"}, set()),
        3000,
    )
    feed(state, "pr2", "state", "node.transition", {"node": BURGER, "status": "done"}, 4000)
    feed(
        state,
        "world",
        "state",
        "world.state",
        world(5000, {"target": None, "holding": None}, {"burger", "cup"}),
        5000,
    )


def test_tree_states_workers_and_the_persons_work() -> None:
    state = WebState(TEAM)
    story(state)
    snap = state.snapshot(now_ms=6000)
    nodes = snap["tree"]["nodes"]
    assert nodes[BURGER]["state"] == "done" and nodes[BURGER]["by"] == "pr2"
    assert nodes[CUP]["state"] == "done" and nodes[CUP]["by"] == "alice"
    assert nodes["root/0"]["state"] == "done"
    assert nodes[TEA]["state"] == nodes[SUGAR]["state"] == "active"  # the OR is open now
    assert nodes["root"]["state"] == "active" and not snap["mission"]["complete"]
    spans = {(s["agent"], s["node"]): (s["start"], s["end"]) for s in snap["timeline"]["spans"]}
    assert spans == {("pr2", BURGER): (2000, 4000), ("alice", CUP): (2500, 5000)}
    assert snap["agents"]["alice"]["done"] == [CUP]
    assert snap["agents"]["pr2"]["since_ms"] == 1000
    json.dumps(snap)


def test_an_or_branch_completes_the_mission_and_the_clock_stops() -> None:
    state = WebState(TEAM)
    story(state)
    feed(state, "pr2", "state", "node.transition", {"node": SUGAR, "status": "working"}, 6000)
    feed(state, "pr2", "state", "node.transition", {"node": SUGAR, "status": "done"}, 7000)
    snap = state.snapshot(now_ms=60_000)
    assert snap["mission"]["complete"] and snap["mission"]["done"] == 3
    assert snap["timeline"]["now"] == 7000


def test_a_broken_connection_is_an_alert_with_its_time() -> None:
    state = WebState(TEAM)
    feed(state, "pr2", "connection", "presence", {"state": "ONLINE"}, 1000)
    feed(state, "pr2", "connection", "presence", {"state": "CONNECTION_BROKEN"}, 9000)
    snap = state.snapshot(now_ms=10_000)
    assert snap["agents"]["pr2"]["presence"] == "CONNECTION_BROKEN"
    assert snap["agents"]["pr2"]["since_ms"] == 9000
    assert [a["kind"] for a in snap["alerts"]] == ["presence"]


def test_conceding_is_not_done_and_beliefs_stand_in_without_a_world() -> None:
    work = HumanWork()
    work.feed("mission.tree", "pr2", MISSION, 0)
    events = work.feed("tom.belief", "pr2", {"human": "bob", "active": CUP, "done": []}, 100)
    assert [(e.person, e.node, e.started) for e in events] == [("bob", CUP, True)]
    events = work.feed("tom.belief", "pr2", {"human": "bob", "active": None, "done": []}, 200)
    assert [(e.node, e.started, e.done) for e in events] == [(CUP, False, False)]
    assert work.done_by == {}


@pytest.mark.parametrize("done", [True, 5, "cup", {"cup": 1}])
def test_a_belief_whose_done_is_not_a_list_counts_nothing_done(done: object) -> None:
    """A peer's (or a forger's) belief with a malformed ``done`` moves the person's
    work as its ``active`` says and marks nothing done; it never raises."""
    work = HumanWork()
    work.feed("mission.tree", "pr2", MISSION, 0)
    events = work.feed("tom.belief", "pr2", {"human": "bob", "active": CUP, "done": done}, 100)
    assert [(e.person, e.node, e.started, e.done) for e in events] == [("bob", CUP, True, False)]
    assert work.done_by == {}


@pytest.mark.parametrize("done", [True, 5, {"cup": 1}])
def test_a_snapshot_whose_done_is_not_a_list_marks_nothing_done(done: object) -> None:
    """A forged ``node.snapshot`` with a malformed ``done`` changes no leaf on the
    page or in the monitor, and never raises out of the view."""
    state = WebState(TEAM)
    feed(state, "pr2", "mission", "mission.tree", MISSION, 1000)
    feed(state, "pr2", "state", "node.snapshot", {"working": [], "done": done}, 2000)
    snap = state.snapshot(now_ms=3000)
    assert all(n["state"] != "done" for n in snap["tree"]["nodes"].values())
    assert state.monitor.snapshot()["mission"]["done"] == 0


def test_human_rows_and_the_timeline_panel_of_a_person() -> None:
    records = []
    state = WebState(TEAM)
    story(state)
    for e in [
        ("alice", "factsheet", {"kind": "human", "hand": "alice"}, 1000),
        ("pr2", "mission.tree", MISSION, 1000),
        ("pr2", "node.transition", {"node": BURGER, "status": "working"}, 2000),
        ("world", "world.state", world(2500, {"target": "cup", "holding": None}, set()), 2500),
        ("pr2", "node.transition", {"node": BURGER, "status": "done"}, 4000),
        (
            "world",
            "world.state",
            world(5000, {"target": None, "holding": None}, {"burger", "cup"}),
            5000,
        ),
    ]:
        records.append({"sender": e[0], "kind": e[1], "body": e[2], "ts": e[3]})
    rows = human_rows(records)
    assert rows == [{"agent": "alice", "node": CUP, "start_ms": 2500, "end_ms": 5000,
                     "stop_ms": 5000, "human": True}]  # fmt: skip
    spans, _ = node_intervals(records)
    assert spans["alice (person)"][CUP] == [(0.5, 3.0, "working"), (3.0, 3.0, "done")]
    assert spans["pr2"][BURGER] == [(0.0, 2.0, "working"), (2.0, 3.0, "done")]


messages = st.tuples(
    st.sampled_from(["pr2", "baxter", "alice", "world"]),
    st.sampled_from(["state", "connection", "factsheet", "mission", "dialog", "events"]),
    st.sampled_from(["node.transition", "presence", "factsheet", "mission.tree", "world.state",
                     "tom.belief", "dialog.resolved", "node.claim_decided", "world.violation"]),
    st.one_of(
        st.none(), st.integers(), st.text(max_size=5),
        st.dictionaries(
            st.sampled_from(["node", "status", "state", "tree", "hands", "objects", "human",
                             "active", "done", "won", "kind", "hand"]),
            st.one_of(st.none(), st.text(max_size=6), st.sampled_from([BURGER, CUP, TEA]),
                      st.sampled_from(["working", "done", "inactive", "ONLINE"]),
                      st.just(TREE), st.lists(st.sampled_from([BURGER, CUP]), max_size=2),
                      st.dictionaries(st.sampled_from(["alice", "cup"]),
                                      st.dictionaries(st.sampled_from(["target", "holding", "at_goal"]),
                                                      st.sampled_from(["cup", None, True]))),
                      st.booleans()),
            max_size=5,
        ),
    ),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=60))
def test_any_message_sequence_keeps_the_picture_whole(batch) -> None:
    """Garbage never raises, the snapshot is JSON, and the history stays capped."""
    state = WebState(TEAM)
    for ts, (sender, channel, kind, body) in enumerate(batch, 1000):
        feed(state, sender, channel, kind, body, ts)
    snap = state.snapshot(now_ms=99_999)
    json.dumps(snap)
    assert len(snap["timeline"]["spans"]) <= MAX_SPANS and len(snap["alerts"]) <= MAX_ALERTS
    for node in snap["tree"]["nodes"].values():
        assert node["state"] in ("inactive", "active", "working", "done", "skipped")


def test_spans_are_capped_over_a_long_mission() -> None:
    state = WebState(TEAM)
    feed(state, "pr2", "mission", "mission.tree", MISSION, 0)
    for i in range(3 * MAX_SPANS):
        status = "working" if i % 2 == 0 else "inactive"
        feed(state, "pr2", "state", "node.transition", {"node": CUP, "status": status}, i)
    assert len(state.snapshot(now_ms=10**6)["timeline"]["spans"]) == MAX_SPANS


def test_web_command_rejects_a_password_without_a_user() -> None:
    out = subprocess.run(
        teamtree_cmd("web", "--team", "t1", "--password", "x"), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert out.returncode == 2 and "--password needs --username" in out.stderr


def test_ltl_plans_are_marked_off_step_by_step_and_schedules_kept() -> None:
    state = WebState(TEAM)
    plan = {"robot": "DR", "actions": ["goto_c9", "pick", "drop"], "cost": 30.0}
    body = {"epoch": 0, "seq": 1, "strategy": "offline", "plan": plan}
    state.feed(
        env("planner", "ltl.plan", body, 1000), parse(f"teamtree/v1/{TEAM}/planner/ltl.plan/DR")
    )
    for i, kind in enumerate(["ltl.step", "ltl.step"]):
        feed(state, "DR", "ltl.trace", kind, {"epoch": 0, "seq": 1, "index": i + 1}, 2000 + i)
    feed(state, "DR", "ltl.trace", "ltl.step", {"epoch": 0, "seq": 0, "index": 9}, 2500)  # old plan
    assert state.snapshot()["plans"]["DR"]["steps"] == 2
    feed(state, "DR", "ltl.status", "ltl.done", {"epoch": 0, "seq": 1}, 3000)
    assert state.snapshot()["plans"]["DR"]["done"]
    sched = {"start": {"t0": 0.0, "t1": 5.0}, "finish": {"t0": 5.0, "t1": 9.0}, "makespan": 9.0,
             "sequence": {"robot": ["t0"], "human": ["t1"]}}  # fmt: skip
    feed(state, "allocator", "reply", "allocation.schedule", {"schedule": sched}, 4000)
    later = {**sched, "sequence": {"robot": ["t1"]}, "makespan": 4.0}
    feed(state, "allocator", "reply", "allocation.schedule", {"schedule": later}, 5000)
    snap = state.snapshot()
    assert snap["first_schedule"]["rows"]["human"] == [{"task": "t1", "start": 5.0, "finish": 9.0}]
    assert snap["schedule"]["rows"] == {"robot": [{"task": "t1", "start": 5.0, "finish": 9.0}]}


def test_the_header_counts_every_leaf_done_when_each_robot_knew_only_its_own() -> None:
    """Each robot says 1 of 4 done (its own leaf: they stopped before hearing of each
    other's), then the run says the mission timed out: the page's status counts the 2
    leaves its tree shows done, as the tree does."""
    state = WebState(TEAM)
    feed(state, "pr2", "mission", "mission.tree", {**MISSION, "mission": "m1"}, 1000)
    for robot, leaf, ts in (("pr2", BURGER, 2000), ("baxter", CUP, 2100)):
        feed(state, robot, "state", "node.transition", {"node": leaf, "status": "working"}, ts)
        feed(state, robot, "state", "node.transition", {"node": leaf, "status": "done"}, ts + 500)
        running = {"kind": "tasktree", "state": "running", "done": 1, "total": 4,
                   "unit": "leaves", "mission": "m1"}  # fmt: skip
        feed(state, robot, "mission_status", "mission.status", running, ts + 500)
    verdict = {"kind": "tasktree", "state": "timed_out", "reason": "after 6 s", "mission": "m1"}
    feed(state, "run", "mission_status", "mission.status", verdict, 3000)
    snap = state.snapshot()
    assert snap["status"]["state"] == "timed_out"
    assert (snap["status"]["done"], snap["status"]["total"]) == (2, 4), snap["status"]
    assert "2/4 leaves" in snap["status"]["headline"], snap["status"]
    assert snap["mission"]["done"] == 2


def test_the_monitor_counts_as_the_page_and_forgets_another_missions_leaves() -> None:
    """The terminal monitor's status line counts the leaves its tree shows done, as the
    page does (``monitor --json`` is this snapshot); a new mission's tree starts again
    at none done, although its leaves have the same ids."""
    state = WebState(TEAM)
    feed(state, "pr2", "mission", "mission.tree", {**MISSION, "mission": "m1"}, 1000)
    for robot, leaf, ts in (("pr2", BURGER, 2000), ("baxter", CUP, 2100)):
        feed(state, robot, "state", "node.transition", {"node": leaf, "status": "done"}, ts)
        running = {"kind": "tasktree", "state": "running", "done": 1, "total": 4,
                   "unit": "leaves", "mission": "m1"}  # fmt: skip
        feed(state, robot, "mission_status", "mission.status", running, ts)
    snap = state.monitor.snapshot()
    assert snap["mission"]["done"] == 2
    assert (snap["status"]["done"], snap["status"]["total"]) == (2, 4), snap["status"]
    assert "2/4 leaves" in snap["status"]["headline"], snap["status"]
    feed(state, "pr2", "mission", "mission.tree", {**MISSION, "mission": "m2"}, 5000)
    snap = state.monitor.snapshot()
    assert snap["mission"]["done"] == 0, snap["mission"]


async def test_an_observer_that_cannot_read_a_body_counts_it_and_still_records_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever body a view fails on, the observer (monitor, web, recorder) stays up:
    the message is counted as unreadable and its hook, a recorder's file, still gets it."""
    from teamtree.agents.observers.monitor import MonitorState, TeamObserver
    from teamtree.broker.endpoint import Endpoint
    from teamtree.broker.envelope import encode
    from teamtree.broker.hlc import HlcStamp
    from teamtree.broker.messages import Incoming

    def broken_feed(self, *args, **kwargs) -> None:
        raise RuntimeError("a body no view expected")

    monkeypatch.setattr(MonitorState, "feed", broken_feed)
    hooked: list[str] = []
    observer = TeamObserver(
        Endpoint("127.0.0.1", 1), TEAM, resync=False,
        on_message=lambda e, t, m: hooked.append(e.kind),
    )  # fmt: skip
    body = {"working": [], "done": []}
    stamped = Envelope(kind="node.snapshot", sender="pr2", hid=1, ts=2000,
                       hlc=HlcStamp(2000, 0, "pr2"), body=body)  # fmt: skip
    payload = encode(stamped)
    await observer._receive(Incoming(f"teamtree/v1/{TEAM}/pr2/state", payload, False, 1))
    assert observer.state.dropped["unreadable"] == 1
    assert hooked == ["node.snapshot"]
