"""A robot agent run in-process, fed its driver's messages by hand (no broker): for
tests of how it reacts to what its driver says (``tests/test_body_watch.py``,
``tests/test_failure_at_goal.py``)."""

from __future__ import annotations

from typing import Any

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build
from teamtree.planners.tasktree import (
    BodyWatch,
    PotentialsChanged,
    TaskController,
    Tick,
    parse_tree,
)

TEAM = "t1"
TREE = parse_tree("AND(PLACE(object=cup), PLACE(object=tea))")


def from_driver(kind: str, channel: str, body: dict[str, Any], hid: int) -> Incoming:
    """A message of pr2's driver as the robot's connection hands it over."""
    env = Envelope(kind, "pr2-driver", hid, 1, HlcStamp(hid, 0, "pr2-driver"), body)
    return Incoming(build(TEAM, "pr2-driver", channel), encode(env), False, 0)


def observation(
    busy: str | None, hid: int, tea: dict[str, Any] | None = None, **cup: Any
) -> Incoming:
    """The driver's keyframe: the cup and the tea on the table, neither held nor at its
    goal unless `cup` (or `tea`) says otherwise for the cup (the tea); the body runs
    `busy`."""
    objects = {
        name: {"shape": "cylinder", "dims": [0.03, 0.1], "position": [x, 0.0, 0.8],
               "goal": [x, -0.2, 0.8], "at_goal": False, "held_by": None}
        for name, x in (("cup", 0.0), ("tea", 0.2))
    }  # fmt: skip
    objects["cup"].update(cup)
    objects["tea"].update(tea or {})
    body = {
        "t": float(hid),
        "robot": {"name": "pr2", "arm": [0.0, -0.3, 0.9], "base": [0.0, -0.65, 0.0],
                  "yaw": 1.5708, "busy": busy, "paused": False},
        "objects": objects,
    }  # fmt: skip
    return from_driver("observation", "observation", body, hid)


def arm_observation(
    hid: int, arm_z: float, objects: dict[str, Any], *, full: bool = False
) -> Incoming:
    """The driver's observation of an idle pr2 with its arm at height `arm_z`: a delta
    carrying only `objects` (changed since the keyframe), or with `full` a keyframe."""
    body = {
        "t": float(hid),
        "robot": {"name": "pr2", "arm": [0.0, -0.3, arm_z], "base": [0.0, -0.65, 0.0],
                  "yaw": 1.5708, "busy": None, "paused": False},
        "objects": objects,
        "full": full,
    }  # fmt: skip
    return from_driver("observation", "observation", body, hid)


async def robot_holding_a_leaf(
    cls: type[RobotAgent] = RobotAgent, body_watch: BodyWatch | None = None
) -> tuple[Any, str, str]:
    """A robot `pr2` (peer `baxter` offline) that won the cup's leaf and sent its
    execute: (robot, node, command id)."""
    robot = cls(
        "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
        params=RobotParams(profile="pr2", driver="pr2-driver"), roster=["pr2", "baxter"],
    )  # fmt: skip
    await robot.setup()
    if body_watch is not None:
        robot.link.body_watch = body_watch
    robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
    await robot.feed(PotentialsChanged({"root/0": 1.0, "root/1": 0.5}))
    await robot.feed(Tick())  # no peers online: the claim is won at once
    node = robot.controller.my_working
    assert node == "root/0"
    return robot, node, robot.link.command_of[node]
