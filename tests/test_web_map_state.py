"""The team page's map (FloorMap) and its per-mission timeline (MissionHistory), fed
as the broker delivers messages to the web view (WebState), garbage included."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.web import WebState
from teamtree.agents.observers.web.floor import AGV_NOTE, FloorMap
from teamtree.agents.observers.web.history import MAX_KEPT, MAX_SPANS
from teamtree.agents.runtime.mission_status import MissionStatus, status_message
from teamtree.broker.envelope import Envelope, decode
from teamtree.broker.topics import parse
from teamtree.planners.tasktree import parse_tree
from tests.test_web_state import TEAM, feed

TREE = parse_tree("THEN(cup, sugar)").to_dict()
CUP, SUGAR = "root/0", "root/1"


def status(state: WebState, mission: str, now: str, ts: int, reason: str = "") -> None:
    """The run's ``mission.status`` of `mission` (state `now`) at `ts`."""
    out = status_message(TEAM, "run", mission, MissionStatus("tasktree", now, reason=reason))
    env = msgspec.structs.replace(decode(out.payload, topic=out.topic), ts=ts)
    state.feed(env, parse(out.topic))


def tree(state: WebState, mission: str, ts: int) -> None:
    body = {"kind": "tasktree", "tree": TREE, "text": "THEN(cup, sugar)", "mission": mission}
    feed(state, "queue", "mission", "mission.tree", body, ts)


def work(state: WebState, robot: str, node: str, what: str, ts: int) -> None:
    feed(state, robot, "state", "node.transition", {"node": node, "status": what}, ts)


def world_state(cup_at: list[float], held_by: str | None) -> dict:
    return {
        "t": 1.5,
        "violations": 0,
        "robots": {"pr2": {"name": "pr2", "arm": [0.1, -0.4, 0.8], "base": [0.0, -0.65, 0.0],
                           "yaw": 1.57, "holding": "cup" if held_by else None, "busy": "c1"}},
        "objects": {"cup": {"shape": "cylinder", "dims": [0.035, 0.09], "position": cup_at,
                            "goal": [0.16, -0.22, 0.81], "at_goal": False, "held_by": held_by}},
        "hands": {"alice": {"position": [0.5, 0.5, 0.9], "holding": "sugar"}},
    }  # fmt: skip


def test_the_map_follows_the_world_state() -> None:
    """Robots with heading and what they hold, objects with their goals, hands: the
    latest ``world.state`` is the table."""
    state = WebState(TEAM)
    feed(state, "world", "state", "world.state", world_state([-0.05, 0.0, 0.8], None), 1000)
    table = state.snapshot(now_ms=2000)["map"]["table"]
    assert table["robots"]["pr2"]["x"] == 0.0 and table["robots"]["pr2"]["y"] == -0.65
    assert table["robots"]["pr2"]["yaw"] == 1.57 and table["robots"]["pr2"]["holding"] is None
    assert table["objects"]["cup"]["goal"] == [0.16, -0.22]
    assert table["people"]["alice"] == {"x": 0.5, "y": 0.5, "holding": "sugar"}
    feed(state, "world", "state", "world.state", world_state([0.1, -0.4, 0.8], "pr2"), 1500)
    table = state.snapshot(now_ms=2000)["map"]["table"]
    assert (table["objects"]["cup"]["x"], table["objects"]["cup"]["held_by"]) == (0.1, "pr2")
    assert table["robots"]["pr2"]["holding"] == "cup"


def test_an_agv_shows_its_reported_position_and_battery() -> None:
    """A VDA 5050 driver's observation puts its AGV on the plan with battery and
    connection; errors are not in it, and the map says so."""
    state = WebState(TEAM)
    feed(state, "agv7-driver", "factsheet", "factsheet", {"kind": "vda5050_driver"}, 900)
    obs = {"t": 1.0, "robot": {"name": "agv7", "arm": [3.0, 4.0, 0.0], "base": [3.0, 4.0, 0.0],
                               "yaw": 0.5, "battery": 81.5, "connection": "ONLINE"},
           "objects": {"dock": {"shape": "box", "dims": [0.5, 0.5, 0.05],
                                "position": [1.0, 1.0, 0.0]}}}  # fmt: skip
    feed(state, "agv7-driver", "observation", "observation", obs, 1000)
    snap = state.snapshot(now_ms=2000)["map"]
    agv = snap["table"]["robots"]["agv7"]
    assert (agv["x"], agv["y"], agv["battery"], agv["connection"]) == (3.0, 4.0, 81.5, "ONLINE")
    assert agv["agv"] is True and "dock" in snap["table"]["objects"]
    assert AGV_NOTE in snap["notes"]
    # a simulated driver's observation is not an AGV's
    feed(state, "pr2-driver", "factsheet", "factsheet", {"kind": "sim_driver"}, 900)
    feed(state, "pr2-driver", "observation", "observation", {**obs, "robot": {"arm": [0, 0, 0]}}, 1)
    assert set(state.snapshot(now_ms=2000)["map"]["table"]["robots"]) == {"agv7"}


