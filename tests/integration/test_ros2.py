"""The ROS 2 driver against real ROS 2 nodes over real DDS: the test robot node
(tests/ros2/robot_node.py, an rclpy action server in its own process) does a mission's
behaviours through ``ros2_driver``, and its own record of what it did is compared with
teamtree's. Each test runs in a ROS 2 domain of its own, discovery kept to this host."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.conftest import teamtree_cmd
from tests.ros2_support import RobotNode, own_domain, require_rclpy, ros2_agents
from tests.vda5050_support import SIM_AGENTS, progress, read_records, team_config

pytestmark = [pytest.mark.integration, pytest.mark.ros2]


@pytest.fixture(autouse=True)
def _rclpy_installed() -> None:
    require_rclpy()


@pytest.fixture
def domain(monkeypatch: pytest.MonkeyPatch) -> int:
    return own_domain(monkeypatch)


async def _run_team(config: Path, broker_url: str, log: Path, timeout: float = 150) -> int:
    proc = await asyncio.create_subprocess_exec(
        *teamtree_cmd("run", str(config), "--broker", broker_url, "--log-format", "json"),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        proc.terminate()
        await proc.wait()
        raise AssertionError(f"team did not finish: {log.read_text()[-3000:]}") from None


async def test_mission_with_sim_robot_and_ros2_robot(
    mosquitto, team, domain, tmp_path: Path
) -> None:
    """A simulated PR2 places the cup; the ROS 2 robot places the plate, then moves to
    the dock, each a goal of its action server. The recorder shows the driver's two
    behaviours finished, and the robot's own record agrees: each executed once and
    done, nothing cancelled, aborted or rejected."""
    record = tmp_path / "run.jsonl"
    objects = {"plate": (1, (1.5, 0.5))}
    stations = {"dock": (2, (2.0, 2.0))}
    agents = ros2_agents("r1", "/r1", domain, objects, stations=stations)
    config = team_config(
        tmp_path / "team.toml", team, "AND(cup, THEN(plate, MOVE(dock)))",
        SIM_AGENTS + agents, record,
    )  # fmt: skip
    robot = RobotNode("/r1", domain, {**objects, **stations}, tmp_path).start()
    try:
        code = await _run_team(config, mosquitto.url, tmp_path / "team.log")
    finally:
        robot.stop()
    assert code == 0, (tmp_path / "team.log").read_text()[-3000:]
    records = read_records(record)
    finished = progress(records, "behaviour.finished", "r1-driver")
    assert len(finished) == 2, finished
    assert progress(records, "behaviour.failed", "r1-driver") == []
    done = {
        (r["body"]["agent"], r["body"]["node"])
        for r in records
        if r.get("kind") == "node.transition" and r["body"]["status"] == "done"
    }
    assert {a for a, _ in done} == {"pr2", "r1"}
    assert len(done) == 3
    own = robot.own_state()
    assert own["executions"] == {"plate": 1, "dock": 1}
    assert own["done"] == ["plate", "dock"]
    assert own["canceled"] == own["aborted"] == own["rejected"] == []
    # the robot's pose and state came from its topics into the observations
    robots = [
        r["body"]["robot"]
        for r in records
        if r.get("kind") == "observation" and r.get("sender") == "r1-driver"
    ]
    online = [o for o in robots if o["connection"] == "ONLINE"]
    assert online and online[-1]["battery"] == pytest.approx(80.0)
    assert online[-1]["base"][:2] == pytest.approx([2.0, 2.0], abs=1e-6)  # at the dock
    assert any(o["feedback"] for o in robots)  # goal feedback rode along while it ran
