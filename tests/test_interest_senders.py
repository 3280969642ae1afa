"""Who a robot takes a declaration of interest from (agents/treeprotocol/peer_member.py).

A declaration makes its sender a peer whose acknowledgement every claim waits for
(planners/tasktree/interest.py, I3), so a robot takes ``node.interest`` and
``node.interest_ack`` only from agents of its own kind: from any other member of the
roster, or one whose kind it does not know, they are dropped and counted
(``dropped.not_peer``) and its claims go on as before. One from a roster member whose
presence has not been read yet (a robot joining a running team gets a running peer's
retained presence together with the declaration that peer addressed to it, and the
declaration's lane passes the presence) is held and taken once the presence says
the member is a robot, after the presence change itself.
"""

from __future__ import annotations

import asyncio

from teamtree.agents.runtime.presence_wire import presence_body
from teamtree.agents.runtime.team_view import Presence
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.agents.treeprotocol.peer_wire import interest_ack_to_wire, interest_to_wire
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import build
from teamtree.planners.tasktree import (
    Interest,
    InterestAck,
    PotentialsChanged,
    TaskController,
    Tick,
)
from tests.robot_in_process import TEAM, TREE


def _declaration(sender: str, hid: int, to: str | None = None) -> Incoming:
    """`sender`'s declaration of every leaf, to the team or (`to`) addressed to one."""
    body = interest_to_wire(Interest(sender, (hid, 0, sender), tuple(TREE.leaves)))
    env = Envelope("node.interest", sender, hid, 1, HlcStamp(hid, 0, sender), body, to=to)
    topic = build(TEAM, None, "interest") if to is None else build(TEAM, sender, "interest", to)
    return Incoming(topic, encode(env), False, 1)


def _ack(sender: str, declaration: Interest, hid: int) -> Incoming:
    """`sender`'s acknowledgement of `declaration`, addressed to its declarer."""
    ack = InterestAck(sender, declaration.agent, declaration.stamp, None)
    env = Envelope(
        "node.interest_ack", sender, hid, 1, HlcStamp(hid, 0, sender),
        interest_ack_to_wire(ack), to=declaration.agent,
    )  # fmt: skip
    return Incoming(build(TEAM, sender, "interest_ack", declaration.agent), encode(env), False, 1)


def _presence(sender: str, kind: str, hid: int) -> Incoming:
    """`sender`'s retained ONLINE presence as an agent of `kind`."""
    now = wall_ms()
    body = presence_body(Presence.ONLINE, kind, f"{sender}-session", since=now)
    env = Envelope("presence", sender, hid, now, HlcStamp(now, 0, sender), body)
    return Incoming(build(TEAM, sender, "connection"), encode(env), True, 1)


async def _declaring_robot() -> RobotAgent:
    """pr2, of roster pr2, baxter and world, knowing nobody's presence yet, with a
    declaring controller that has made its first declaration."""
    robot = RobotAgent(
        "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
        params=RobotParams(profile="pr2", driver="pr2-driver"),
        roster=["pr2", "baxter", "world"],
    )  # fmt: skip
    await robot.setup()
    robot.controller = TaskController(TREE, "pr2", default_potential=0.0, declared_interest=True)
    await robot.feed(PotentialsChanged({"root/0": 1.0, "root/1": 0.5}))
    await robot.feed(Tick())  # declares
    assert robot.controller.interest is not None and robot.controller.interest.mine is not None
    return robot


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
        await robot.receiver.receive(_declaration("world", 1))  # a member, not a robot
        await robot.receiver.receive(_declaration("stranger", 2))  # kind unknown
        assert robot.stats["dropped.not_peer"] == 2, dict(robot.stats)
        assert robot.controller.peers_online == set()
        await robot.feed(Tick())  # declares
        await robot.feed(Tick())  # nobody to wait for: claims and wins
        assert robot.controller.my_working == "root/0"
        await robot.receiver.receive(_declaration("baxter", 3))  # a robot: taken
        assert robot.controller.peers_online == {"baxter"}
        return robot

    asyncio.run(run())


def test_a_declaration_before_its_senders_presence_counts_once_the_presence_comes() -> None:
    async def run() -> None:
        robot = await _declaring_robot()
        book = robot.controller.interest
        await robot.receiver.receive(_declaration("baxter", 1, to="pr2"))  # before its presence
        assert robot.stats["dropped.not_peer"] == 0, dict(robot.stats)
        assert robot.stats["held_for_presence"] == 1
        assert book.of("baxter") == frozenset(), "taken before its kind was known"
        assert robot.controller.peers_online == set()
        await robot.receiver.receive(_presence("baxter", "robot", 2))
        assert robot.controller.peers_online == {"baxter"}
        assert book.of("baxter") == frozenset(TREE.leaves), "the held declaration was lost"
        assert robot.stats["dropped.not_peer"] == 0, dict(robot.stats)

    asyncio.run(run())


def test_an_acknowledgement_before_its_senders_presence_counts_after_the_presence() -> None:
    async def run() -> None:
        robot = await _declaring_robot()
        book = robot.controller.interest
        await robot.receiver.receive(_ack("baxter", book.mine, 1))  # before its presence: held
        assert book.unacknowledged(["baxter"]) == ["baxter"], "counted before its kind was known"
        await robot.receiver.receive(_presence("baxter", "robot", 2))
        # the presence change asks baxter to acknowledge anew (I3); the held
        # acknowledgement, taken after it, is that acknowledgement
        assert robot.controller.peers_online == {"baxter"}
        assert book.ready(robot.controller.peers_online), "the held acknowledgement was lost"
        await robot.feed(Tick())  # baxter declared nothing: no reply needed; claims, wins
        assert robot.controller.my_working == "root/0"

    asyncio.run(run())


def test_a_held_declaration_of_a_member_of_another_kind_is_dropped_at_its_presence() -> None:
    async def run() -> None:
        robot = await _declaring_robot()
        await robot.receiver.receive(
            _declaration("world", 1)
        )  # a member whose kind is not known yet
        assert robot.stats["dropped.not_peer"] == 0
        await robot.receiver.receive(_presence("world", "world", 2))
        assert robot.stats["dropped.not_peer"] == 1, dict(robot.stats)
        assert robot.controller.peers_online == set()
        assert robot.controller.interest.of("world") == frozenset()

    asyncio.run(run())


def test_held_declarations_are_bounded_per_member() -> None:
    async def run() -> None:
        robot = await _declaring_robot()
        for hid in range(1, 50):
            await robot.receiver.receive(_declaration("baxter", hid))
            await robot.receiver.receive(_declaration("baxter", 100 + hid, to="pr2"))
        assert robot._held is not None and len(robot._held) == 1, robot._held
        await robot.receiver.receive(_declaration("stranger", 500))  # outside the roster: dropped
        assert len(robot._held) == 1
        assert robot.stats["dropped.not_peer"] == 1, dict(robot.stats)

    asyncio.run(run())
