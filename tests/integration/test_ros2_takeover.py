"""When a ROS 2 robot cannot finish a behaviour, a teammate takes the node over and it
is done exactly once: the robot rejects or aborts the goal, its node process is killed
mid-goal, or its driver freezes past the lease. Two test robot nodes
(tests/ros2/robot_node.py, real rclpy action servers in their own processes) keep their
own record of every goal they executed, with times; the tests compare it with
teamtree's and check that no goal ran on two bodies at once."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.conftest import AgentProcs, eventually
from tests.ros2_support import RobotNode, own_domain, require_rclpy, ros2_agents
from tests.vda5050_support import Watcher, team_config

pytestmark = [pytest.mark.integration, pytest.mark.ros2]

PLATE = {"plate": (1, (1.5, 0.5))}


@pytest.fixture(autouse=True)
def _rclpy_installed() -> None:
    require_rclpy()


@pytest.fixture
def domain(monkeypatch: pytest.MonkeyPatch) -> int:
    return own_domain(monkeypatch)


def _team(tmp_path: Path, team: str, domain: int, robot_extra: str = "") -> Path:
    agents = ros2_agents("r1", "/r1", domain, PLATE, robot_extra=robot_extra)
    agents += ros2_agents("r2", "/r2", domain, PLATE, robot_extra=robot_extra)
    return team_config(tmp_path / "team.toml", team, "plate", agents, tmp_path / "run.jsonl")


async def _wait_exit(procs: AgentProcs, *ids: str, timeout: float = 30) -> None:
    for agent_id in ids:
        proc = procs.procs[agent_id]
        await eventually(lambda p=proc: p.poll() is not None, timeout, what=f"{agent_id} exits")
        assert proc.returncode == 0, procs.log(agent_id)[-2000:]


def _times(own: dict, event: str) -> list[float]:
    return [t for t, e, _ in own["log"] if e == event]


@pytest.mark.parametrize("fault", ["reject", "abort"])
async def test_robot_refuses_the_goal_and_a_teammate_does_it_once(
    mosquitto, team, domain, tmp_path: Path, agent_procs, fault: str
) -> None:
    """Robot r1's node rejects (or aborts) the plate's goal: the behaviour fails with
    the robot's own answer, r1 gives the node back (and claims it again while it is
    alone), and r2, whose robot node starts afterwards, takes it and does it once."""
    config = _team(tmp_path, team, domain)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    # r2's node, nearer the plate, starts once r1 failed (till then its driver shows no
    # objects): the peer rule then gives r2 the node
    r1 = RobotNode("/r1", domain, PLATE, tmp_path, {fault: ["plate"], "start": [2.3, 0.5]})
    r2 = RobotNode("/r2", domain, PLATE, tmp_path, {"start": [1.5, 0.6]})
    watcher = Watcher("watcher", team=team, endpoint=mosquitto.endpoint)
    async with watcher:
        r1.start()
        try:
            for agent_id in ("r1-driver", "r2-driver", "recorder", "r1", "r2"):
                procs.start(agent_id)
            failed = await eventually(
                lambda: watcher.bodies("behaviour.failed", "r1-driver"), 60, what="r1 fails"
            )
            r2.start()
            await eventually(lambda: watcher.done(), 60, what="the node done")
            await _wait_exit(procs, "r1", "r2")
        finally:
            r1.stop()
            r2.stop()
    reason = failed[0]["reason"]
    own1, own2 = r1.own_state(), r2.own_state()
    if fault == "reject":
        assert reason == "ros2_rejected: /r1/do rejected the goal for PLACE"
        assert own1["rejected"] and own1["executions"] == {}
    else:
        # the robot's own result, as its action server returned it
        assert reason == "ros2_aborted: /r1/do aborted the goal: sequence: [-1, 99]"
        assert own1["aborted"] and own1["done"] == []
    assert watcher.bodies("behaviour.finished", "r1-driver") == []
    assert len(watcher.bodies("behaviour.finished", "r2-driver")) == 1
    assert [a for a, _ in watcher.done()] == ["r2"]
    assert own2["executions"] == {"plate": 1} and own2["done"] == ["plate"]


async def test_robot_node_killed_mid_goal_teammate_finishes_once(
    mosquitto, team, domain, tmp_path: Path, agent_procs
) -> None:
    """r1's node is SIGKILLed while it executes the plate's goal: its odometry stops,
    the driver fails the behaviour (connection_broken) and shows no objects, r1 gives
    the node back, and r2 does it once. r1 never finished it."""
    config = _team(tmp_path, team, domain)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    r1 = RobotNode(
        "/r1", domain, PLATE, tmp_path, {"durations": {"plate": 60}, "start": [1.5, 0.5]}
    )
    r2 = RobotNode("/r2", domain, PLATE, tmp_path, {"start": [1.2, 0.9]})
    watcher = Watcher("watcher", team=team, endpoint=mosquitto.endpoint)
    async with watcher:
        r1.start()
        try:
            for agent_id in ("r1-driver", "r2-driver", "recorder", "r1", "r2"):
                procs.start(agent_id)
            await eventually(lambda: r1.own_state()["executions"], 60, what="r1 executes")
            r2.start()
            await eventually(
                lambda: any(o["objects"] for o in watcher.bodies("observation", "r2-driver")),
                30,
                what="r2's robot online",
            )
            assert watcher.bodies("behaviour.failed", "r1-driver") == []
            r1.kill()
            failed = await eventually(
                lambda: watcher.bodies("behaviour.failed", "r1-driver"), 30, what="r1 fails"
            )
            await eventually(lambda: watcher.done(), 60, what="the node done")
            await _wait_exit(procs, "r1", "r2")
        finally:
            r1.stop()
            r2.stop()
    reason = failed[0]["reason"]
    assert reason.startswith("connection_broken: no pose on /r1/odom for"), reason
    own1, own2 = r1.own_state(), r2.own_state()
    assert own1["executions"] == {"plate": 1} and own1["done"] == []
    assert own2["executions"] == {"plate": 1} and own2["done"] == ["plate"]
    assert [a for a, _ in watcher.done()] == ["r2"]
    assert len(watcher.bodies("behaviour.finished", "r2-driver")) == 1
    gone = [
        o
        for o in watcher.bodies("observation", "r1-driver")
        if o["robot"]["connection"] == "OFFLINE"
    ]
    assert gone and all(o["objects"] == {} for o in gone)


async def test_driver_frozen_past_the_lease_the_guard_cancels_the_goal(
    mosquitto, team, domain, tmp_path: Path, agent_procs
) -> None:
    """r1's driver is frozen (SIGSTOP) while its robot executes a long goal. Its lease
    guard, a process of its own, cancels the goal through the action's cancel service
    when the lease lapses; r1 gives the node back once its driver is gone past the
    lease, and r2 does it. The robot's own log shows r1's goal canceled before r2's
    began: never on two bodies at once, done exactly once."""
    lease = "lease_s = 2.0\nlease_renew_s = 0.5\n"
    config = _team(tmp_path, team, domain, robot_extra=lease)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    r1 = RobotNode(
        "/r1", domain, PLATE, tmp_path, {"durations": {"plate": 60}, "start": [1.5, 0.5]}
    )
    r2 = RobotNode("/r2", domain, PLATE, tmp_path, {"start": [1.2, 0.9]})
    watcher = Watcher("watcher", team=team, endpoint=mosquitto.endpoint)
    frozen = None
    async with watcher:
        r1.start()
        try:
            for agent_id in ("r1-driver", "r2-driver", "recorder", "r1", "r2"):
                procs.start(agent_id)
            await eventually(lambda: r1.own_state()["executions"], 60, what="r1 executes")
            r2.start()
            frozen = procs.procs["r1-driver"].pid
            os.kill(frozen, signal.SIGSTOP)
            await eventually(lambda: r1.own_state()["canceled"], 30, what="the guard cancels")
            await eventually(lambda: watcher.done(), 60, what="the node done")
            os.kill(frozen, signal.SIGCONT)
            frozen = None
            await _wait_exit(procs, "r1", "r2")
        finally:
            if frozen is not None:
                os.kill(frozen, signal.SIGCONT)
            r1.stop()
            r2.stop()
    own1, own2 = r1.own_state(), r2.own_state()
    assert own1["executions"] == {"plate": 1} and own1["canceled"] == ["plate"]
    assert own1["done"] == []
    assert own2["executions"] == {"plate": 1} and own2["done"] == ["plate"]
    assert max(_times(own1, "canceled")) < min(_times(own2, "executes"))
    assert [a for a, _ in watcher.done()] == ["r2"]
    assert "driver.lease_guard_cancelled" in procs.log("r1-driver")
