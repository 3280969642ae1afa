"""The ROS 2 bridge (``teamtree ros2-bridge``) between real processes: the serving tea
party team (``configs/tea_party_queue.toml``: simulated world, drivers, robots on call,
a mission queue) runs as ``teamtree run`` on mosquitto; the bridge runs as its own
process; a plain rclpy client (tests/ros2/bridge_client.py) in a third process reads
its markers, diagnostics and missions and sends it missions, in a ROS 2 domain of the
test's own with discovery kept to this host."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, eventually, teamtree_cmd
from tests.ros2_support import RobotNode, own_domain, require_rclpy, ros2_agents

pytestmark = [pytest.mark.integration, pytest.mark.ros2, pytest.mark.slow]

TEAM = "tea-party-queue"
FRAME = "tea_table"
NS = "/tt"
CLIENT = Path(__file__).resolve().parent.parent / "ros2" / "bridge_client.py"
OBJECTS = {"apple", "burger", "cup", "orange", "sandwich", "sugar", "tea_pot"}
SERVICES = {"world", "pr2-driver", "baxter-driver", "recorder", "queue"}


@pytest.fixture(autouse=True)
def _rclpy_installed() -> None:
    require_rclpy()


class Client:
    """The rclpy client process: what it received, as parsed events, in order."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")

    def latest(
        self, topic: str, test: Any = lambda e: True, since: int = 0
    ) -> dict[str, Any] | None:
        """The newest event of `topic` that passes `test`, of those from index `since` on."""
        found = (e for e in reversed(self.events[since:]) if e["topic"] == topic and test(e))
        return next(found, None)

    def result(self, test: Any) -> dict[str, Any] | None:
        found = self.latest("result", lambda e: test(e["data"]))
        return found["data"] if found else None

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self._reader.cancel()


def start_bridge(url: str, log: Path, team: str = TEAM) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        teamtree_cmd("ros2-bridge", "--broker", url, "--team", team, "--frame", FRAME,
                     "--namespace", NS, "--period", "0.5", "--log-format", "json"),
        stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGINT) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def adds(event: dict[str, Any], ns: str) -> list[dict[str, Any]]:
    return [m for m in event["markers"] if m["ns"] == ns and m["action"] == "ADD"]


def mission_state(client: Client, mission: str, since: int = 0) -> str | None:
    """The state the bridge's mission topic last gave `mission` (None: not heard of),
    in the events from index `since` on."""
    event = client.latest("mission", lambda e: mission in e["data"]["missions"], since)
    return event["data"]["missions"][mission]["state"] if event else None


async def start_client(log: Path) -> Client:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CLIENT), json.dumps({"ns": NS}),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=log.open("w"), limit=1 << 22,
    )  # fmt: skip
    return Client(proc)


