"""The ROS 2 bridge's pure parts, without rclpy: the scene's markers, the agents'
statuses and the missions' JSON from the web view's picture of a team (``WebState``),
and requests from ROS 2 read and refused naming the field."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from teamtree.agents.observers.ros2.health import ERROR, OK, STALE, WARN, agent_statuses
from teamtree.agents.observers.ros2.intake import (
    RequestError,
    accepted,
    read_request,
    refused,
)
from teamtree.agents.observers.ros2.mission_state import mission_state
from teamtree.agents.observers.ros2.node import BridgeTopics, node_name
from teamtree.agents.observers.ros2.scene import scene_markers
from teamtree.agents.observers.web import WebState
from tests.test_web_map_state import status, world_state
from tests.test_web_state import TEAM, feed


def picture() -> WebState:
    state = WebState(TEAM)
    feed(state, "world", "state", "world.state", world_state([-0.05, 0.0, 0.8], "pr2"), 1000)
    return state


def by_ns(markers: list[dict], ns: str) -> list[dict]:
    return [m for m in markers if m["ns"] == ns]


def test_the_scene_has_robots_objects_goals_people_and_labels() -> None:
    markers = scene_markers(picture().snapshot(now_ms=2000))
    (robot,) = by_ns(markers, "robots")
    assert robot["type"] == "CYLINDER" and (robot["pose"]["x"], robot["pose"]["y"]) == (0.0, -0.65)
    (heading,) = by_ns(markers, "headings")
    assert heading["type"] == "ARROW" and heading["pose"]["yaw"] == pytest.approx(1.57)
    (cup,) = by_ns(markers, "objects")
    assert cup["type"] == "CYLINDER" and cup["pose"]["z"] == pytest.approx(0.8)
    assert (cup["scale"]["x"], cup["scale"]["z"]) == pytest.approx((0.07, 0.09))
    assert cup["color"]["g"] > cup["color"]["b"]  # held: yellow
    (goal,) = by_ns(markers, "goals")
    assert (goal["pose"]["x"], goal["pose"]["y"], goal["text"]) == (0.16, -0.22, "cup")
    (hand,) = by_ns(markers, "people")
    assert (hand["pose"]["x"], hand["type"]) == (0.5, "SPHERE")
    assert [m["text"] for m in by_ns(markers, "labels")] == ["pr2", "cup", "alice"]
    assert [m["id"] for m in by_ns(markers, "labels")] == [0, 1, 2]
    assert by_ns(markers, "mission") == []  # no mission heard of yet


def test_the_scene_says_the_current_mission() -> None:
    state = picture()
    status(state, "m1", "running", 1500)
    (line,) = by_ns(scene_markers(state.snapshot(now_ms=2000)), "mission")
    assert line["type"] == "TEXT_VIEW_FACING" and line["text"].startswith("m1: running")


def test_each_agent_has_a_status_and_the_link_one() -> None:
    state = picture()
    feed(state, "pr2", "connection", "presence", {"state": "ONLINE", "kind": "robot"}, 1000)
    feed(state, "baxter", "connection", "presence", {"state": "ONLINE", "kind": "robot"}, 1000)
    feed(state, "baxter", "connection", "presence", {"state": "CONNECTION_BROKEN"}, 3000)
    feed(state, "queue", "connection", "presence", {"state": "OFFLINE", "kind": "mission_queue"}, 1000)  # fmt: skip
    snap = state.snapshot(now_ms=4000)
    statuses = agent_statuses(snap, {}, team=TEAM, connected=True, broker_url="mqtt://b:1")
    levels = {s["hardware_id"]: s["level"] for s in statuses}
    assert levels == {"baxter": ERROR, "pr2": OK, "queue": STALE, "broker": OK}
    assert [s["name"] for s in statuses][-1] == f"teamtree/{TEAM}/broker"
    pr2 = next(s for s in statuses if s["hardware_id"] == "pr2")
    assert dict(pr2["values"])["kind"] == "robot"
    down = agent_statuses(snap, {}, team=TEAM, connected=False)
    assert down[-1]["level"] == ERROR


def test_a_drivers_robot_errors_and_battery_warn() -> None:
    state = WebState(TEAM)
    feed(state, "r1-driver", "connection", "presence", {"state": "ONLINE", "kind": "ros2_driver"}, 1000)  # fmt: skip
    robot = {"name": "r1", "base": [1.0, 2.0, 0.0], "connection": "ONLINE", "battery": 12.0, "errors": []}  # fmt: skip
    feed(state, "r1-driver", "observation", "observation", {"robot": robot, "objects": {}}, 2000)
    (r1, _) = agent_statuses(state.snapshot(now_ms=3000), {}, team=TEAM, connected=True)
    assert r1["level"] == WARN and "battery 12" in r1["message"]
    robot["connection"] = "OFFLINE"
    feed(state, "r1-driver", "observation", "observation", {"robot": robot, "objects": {}}, 4000)
    (r1, _) = agent_statuses(state.snapshot(now_ms=5000), {}, team=TEAM, connected=True)
    assert r1["level"] == ERROR and "OFFLINE" in r1["message"]


def test_the_mission_document_has_the_states_and_progress() -> None:
    state = picture()
    status(state, "m1", "succeeded", 1500)
    doc = mission_state(state.snapshot(now_ms=2000))
    assert doc["team"] == TEAM and doc["current"]["mission"] == "m1"
    assert doc["missions"]["m1"]["state"] == "succeeded" and doc["missions"]["m1"]["ended"]
    json.dumps(doc)  # JSON-ready


@pytest.mark.parametrize(
    ("text", "field", "request_id"),
    [
        ("not json", "data", None),
        ("[1, 2]", "data", None),
        ('{"request_id": 3, "mission": {}}', "request_id", None),
        ('{"mission": {"kind": "tasktree", "tree": "cup"}, "priority": 1, "request_id": "a"}', "priority", "a"),
        ('{"request_id": "b"}', "mission", "b"),
        ('{"mission": "cup"}', "mission", None),
        ('{"mission": {"kind": "tasktree", "tree": "cup", "robots": 1}}', "mission.robots", None),
        ('{"mission": {"kind": "tasktree", "tree": "THEN(cup"}}', "mission.tree", None),
        ('{"mission": {"kind": "tasktree", "tree": "cup", "timeout_s": -1}}', "mission.timeout_s", None),
        ('{"mission": {"kind": "tasktree", "tree": "cup", "members": ["a", "a"]}}', "mission.members", None),
    ],
)  # fmt: skip
def test_a_bad_request_is_refused_naming_the_field(
    text: str, field: str, request_id: str | None
) -> None:
    with pytest.raises(RequestError) as info:
        read_request(text)
    assert info.value.field == field and str(info.value).startswith(f"[{field}]")
    assert info.value.request_id == request_id
    answer = json.loads(refused(info.value.request_id, info.value.field, str(info.value)))
    assert answer == {"request_id": request_id, "accepted": False, "field": field,
                      "error": str(info.value)}  # fmt: skip


def test_a_good_request_is_read_and_its_answer_says_the_mission() -> None:
    request = read_request('{"mission": {"kind": "tasktree", "tree": "cup"}, "request_id": "r"}')
    assert request.mission == {"kind": "tasktree", "tree": "cup"} and request.request_id == "r"
    answer = json.loads(
        accepted("r", {"id": "m1", "state": "queued", "position": 0}, "ros2-bridge")
    )
    assert answer == {"request_id": "r", "accepted": True, "id": "m1", "state": "queued",
                      "position": 0, "by": "ros2-bridge"}  # fmt: skip


def test_topics_and_node_name() -> None:
    topics = BridgeTopics("/tt/", "world")
    assert (
        topics.topic("markers") == "/tt/markers" and topics.diagnostics_topic == "/tt/diagnostics"
    )
    assert BridgeTopics(diagnostics="/diagnostics").diagnostics_topic == "/diagnostics"
    assert node_name("tea-party.1") == "teamtree_bridge_tea_party_1"


def test_the_bridge_and_its_command_import_without_rclpy() -> None:
    code = (
        "import sys; import teamtree.agents.observers.ros2, teamtree.agents.cli.ros2_bridge; "
        "from teamtree.agents.cli.app import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('rclpy', 'visualization_msgs', 'diagnostic_msgs', 'std_msgs')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.integration
async def test_without_rclpy_the_command_says_how_to_get_it(mosquitto) -> None:
    """Where rclpy does not import, ``teamtree ros2-bridge`` exits 2 saying how to
    install it (``None`` in ``sys.modules`` makes Python's import fail as when it is
    not installed)."""
    code = (
        "import sys; sys.modules['rclpy'] = None; "
        "from teamtree.agents.cli.app import main; sys.exit(main(sys.argv[1:]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "ros2-bridge", "--broker", mosquitto.url, "--team", "t1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "pip install 'teamtree[ros2]'" in out.stderr and "[ros2-bridge]" in out.stderr
