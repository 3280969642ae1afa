"""Who a robot takes a declaration of interest from (agents/treeprotocol/peer_member.py).

A declaration makes its sender a peer whose acknowledgement every claim waits for
(planners/tasktree/interest.py, I3), so a robot takes ``node.interest`` and
``node.interest_ack`` only from agents of its own kind: from any other member of the
roster, or one whose kind it does not know, they are dropped and counted
(``dropped.not_peer``) and its claims go on as before.
"""

from __future__ import annotations

import asyncio

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.agents.treeprotocol.peer_wire import interest_to_wire
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build
from teamtree.planners.tasktree import Interest, PotentialsChanged, TaskController, Tick
from tests.robot_in_process import TEAM, TREE


def _declaration(sender: str, hid: int) -> Incoming:
    body = interest_to_wire(Interest(sender, (hid, 0, sender), tuple(TREE.leaves)))
    env = Envelope("node.interest", sender, hid, 1, HlcStamp(hid, 0, sender), body)
    return Incoming(build(TEAM, None, "interest"), encode(env), False, 1)


def test_a_declaration_counts_only_from_an_agent_of_the_robots_kind() -> None:
    async def run() -> RobotAgent:
        robot = RobotAgent(
            "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
            params=RobotParams(profile="pr2", driver="pr2-driver"),
            roster=["pr2", "baxter", "world"],
        )  # fmt: skip
        await robot.setup()
        robot.team_view.apply_factsheet("world", {"kind": "world"})
        robot.team_view.apply_factsheet("baxter", {"kind": "robot"})
        robot.controller = TaskController(
            TREE, "pr2", default_potential=0.0, declared_interest=True
        )
        await robot.feed(PotentialsChanged({"root/0": 1.0, "root/1": 0.5}))
        await robot._receive(_declaration("world", 1))  # a member, not a robot
        await robot._receive(_declaration("stranger", 2))  # kind unknown
        assert robot.stats["dropped.not_peer"] == 2, dict(robot.stats)
        assert robot.controller.peers_online == set()
        await robot.feed(Tick())  # declares
        await robot.feed(Tick())  # nobody to wait for: claims and wins
        assert robot.controller.my_working == "root/0"
        await robot._receive(_declaration("baxter", 3))  # a robot: taken
        assert robot.controller.peers_online == {"baxter"}
        return robot

    asyncio.run(run())
