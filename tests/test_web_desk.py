"""The web view's new pure parts, without a broker: the missions table and mission
text checks of the missions desk, and what a cobot expects of its person (seed 001),
fed the messages a kitting run publishes, and garbage."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.web import MAX_MISSIONS, WebState
from teamtree.agents.observers.web.expectations import KittingExpectations, spot_label
from teamtree.agents.observers.web.missions import DeskError, mission_files, mission_from_toml
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import parse
from tests.conftest import REPO

TEAM = "t1"


def feed(state: WebState, sender: str, channel: str, kind: str, body, ts: int) -> None:
    envelope = Envelope(kind=kind, sender=sender, hid=ts, ts=ts, hlc=(ts, 0, sender), body=body)
    state.feed(envelope, parse(f"teamtree/v1/{TEAM}/{sender}/{channel}"))


def row(mission: str, state: str, **extra) -> dict:
    return {"id": mission, "kind": "tasktree", "state": state, "submitted_ms": 1, **extra}


def test_the_queue_table_and_who_serves_it() -> None:
    state = WebState(TEAM)
    assert state.snapshot()["missions"] is None and state.mission_queues() == []
    feed(state, "queue", "connection", "presence", {"state": "ONLINE", "kind": "mission_queue"}, 1)
    feed(state, "queue", "factsheet", "factsheet", {"kind": "mission_queue"}, 2)
    table = [row("m1", "done", summary="done in 3.0 s"), row("m2", "cancelled", reason="by x")]
    feed(state, "queue", "missions", "mission.table", {"missions": [*table, "junk", {"id": 3}]}, 3)
    snap = state.snapshot()
    assert snap["mission_queues"] == ["queue"]
    assert [(r["id"], r["state"]) for r in snap["missions"]["rows"]] == [
        ("m1", "done"),
        ("m2", "cancelled"),
    ]
    assert snap["missions"]["rows"][0]["summary"] == "done in 3.0 s"
    feed(state, "queue", "connection", "presence", {"state": "OFFLINE"}, 4)
    assert state.mission_queues() == [], "an offline queue takes no submissions"
    many = [row(f"m{i}", "done") for i in range(MAX_MISSIONS + 20)]
    feed(state, "queue", "missions", "mission.table", {"missions": many}, 5)
    rows = state.snapshot()["missions"]["rows"]
    assert len(rows) == MAX_MISSIONS and rows[-1]["id"] == f"m{MAX_MISSIONS + 19}", "the newest"


def test_a_new_mission_with_the_same_tree_starts_from_nothing() -> None:
    tree = {"id": "root", "behavior": "PLACE", "params": {"object": "cup"}}
    state = WebState(TEAM)
    feed(
        state,
        "pr2",
        "mission",
        "mission.tree",
        {"kind": "tasktree", "tree": tree, "text": "PLACE(cup)", "mission": "m1"},
        1,
    )
    feed(state, "pr2", "state", "node.transition", {"node": "root", "status": "done"}, 2)
    assert state.snapshot()["mission"]["complete"]
    feed(
        state,
        "pr2",
        "mission",
        "mission.tree",
        {"kind": "tasktree", "tree": tree, "text": "PLACE(cup)", "mission": "m2"},
        3,
    )
    snap = state.snapshot()
    assert not snap["mission"]["complete"] and snap["mission"]["id"] == "m2"


def test_mission_text_is_checked_like_a_mission_file() -> None:
    good = mission_from_toml('[mission]\nkind = "tasktree"\ntree = "THEN(cup, sugar)"\n')
    assert good["tree"] == "THEN(cup, sugar)"
    cases = [
        ("[mission\nkind = 1", "not valid TOML"),
        ('[team]\nname = "x"\n', "expected one [mission] table, not team"),
        ("tree = 1\n", "expected one [mission] table, not tree"),
        ('[mission]\nkind = "tasktree"\ntimeout_s = -3\n', "[mission.timeout_s]"),
        ('[mission]\nkind = "tasktree"\nspoon = 1\n', "spoon"),
        ("x" * 70_000, "longer than 64 KiB"),
    ]
    for text, words in cases:
        with pytest.raises(DeskError) as info:
            mission_from_toml(text, "m.toml")
        assert words in str(info.value), (text[:40], str(info.value))
    files = mission_files(REPO / "configs" / "missions")
    assert "tea_cup.toml" in files and mission_from_toml(files["tea_cup.toml"])
    assert mission_files(REPO / "configs") == {} or all(
        "[mission]" in t for t in mission_files(REPO / "configs").values()
    )
    assert mission_files(None) == {} and mission_files(REPO / "no-such-dir") == {}


def kitting_story(view: KittingExpectations) -> None:
    """The cobot starts, plans (human: t0, t1; robot: t5), puts t0 on the tray (R2), the
    person does it (H4: followed), places t10 of their own choice (H1: led), the cobot
    re-plans believing they lead, takes t1 back (R1 cancelling R5) and fills it."""
    view.feed("factsheet", "cobot", {"kind": "cobot", "human": "ann"}, 1)
    view.feed("kitting.start", "cobot", {"human": "ann", "n": 20}, 2)
    plan = {"alpha_f": 0.8, "alpha_e": 0.1, "assignment": {"t0": "human", "t1": "human",
                                                            "t5": "robot"}}  # fmt: skip
    view.feed("kitting.plan", "cobot", plan, 3)
    view.feed("kitting.robot_action", "cobot", {"action": "R2", "task": 0, "phase": "start"}, 4)
    view.feed("kitting.robot_action", "cobot",
              {"action": "R2", "task": 0, "phase": "end", "colour": "green"}, 5)  # fmt: skip


def test_what_the_cobot_expects_of_its_person() -> None:
    view = KittingExpectations()
    assert view.for_person("ann") is None
    kitting_story(view)
    x = view.for_person("ann")
    assert x["cobot"] == "cobot" and x["stance"] == "follow" and x["alpha_f"] == 0.8
    assert x["assigned"] == [{"task": 0, "spot": "W1·1", "colour": "green"}]
    assert [p["spot"] for p in x["planned"]] == ["W1·2"], "t0 is on the tray, t1 is next"
    assert x["robot_planned"] == 1
    view.feed("kitting.human_action", "ann", {"action": "H4", "task": 0, "phase": "start"}, 6)
    assert view.for_person("ann")["doing"]["spot"] == "W1·1"
    view.feed("kitting.human_action", "ann", {"action": "H4", "task": 0, "phase": "end"}, 7)
    view.feed("kitting.human_action", "ann", {"action": "H1", "task": 10, "phase": "end"}, 8)
    view.feed("kitting.plan", "cobot", {"alpha_f": 0.3, "alpha_e": 0.1,
                                        "assignment": {"t1": "human"}}, 9)  # fmt: skip
    x = view.for_person("ann")
    assert x["assigned"] == [] and x["followed"] == 1 and x["led"] == 1
    assert x["stance"] == "lead" and [r["role"] for r in x["recent"]] == ["followed", "led"]
    view.feed("kitting.robot_action", "cobot",
              {"action": "R1", "task": 1, "phase": "start", "cancels": "R5"}, 10)  # fmt: skip
    view.feed("kitting.robot_action", "cobot", {"action": "R1", "task": 1, "phase": "end"}, 11)
    x = view.for_person("ann")
    assert x["planned"] == [] and x["placed"] == 3
    view.feed("kitting.done", "cobot", {"makespan": 100.0, "pattern_correct": True}, 12)
    assert view.for_person("ann")["done"] and view.for_person("bob") is None
    assert spot_label(19) == "W4·5"


def test_a_tray_block_taken_back_leaves_the_tray() -> None:
    view = KittingExpectations()
    kitting_story(view)
    view.feed("kitting.robot_action", "cobot",
              {"action": "R1", "task": 0, "phase": "start", "cancels": "R5"}, 6)  # fmt: skip
    assert view.for_person("ann")["assigned"] == []
    view.feed("kitting.start", "cobot", {"human": "ann"}, 7)  # a new episode
    assert view.for_person("ann")["placed"] == 0 and view.for_person("ann")["stance"] is None


kinds = st.sampled_from(["kitting.start", "kitting.plan", "kitting.robot_action",
                         "kitting.human_action", "kitting.done", "factsheet", "other"])  # fmt: skip
values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 30), st.floats(allow_nan=True), st.text(max_size=4),
    st.sampled_from(["R1", "R2", "R5", "H1", "H4", "start", "end", "abort", "human", "ann",
                     "cobot", "t3", "tx", "green"]),
    st.dictionaries(st.sampled_from(["t0", "t3", "t99", "x", ""]), st.sampled_from(["human", 3])),
)  # fmt: skip
bodies = st.one_of(
    st.none(), st.integers(), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["human", "n", "task", "action", "phase", "cancels", "colour",
                                     "alpha_f", "alpha_e", "assignment", "kind"]), values,
                    max_size=6),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(kinds, st.sampled_from(["cobot", "ann", "x"]), bodies), max_size=40))
def test_any_kitting_messages_keep_the_expectations_whole(batch) -> None:
    """Hostile or garbled bodies never raise; what the page gets is JSON with
    probabilities in [0, 1] and tray tasks within the scenario."""
    view = KittingExpectations()
    kitting_story(view)
    for ts, (kind, sender, body) in enumerate(batch, 100):
        view.feed(kind, sender, body, ts)
    for person in ("ann", "x", "cobot"):
        x = view.for_person(person)
        if x is None:
            continue
        json.dumps(x, allow_nan=False)
        for key in ("alpha_f", "alpha_e"):
            assert x[key] is None or 0.0 <= x[key] <= 1.0
        assert all(0 <= a["task"] < x["n"] for a in x["assigned"] + x["planned"])
        assert x["stance"] in (None, "lead", "follow")


def test_the_queue_table_survives_garbage() -> None:
    rng = random.Random(4)
    state = WebState(TEAM)
    for ts in range(200):
        body = rng.choice([None, 3, [], {"missions": rng.choice([None, 3, ["x"], [{"id": 1}]])},
                           {"missions": [row("m", rng.choice(["done", None, 3]))]}])  # fmt: skip
        feed(state, "queue", "missions", "mission.table", body, ts)
    json.dumps(state.snapshot())
