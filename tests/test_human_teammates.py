"""A robot's human teammates are peers whose answers it gives itself, from their
models: a claim or a declaration of interest sent to a human goes nowhere on the wire,
and the model's reply comes back to the controller (Fig. 4/5 step 2). Run on a robot
in-process (no broker): its publishes stay in its connection's outbox."""

from __future__ import annotations

import asyncio

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint
from teamtree.planners.tasktree import (
    Claim,
    ClaimReply,
    Interest,
    InterestAck,
    PeerState,
    TaskController,
)
from tests.robot_in_process import TEAM, TREE


async def _robot() -> RobotAgent:
    robot = RobotAgent(
        "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
        roster=["pr2", "alice"], humans={"alice": "alice_hand"},
        params=RobotParams(profile="pr2", driver="pr2-driver"),
    )  # fmt: skip
    await robot.setup()
    robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
    return robot


def test_a_claim_to_a_human_is_answered_by_the_model_not_sent() -> None:
    async def run() -> None:
        robot = await _robot()
        humans = robot.teammates
        assert "alice" in humans and "pr2" not in humans
        claim = Claim("c1", "root/0", "pr2", (1, 0, "pr2"), 0.5)
        humans.claimed(claim, "alice")
        humans.claimed(claim, "baxter")  # another robot's: no answer from alice
        [reply] = humans.local
        assert isinstance(reply, ClaimReply) and reply.replier == "alice"
        assert [(r.node, r.state) for r in reply.reports] == [("root/0", PeerState.NONE)]
        humans.local.clear()
        humans.models["alice"].active = "root/0"  # alice reaches for the cup
        humans.claimed(claim, None)
        [reply] = humans.local
        assert [(r.node, r.state, r.agent) for r in reply.reports] == [
            ("root/0", PeerState.WORKING, "alice")
        ]
        assert not [m for m in robot.connection._outbox if "/claims" in m.topic]

    asyncio.run(run())


def test_a_human_acknowledges_a_declaration_with_every_leaf() -> None:
    async def run() -> None:
        robot = await _robot()
        interest = Interest("pr2", (1, 0, "pr2"), ("root/0",))
        robot.teammates.declared(interest, None)
        [ack] = robot.teammates.local
        assert isinstance(ack, InterestAck) and (ack.agent, ack.declarer) == ("alice", "pr2")
        assert ack.own is not None and set(ack.own.leaves) == set(TREE.leaves)

    asyncio.run(run())