def test_the_hospital_graph_carries_the_ltl_robots() -> None:
    """An LTL robot stands on its factsheet's start, then where its steps lead;
    corridors the planner reports blocked are marked."""
    floor = FloorMap()
    floor.feed("factsheet", "DR", {"kind": "ltl_robot", "start": ["x2", "standby"]}, None)
    graph = floor.view()["graph"]
    assert graph["robots"]["DR"] == {"region": "x2", "mode": "standby"}
    assert "c1" in graph["nodes"] and ["c1", "c2", False] in graph["edges"]
    floor.feed("ltl.step", "DR", {"state": ["c9", "loaded"], "index": 0}, "ltl_robot")
    floor.feed("ltl.map", "planner", {"run": "r", "blocked": [["c2", "c1"]]}, "ltl_planner")
    graph = floor.view()["graph"]
    assert graph["robots"]["DR"] == {"region": "c9", "mode": "loaded"}
    assert ["c1", "c2", True] in graph["edges"]


def test_the_kitting_table_follows_the_actions() -> None:
    """Spots in the cobot's pattern: R2 onto the person's tray, H4 placed, a wrong
    colour placed wrong until R3 clears it, R1 placed; kitting.done ends the work."""
    floor = FloorMap()
    pattern = ["green", "pink", "orange", "blue", "green"] * 4
    floor.feed("factsheet", "cobot", {"kind": "cobot", "pattern": pattern, "spots": 5}, None)
    floor.feed("kitting.start", "cobot", {"human": "human", "n": 20, "time_factor": 20}, "cobot")

    def act(sender: str, kind: str, action: str, task: int, colour: str) -> None:
        for phase in ("start", "end"):
            body = {"action": action, "task": task, "colour": colour, "phase": phase}
            floor.feed(kind, sender, body, None)

    act("cobot", "kitting.robot_action", "R2", 0, "green")
    assert floor.view()["kit"]["state"][0] == "human_tray"
    act("human", "kitting.human_action", "H4", 0, "green")
    act("human", "kitting.human_action", "H1", 1, "blue")  # pink's spot: wrong
    kit = floor.view()["kit"]
    assert kit["state"][:2] == ["placed", "wrong"] and kit["pattern"] == pattern
    act("cobot", "kitting.robot_action", "R3", 1, "pink")
    assert floor.view()["kit"]["state"][1] == "empty"
    floor.feed("kitting.robot_action", "cobot", {"action": "R1", "task": 1, "phase": "start"}, None)
    assert floor.view()["kit"]["robot_doing"] == {"task": 1, "action": "R1"}
    act("cobot", "kitting.robot_action", "R1", 1, "pink")
    floor.feed("kitting.done", "cobot", {"makespan": 1.0}, None)
    kit = floor.view()["kit"]
    assert kit["state"][:2] == ["placed", "placed"] and kit["done"] and kit["robot_doing"] is None


def test_each_mission_keeps_its_own_timeline_from_its_start() -> None:
    """Two missions of a queue: the page's timeline is the current one's alone, from
    its start, labelled; the earlier one is kept whole beside it, with its failure,
    and its end; a failed behaviour ends its span failed with the driver's reason."""
    state = WebState(TEAM)
    tree(state, "m1", 1000)
    status(state, "m1", "running", 1000)
    work(state, "pr2", CUP, "working", 1100)
    feed(state, "pr2-driver", "progress", "behaviour.failed",
         {"command_id": "c1", "node": CUP, "robot": "pr2", "ok": False,
          "reason": "lease_expired"}, 1500)  # fmt: skip
    work(state, "baxter", CUP, "working", 1600)
    status(state, "m1", "failed", 2000, "pr2 lost its body")
    tree(state, "m2", 3000)
    status(state, "m2", "running", 3000)
    work(state, "pr2", SUGAR, "working", 3100)
    work(state, "pr2", SUGAR, "done", 3900)
    snap = state.snapshot(now_ms=5000)
    current = snap["timeline"]
    assert current["mission"] == "m2" and current["t0"] == 3000
    assert [(s["agent"], s["node"], s["status"], s["label"]) for s in current["spans"]] == [
        ("pr2", SUGAR, "done", "PLACE(sugar)")
    ]
    assert [m["id"] for m in current["missions"]] == ["m1", "m2"]
    earlier = snap["timelines"]["m1"]
    spans = {(s["agent"], s["status"]): s for s in earlier["spans"]}
    assert spans[("pr2", "failed")]["reason"] == "lease_expired"
    assert spans[("pr2", "failed")]["label"] == "PLACE(cup)"
    assert spans[("baxter", "stopped")]["end"] == 2000  # stopped by the mission's end
    assert earlier["end"] == {"ts": 2000, "state": "failed", "reason": "pr2 lost its body"}
    assert earlier["now"] == 2000  # its clock stopped with it
    json.dumps(snap)


