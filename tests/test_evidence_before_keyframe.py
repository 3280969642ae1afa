"""A robot that has not yet seen its driver's first keyframe believes no peer's done
on a leaf with an object: a forged done (or a retained all-done snapshot in a
member's name) that came first would otherwise count for good, and the robot would
end its mission with the objects away from their goals. The keyframe then frees the
leaves whose object the world shows without a goal, and the dones peers said on them
count."""

from __future__ import annotations

import asyncio

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint
from teamtree.planners.tasktree import NodeStatus, TaskController, Transition
from tests.robot_in_process import TEAM, TREE, observation


def test_a_peers_done_waits_for_the_worlds_keyframe() -> None:
    async def run() -> dict[str, set[str]]:
        robot = RobotAgent(
            "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
            params=RobotParams(profile="pr2", driver="pr2-driver"), roster=["pr2", "baxter"],
        )  # fmt: skip
        await robot.setup()
        evidence = robot.world.evidence_leaves()
        robot.controller = c = TaskController(
            TREE, "pr2", online_peers={"baxter"}, default_potential=0.0, evidence_leaves=evidence
        )
        for i, leaf in enumerate(("root/0", "root/1")):  # PLACE(cup), PLACE(tea)
            await robot.feed(Transition(leaf, "baxter", NodeStatus.DONE, (1_000, i, "baxter")))
        done_before = set(c.done)
        # the keyframe: the cup has a goal (evidence), the tea none (a peer's word)
        await robot.receiver.receive(observation(None, 1, tea={"goal": None}))
        return {
            "evidence_before": set(evidence),
            "done_before": done_before,
            "evidence_after": set(c.trust.evidence_leaves),
            "done_after": set(c.done),
        }

    seen = asyncio.run(run())
    assert seen["evidence_before"] == {"root/0", "root/1"}, seen
    assert seen["done_before"] == set(), seen
    assert seen["evidence_after"] == {"root/0"}, seen
    assert seen["done_after"] == {"root/1"}, seen
