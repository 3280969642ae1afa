"""A robot's published grasp scores (``node.grasp_scores``, retained) are its current
ones: after every observation the last one published equals every leaf's rounded
grasp score, and a score that did not change publishes nothing. The robot compares
only the leaves whose scores were written since its last look (at 500 leaves, building
the whole dict on every observation was a sixth of the observation handler)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, decode
from teamtree.planners.tasktree import TaskController, parse_tree
from tests.robot_in_process import TEAM, arm_observation

TREE = parse_tree("AND(PLACE(object=cup), PLACE(object=tea), PLACE(object=jar))")
NAMES = ("cup", "tea", "jar")

#: one observation: whether it is a keyframe, the arm's height, and per object an x
#: position (None: the delta leaves it out; a keyframe shows it where it was)
steps = st.lists(
    st.tuples(
        st.booleans(),
        st.sampled_from([0.85, 0.9, 1.0]),
        st.fixed_dictionaries({n: st.sampled_from([None, -0.1, 0.0, 0.15]) for n in NAMES}),
    ),
    min_size=1,
    max_size=12,
)


def _objects(where: dict[str, float]) -> dict[str, Any]:
    return {
        name: {"shape": "cylinder", "dims": [0.03, 0.1], "position": [x, 0.1, 0.8],
               "goal": [x, -0.3, 0.8], "at_goal": False, "held_by": None}
        for name, x in where.items()
    }  # fmt: skip


def _published(robot: RobotAgent) -> list[dict[str, float]]:
    """Every ``node.grasp_scores`` body the robot published (its outbox: no broker)."""
    out = []
    for message in robot.connection._outbox:
        if message.topic.endswith("/scores"):
            out.append(decode(message.payload).body["grasp"])
    return out


def _current(robot: RobotAgent) -> dict[str, float]:
    return {
        leaf: round(score["grasp"], 2)
        for leaf, score in robot.grasps.scores.items()
        if score.get("grasp") is not None
    }


@settings(max_examples=40, deadline=None, print_blob=True)
@given(steps)
def test_the_last_grasp_scores_published_are_the_current_ones(
    observations: list[tuple[bool, float, dict[str, float | None]]],
) -> None:
    async def run() -> None:
        robot = RobotAgent(
            "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
            params=RobotParams(profile="pr2", driver="pr2-driver"), roster=["pr2"],
        )  # fmt: skip
        await robot.setup()
        await robot.grasps.load_numpy()
        robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
        where = {n: 0.3 + 0.1 * i for i, n in enumerate(NAMES)}
        await robot.receiver.receive(arm_observation(1, 0.9, _objects(where), full=True))
        for hid, (full, arm_z, moves) in enumerate(observations, start=2):
            before = len(_published(robot))
            changed = {n: x for n, x in moves.items() if x is not None}
            where.update(changed)
            shown = where if full else changed
            await robot.receiver.receive(arm_observation(hid, arm_z, _objects(shown), full=full))
            published = _published(robot)
            assert published, "the first observation publishes the scores"
            assert published[-1] == _current(robot), (hid, published[-1], _current(robot))
            if len(published) > before and len(published) > 1:
                assert published[-1] != published[-2], "published again, unchanged"

    asyncio.run(run())
