"""A robot's retained snapshots, throttled: the first goes out at once, those within
the interval after it go out as one, the controller's latest, at its end; a stop
within the interval sends the last state at once. Run on a robot in-process (no
broker): its publishes stay in its connection's outbox."""

from __future__ import annotations

import asyncio

import pytest

import teamtree.agents.tasktree.snapshot_publisher as snapshot_module
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, decode
from teamtree.planners.tasktree import TaskController
from tests.robot_in_process import TEAM, TREE


def _snapshots(robot: RobotAgent) -> list[dict]:
    out = robot.connection._outbox
    return [decode(m.payload).body for m in out if m.topic.endswith("/snapshot")]


async def _robot() -> RobotAgent:
    robot = RobotAgent(
        "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE, roster=["pr2"],
        params=RobotParams(profile="pr2", driver="pr2-driver"),
    )  # fmt: skip
    await robot.setup()
    robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
    return robot


async def _until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(400):
        if check():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"never saw {what}")


def test_snapshots_within_the_interval_go_out_as_the_latest_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshot_module, "SNAPSHOT_EVERY_S", 0.2)

    async def run() -> None:
        robot = await _robot()
        c = robot.controller
        assert c is not None
        snaps = robot.snapshots
        await snaps.throttled(c.snapshot((1, 0, "pr2")))
        assert len(_snapshots(robot)) == 1 and not snaps.owed  # the first: at once
        c.done.add("root/0")  # the controller moves on within the interval
        await snaps.throttled(c.snapshot((2, 0, "pr2")))
        await snaps.throttled(c.snapshot((3, 0, "pr2")))
        assert len(_snapshots(robot)) == 1 and snaps.owed  # held back, one owed
        await _until(lambda: len(_snapshots(robot)) == 2, "the trailing snapshot")
        assert "root/0" in _snapshots(robot)[-1]["done"] and not snaps.owed
        await asyncio.sleep(0.3)
        assert len(_snapshots(robot)) == 2  # one trailing snapshot for the interval

    asyncio.run(run())


def test_a_stop_within_the_interval_sends_the_last_state_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshot_module, "SNAPSHOT_EVERY_S", 60.0)

    async def run() -> None:
        robot = await _robot()
        c = robot.controller
        assert c is not None
        await robot.snapshots.throttled(c.snapshot((1, 0, "pr2")))
        c.done.add("root/1")
        await robot.snapshots.throttled(c.snapshot((2, 0, "pr2")))
        assert len(_snapshots(robot)) == 1
        await robot.on_stop()
        assert len(_snapshots(robot)) == 2 and "root/1" in _snapshots(robot)[-1]["done"]

    asyncio.run(run())
