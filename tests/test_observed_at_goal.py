"""A leaf whose object the world shows at its goal is done ("done means done"), read
from the driver's observations: from a delta that carries the object, while the robot's
own arm moves (a working robot's every observation), and, for an object that was at
its goal before the robot's controller existed, from the next keyframe, which shows
every object."""

from __future__ import annotations

import asyncio

from teamtree.broker import Incoming
from teamtree.planners.tasktree import PotentialsChanged, TaskController, Tick
from tests.robot_in_process import (
    TREE,
    arm_observation,
    observation,
    robot_holding_a_leaf,
)


def _delta(hid: int, arm_z: float, *, full: bool = False, **objects: dict) -> Incoming:
    """A delta: only `objects` (changed since the keyframe), the arm at height `arm_z`;
    with `full`, a keyframe of `objects`."""
    return arm_observation(hid, arm_z, objects, full=full)


TEA_AT_GOAL = {"shape": "cylinder", "dims": [0.03, 0.1], "position": [0.2, -0.2, 0.8],
               "goal": [0.2, -0.2, 0.8], "at_goal": True, "held_by": None}  # fmt: skip
CUP = {"shape": "cylinder", "dims": [0.03, 0.1], "position": [0.0, 0.0, 0.8],
       "goal": [0.0, -0.2, 0.8], "at_goal": False, "held_by": None}  # fmt: skip


def test_an_object_a_delta_shows_at_its_goal_is_done_while_the_arm_moves() -> None:
    async def run() -> TaskController:
        robot, _node, command_id = await robot_holding_a_leaf()
        await robot.receiver.receive(observation(command_id, 1))  # the keyframe
        await robot.receiver.receive(_delta(2, 0.95))  # the arm moves, nothing else
        assert "root/1" not in robot.controller.done
        await robot.receiver.receive(_delta(3, 1.0, tea=TEA_AT_GOAL))  # a teammate placed the tea
        return robot.controller

    assert "root/1" in asyncio.run(run()).done


def test_an_object_at_its_goal_before_the_mission_is_done_at_the_next_keyframe() -> None:
    async def run() -> TaskController:
        robot, _node, _command = await robot_holding_a_leaf()
        robot.controller = None  # the mission has not started: nothing to confirm yet
        await robot.receiver.receive(observation(None, 1))
        await robot.receiver.receive(_delta(2, 0.9, tea=TEA_AT_GOAL))
        robot.controller = c = TaskController(TREE, "pr2", default_potential=0.0)
        await robot.feed(PotentialsChanged({"root/0": 1.0, "root/1": 0.5}))
        await robot.feed(Tick())
        await robot.receiver.receive(_delta(3, 0.95))  # the tea's view is unchanged: not read
        assert "root/1" not in c.done
        await robot.receiver.receive(_delta(4, 1.0, full=True, cup=CUP, tea=TEA_AT_GOAL))
        return c

    assert "root/1" in asyncio.run(run()).done
