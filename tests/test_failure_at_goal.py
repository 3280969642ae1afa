"""A behaviour that failed while its body held the object (a lease that lapsed in the
release, a cancel): the body put the object down where the gripper was, which may be
its goal. The driver's ``behaviour.failed`` and the observation showing the object
``at_goal`` race; the robot waits for the observations before it gives the node back,
so whichever comes first, the leaf is reported ``done`` by the robot whose body placed
it, and a failure that left the object elsewhere still gives the node back."""

from __future__ import annotations

import asyncio

from teamtree.agents.tasktree.driver_link import FAILURE_HOLD_OBSERVATIONS
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Incoming
from teamtree.planners.tasktree import NodeStatus, PublishTransition
from tests.robot_in_process import from_driver, observation, robot_holding_a_leaf


def _observation(hid: int, *, held: bool, at_goal: bool, busy: str | None) -> Incoming:
    """The cup held by pr2's body, or put down at its goal or short of it."""
    return observation(
        busy,
        hid,
        position=[0.0, -0.2, 0.8] if at_goal else [0.0, -0.1, 0.85],
        at_goal=at_goal,
        held_by="pr2" if held else None,
    )


def _failed(command_id: str, hid: int) -> Incoming:
    body = {"command_id": command_id, "node": "root/0", "robot": "pr2", "ok": False,
            "reason": "lease_expired", "t": float(hid)}  # fmt: skip
    return from_driver("behaviour.failed", "progress", body, hid)


class Recorder(RobotAgent):
    """The robot, keeping the transitions its controller publishes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.transitions: list[tuple[str, NodeStatus]] = []

    async def _act(self, action) -> None:  # type: ignore[no-untyped-def]
        if isinstance(action, PublishTransition):
            self.transitions.append((action.transition.node, action.transition.status))
        await super()._act(action)


async def _robot_holding_the_cup() -> tuple[Recorder, str]:
    robot, _, command_id = await robot_holding_a_leaf(Recorder)
    await robot.receiver.receive(_observation(1, held=True, at_goal=False, busy=command_id))
    return robot, command_id


def test_a_failure_before_the_observation_of_the_object_at_its_goal_reports_done() -> None:
    async def run() -> Recorder:
        robot, command_id = await _robot_holding_the_cup()
        await robot.receiver.receive(_failed(command_id, 2))
        assert robot.controller.my_working == "root/0"  # held, waiting for the world
        await robot.receiver.receive(_observation(3, held=False, at_goal=True, busy=None))
        for hid in range(4, 4 + FAILURE_HOLD_OBSERVATIONS):
            await robot.receiver.receive(_observation(hid, held=False, at_goal=True, busy=None))
        return robot

    robot = asyncio.run(run())
    c = robot.controller
    assert c is not None and "root/0" in c.done and c.my_working is None
    assert ("root/0", NodeStatus.DONE) in robot.transitions, robot.transitions
    assert ("root/0", NodeStatus.INACTIVE) not in robot.transitions, robot.transitions
    assert robot.executed[-1] == {"node": "root/0", "ok": False, "reason": "lease_expired"}


def test_a_failure_that_left_the_object_elsewhere_gives_the_node_back() -> None:
    async def run() -> Recorder:
        robot, command_id = await _robot_holding_the_cup()
        await robot.receiver.receive(_failed(command_id, 2))
        for hid in range(3, 3 + FAILURE_HOLD_OBSERVATIONS):
            assert robot.controller.my_working == "root/0"
            await robot.receiver.receive(_observation(hid, held=False, at_goal=False, busy=None))
        return robot

    robot = asyncio.run(run())
    c = robot.controller
    assert c is not None and "root/0" not in c.done and c.my_working is None
    assert robot.transitions[-1] == ("root/0", NodeStatus.INACTIVE), robot.transitions
    assert robot.executed[-1] == {"node": "root/0", "ok": False, "reason": "lease_expired"}


def test_a_held_failure_is_given_back_by_its_deadline_when_no_observation_comes() -> None:
    async def run() -> Recorder:
        robot, command_id = await _robot_holding_the_cup()
        robot.link.renewed_at = float("inf")  # no lease renewal in this test
        await robot.receiver.receive(_failed(command_id, 2))
        await robot.on_tick()
        assert robot.controller.my_working == "root/0"
        await asyncio.sleep(0.6)  # FAILURE_HOLD_S
        await robot.on_tick()
        return robot

    robot = asyncio.run(run())
    c = robot.controller
    assert c is not None and c.my_working is None and "root/0" not in c.done
    assert robot.transitions[-1] == ("root/0", NodeStatus.INACTIVE), robot.transitions


def test_a_failure_before_the_grasp_gives_the_node_back_at_once() -> None:
    async def run() -> Recorder:
        robot, command_id = await _robot_holding_the_cup()
        await robot.receiver.receive(_observation(2, held=False, at_goal=False, busy=command_id))
        await robot.receiver.receive(_failed(command_id, 3))
        return robot

    robot = asyncio.run(run())
    c = robot.controller
    assert c is not None and c.my_working is None
    assert robot.transitions[-1] == ("root/0", NodeStatus.INACTIVE), robot.transitions