@pytest.mark.timeout(900)
async def test_the_team_in_ros2_and_missions_from_it(
    mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own_domain(monkeypatch)
    logs = {name: tmp_path / f"{name}.log" for name in ("team", "bridge", "bridge2", "client")}
    team = subprocess.Popen(
        teamtree_cmd("run", str(REPO / "configs" / "tea_party_queue.toml"), "--broker", mosquitto.url),
        stdout=logs["team"].open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    bridge = start_bridge(mosquitto.url, logs["bridge"])
    client = await start_client(logs["client"])
    bridges = [bridge]

    def said() -> str:
        return "\n".join(f"--- {n}\n{p.read_text()[-2500:]}" for n, p in logs.items() if p.exists())

    try:
        # the scene: the world's two robots and seven objects with their goals, in the frame
        scene = await eventually(
            lambda: client.latest("markers", lambda e: len(adds(e, "objects")) == 7
                                  and len(adds(e, "robots")) == 2),
            timeout=240, interval=0.1, what="the bridge's markers of the whole table",
        )  # fmt: skip
        markers = scene["markers"]
        assert markers[0]["action"] == "DELETEALL", markers[0]
        assert {m["frame"] for m in markers} == {FRAME}
        counts = {
            ns: len(adds(scene, ns))
            for ns in ("robots", "headings", "objects", "goals", "people", "labels")
        }
        assert counts == {
            "robots": 2,
            "headings": 2,
            "objects": 7,
            "goals": 7,
            "people": 0,
            "labels": 9,
        }, counts
        assert len(markers) == 1 + sum(counts.values()) + len(adds(scene, "mission"))
        labels = {m["text"].split(":")[0] for m in adds(scene, "labels")}
        assert labels == OBJECTS | {"pr2", "baxter"}, labels
        assert {m["text"] for m in adds(scene, "goals")} == OBJECTS
        robots = sorted(tuple(round(c, 3) for c in m["xyz"][:2]) for m in adds(scene, "robots"))
        assert robots == [(0.0, -0.65), (0.0, 0.65)], robots  # the world's robot bases

        # each service's health, at OK once all are online; the bridge's own link; no bridge
        names = {f"teamtree/{TEAM}/{a}" for a in SERVICES | {"broker"}}
        health = await eventually(
            lambda: client.latest("diagnostics", lambda e: {s["name"] for s in e["statuses"]} == names
                                  and all(s["level"] == 0 for s in e["statuses"])),
            timeout=120, interval=0.1, what="every service's status at OK",
        )  # fmt: skip
        assert health["frame"] == FRAME
        assert len(health["statuses"]) == len(SERVICES) + 1
        world = next(s for s in health["statuses"] if s["hardware_id"] == "world")
        assert world["values"]["kind"] == "world" and world["values"]["presence"] == "ONLINE"

        # malformed requests are refused naming the field; the bridge keeps running
        client.send("not json")
        client.send(json.dumps({"mission": {"kind": "tasktree", "tree": "cup"},
                                "request_id": "extra", "priority": 1}))  # fmt: skip
        client.send(json.dumps({"mission": {"kind": "tasktree", "tree": "cup", "robots": 1},
                                "request_id": "bad-key"}))  # fmt: skip
        client.send(
            json.dumps(
                {
                    "mission": {"kind": "tasktree", "tree": "THEN(cup, spoon)"},
                    "request_id": "no-spoon",
                }
            )
        )  # the queue's word: the world's objects
        expected = {None: "data", "extra": "priority", "bad-key": "mission.robots",
                    "no-spoon": "mission.tree"}  # fmt: skip
        for request_id, field in expected.items():
            answer = await eventually(
                lambda r=request_id: client.result(lambda d: d["request_id"] == r),
                timeout=60, interval=0.1, what=f"the answer to {request_id}",
            )  # fmt: skip
            assert answer["accepted"] is False and answer["field"] == field, answer
            assert answer["error"].startswith(f"[{field}]"), answer
        assert "spoon" in client.result(lambda d: d["request_id"] == "no-spoon")["error"]
        assert bridge.poll() is None, said()

        # a mission from ROS 2 is accepted, done, and listed by `teamtree missions`
        client.send(json.dumps({"mission": {"kind": "tasktree", "tree": "THEN(cup, sugar)",
                                            "timeout_s": 150}, "request_id": "tea"}))  # fmt: skip
        answer = await eventually(
            lambda: client.result(lambda d: d["request_id"] == "tea"),
            timeout=60, interval=0.1, what="the answer to the tea mission",
        )  # fmt: skip
        assert answer["accepted"] is True and answer["by"] == "ros2-bridge", answer
        mission = answer["id"]
        await eventually(
            lambda: mission_state(client, mission) in ("succeeded", "failed", "timed_out", "cancelled"),
            timeout=300, interval=0.2, what=f"mission {mission} to end, on the bridge's mission topic",
        )  # fmt: skip
        assert mission_state(client, mission) == "succeeded", said()
        # the scene follows: cup and sugar (ids by sorted name) turn green at their goals
        ids = {name: i for i, name in enumerate(sorted(OBJECTS))}

        def green(event: dict[str, Any], name: str) -> bool:
            (obj,) = [m for m in adds(event, "objects") if m["id"] == ids[name]]
            return obj["rgba"][1] > obj["rgba"][0]

        await eventually(
            lambda: client.latest("markers", lambda e: len(adds(e, "objects")) == 7
                                  and green(e, "cup") and green(e, "sugar")),
            timeout=60, interval=0.1, what="cup and sugar drawn at their goals",
        )  # fmt: skip
        assert not green(client.latest("markers"), "tea_pot")
        listed = subprocess.run(
            teamtree_cmd("missions", "--json", "--broker", mosquitto.url, "--team", TEAM, "--timeout", "20"),
            capture_output=True, text=True, timeout=90, cwd=tmp_path,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        row = next(r for r in json.loads(listed.stdout) if r["id"] == mission)
        assert row["state"] == "done", row
        assert row["submitted_by"] == "ros2-bridge (unverified)", row

        # the bridge dies mid-mission: the mission goes on and ends done; a new bridge says so
        client.send(json.dumps({"mission": {"kind": "tasktree", "tree": "tea_pot",
                                            "timeout_s": 150}, "request_id": "pot"}))  # fmt: skip
        answer = await eventually(
            lambda: client.result(lambda d: d["request_id"] == "pot"),
            timeout=60, interval=0.1, what="the answer to the tea pot mission",
        )  # fmt: skip
        assert answer["accepted"] is True, answer
        pot = answer["id"]
        await eventually(
            lambda: mission_state(client, pot) == "running",
            timeout=120, interval=0.05, what="the tea pot mission to run",
        )  # fmt: skip
        stop(bridge, signal.SIGKILL)
        killed_at = len(client.events)
        bridges.append(start_bridge(mosquitto.url, logs["bridge2"]))
        await eventually(
            lambda: mission_state(client, pot, killed_at) in ("succeeded", "failed", "timed_out", "cancelled"),
            timeout=300, interval=0.2, what="the tea pot mission to end, told by the new bridge",
        )  # fmt: skip
        assert mission_state(client, pot, killed_at) == "succeeded", said()
        assert team.poll() is None, said()
    finally:
        await client.close()
        for b in bridges:
            stop(b)
        stop(team)


@pytest.mark.timeout(600)
async def test_a_ros2_robot_of_the_team_in_the_same_domain(
    mosquitto, team: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole loop in one ROS 2 domain: a ROS 2 tool sends a mission through the
    bridge, the team's ``ros2_driver`` has the ROS 2 robot node do it, and the bridge
    shows that robot (where its odometry puts it, its battery in its driver's health)."""
    domain = own_domain(monkeypatch)
    objects, stations = {"plate": (1, (1.5, 0.5))}, {"dock": (2, (2.0, 2.0))}
    config = tmp_path / "team.toml"
    config.write_text(
        f'[team]\nname = "{team}"\n\n[runtime]\ntick_hz = 20\nheartbeat_s = 0.5\n'
        '\n[mission]\nkind = "none"\n'
        + ros2_agents("r1", "/r1", domain, objects, stations=stations, robot_extra='role = "on_call"')
        + '\n[[agents]]\nid = "queue"\nkind = "mission_queue"\nrole = "service"\n'
    )  # fmt: skip
    logs = {name: tmp_path / f"{name}.log" for name in ("team", "bridge", "client")}
    robot = RobotNode("/r1", domain, {**objects, **stations}, tmp_path).start()
    team_proc = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        stdout=logs["team"].open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    bridge = start_bridge(mosquitto.url, logs["bridge"], team)
    client = await start_client(logs["client"])

    def said() -> str:
        return "\n".join(f"--- {n}\n{p.read_text()[-2500:]}" for n, p in logs.items() if p.exists())

    def robot_at(event: dict[str, Any], x: float, y: float) -> bool:
        robots = adds(event, "robots")
        return len(robots) == 1 and robots[0]["xyz"][:2] == pytest.approx([x, y], abs=1e-3)

    try:
        scene = await eventually(
            # the driver's plate and dock come once it has its robot's servers on the graph
            lambda: client.latest("markers", lambda e: robot_at(e, 0.0, 0.0)
                                  and len(adds(e, "objects")) == 2),
            timeout=180, interval=0.1, what="the ROS 2 robot's marker, plate and dock",
        )  # fmt: skip
        assert {m["frame"] for m in scene["markers"]} == {FRAME}
        assert {m["text"].split(":")[0] for m in adds(scene, "labels")} == {"r1", "plate", "dock"}
        driver = f"teamtree/{team}/r1-driver"
        health = await eventually(
            lambda: client.latest("diagnostics", lambda e: any(
                s["name"] == driver and s["values"].get("robot.battery") for s in e["statuses"])),
            timeout=120, interval=0.1, what="the driver's status with its robot's battery",
        )  # fmt: skip
        (status,) = [s for s in health["statuses"] if s["name"] == driver]
        assert status["level"] == 0 and float(status["values"]["robot.battery"]) == pytest.approx(
            80.0
        )
        assert status["values"]["robot.connection"] == "ONLINE"

        client.send(json.dumps({"mission": {"kind": "tasktree", "tree": "THEN(plate, MOVE(dock))",
                                            "timeout_s": 150}, "request_id": "ros"}))  # fmt: skip
        answer = await eventually(
            lambda: client.result(lambda d: d["request_id"] == "ros"),
            timeout=60, interval=0.1, what="the answer to the mission",
        )  # fmt: skip
        assert answer["accepted"] is True, answer
        await eventually(
            lambda: mission_state(client, answer["id"]) in ("succeeded", "failed", "timed_out", "cancelled"),
            timeout=300, interval=0.2, what="the mission to end",
        )  # fmt: skip
        assert mission_state(client, answer["id"]) == "succeeded", said()
        await eventually(
            lambda: client.latest("markers", lambda e: robot_at(e, 2.0, 2.0)),
            timeout=60, interval=0.1, what="the robot's marker at the dock",
        )  # fmt: skip
        own = robot.own_state()
        assert own["executions"] == {"plate": 1, "dock": 1} and own["done"] == ["plate", "dock"]
    finally:
        await client.close()
        stop(bridge)
        stop(team_proc)
        robot.stop()