def test_the_kept_history_is_bounded() -> None:
    state = WebState(TEAM)
    for m in range(MAX_KEPT + 3):
        tree(state, f"m{m}", m * 10_000)
        for i in range(MAX_SPANS + 5):
            work(state, "pr2", CUP, "working" if i % 2 == 0 else "inactive", m * 10_000 + i)
    snap = state.snapshot(now_ms=10**6)
    assert len(snap["timeline"]["missions"]) == MAX_KEPT
    assert all(len(v["spans"]) <= MAX_SPANS for v in snap["timelines"].values())
    assert len(snap["timeline"]["spans"]) <= MAX_SPANS


junk = st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=4), st.booleans(),
                 st.lists(st.one_of(st.floats(), st.text(max_size=3)), max_size=4))  # fmt: skip
bodies = st.dictionaries(
    st.sampled_from(["robots", "objects", "hands", "robot", "state", "start", "blocked", "task",
                     "action", "phase", "colour", "human", "n", "pattern", "kind", "node"]),
    st.one_of(junk, st.dictionaries(st.text(max_size=3), st.one_of(junk, st.dictionaries(
        st.sampled_from(["position", "base", "arm", "goal", "dims", "yaw", "battery"]), junk)))),
    max_size=6,
)  # fmt: skip
kinds = st.sampled_from(["world.state", "observation", "factsheet", "ltl.step", "ltl.map",
                         "kitting.start", "kitting.robot_action", "kitting.human_action",
                         "kitting.done", "behaviour.failed"])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(kinds, bodies, st.sampled_from([None, "vda5050_driver", "cobot"])),
                max_size=40))  # fmt: skip
def test_any_bodies_leave_the_map_whole(batch) -> None:
    """Whatever arrives, the map never raises and stays JSON."""
    floor = FloorMap()
    for kind, body, sender_kind in batch:
        floor.feed(kind, "x", body, sender_kind)
    json.dumps(floor.view(), allow_nan=False)


def test_an_ltl_robots_plan_steps_are_its_timeline() -> None:
    """Each plan action is a span from the step before to its own step, labelled with
    the action; a re-plan's actions get rows of their own."""
    state = WebState(TEAM)

    def plan(epoch: int, actions: list[str], ts: int) -> None:
        body = {"epoch": epoch, "seq": 0, "strategy": "initial",
                "plan": {"robot": "DR", "actions": actions, "cost": 1.0}}  # fmt: skip
        env = Envelope(kind="ltl.plan", sender="planner", hid=1, ts=ts, hlc=(ts, 0, "p"), body=body)
        state.feed(env, parse(f"teamtree/v1/{TEAM}/planner/ltl.plan/DR"))

    def step(kind: str, epoch: int, ts: int) -> None:
        feed(state, "DR", "ltl.trace", kind, {"epoch": epoch, "seq": 0, "state": ["c1", "s"]}, ts)

    plan(0, ["goto_c9", "pick"], 1000)
    step("ltl.step", 0, 2000)
    plan(1, ["goto_c1"], 2500)  # re-planned during "pick"
    step("ltl.step", 1, 4000)
    step("ltl.done", 1, 4000)
    spans = [(s["label"], s["start"], s["end"], s["status"])
             for s in state.snapshot(now_ms=5000)["timeline"]["spans"]]  # fmt: skip
    assert spans == [
        ("goto_c9", 1000, 2000, "done"),
        ("pick", 2000, 2500, "inactive"),
        ("goto_c1", 2500, 4000, "done"),
    ]
    rows = {s["node"] for s in state.snapshot(now_ms=5000)["timeline"]["spans"]}
    assert len(rows) == 3


def test_a_cancel_outranking_a_success_is_the_timelines_end() -> None:
    """The robots said succeeded, then the queue said cancelled: the timeline's end
    says cancelled, at the first end."""
    state = WebState(TEAM)
    tree(state, "m1", 1000)
    status(state, "m1", "running", 1000)
    status(state, "m1", "succeeded", 2000, "every subtask the tree needs is done")
    status(state, "m1", "cancelled", 2500, "cancelled by alice")
    end = state.snapshot(now_ms=3000)["timeline"]["end"]
    assert end == {"ts": 2000, "state": "cancelled", "reason": "cancelled by alice"}


def test_an_agvs_errors_are_on_the_map() -> None:
    """A driver that reports the AGV's errors: the map shows them, and no note says
    errors are missing."""
    state = WebState(TEAM)
    feed(state, "agv7-driver", "factsheet", "factsheet", {"kind": "vda5050_driver"}, 900)
    obs = {"t": 1.0, "robot": {"name": "agv7", "arm": [3.0, 4.0, 0.0], "battery": 12.0,
                               "connection": "ONLINE", "errors": ["noRouteError: B blocked"]},
           "objects": {}}  # fmt: skip
    feed(state, "agv7-driver", "observation", "observation", obs, 1000)
    snap = state.snapshot(now_ms=2000)["map"]
    assert snap["table"]["robots"]["agv7"]["errors"] == ["noRouteError: B blocked"]
    assert AGV_NOTE not in snap["notes"]
