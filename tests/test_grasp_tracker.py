"""A robot's scores per leaf, alone (no agent): the potentials of an observed world,
the grasp a started behaviour owes and pays, and the grasp scores that go out only
when one changed."""

from __future__ import annotations

import msgspec
import structlog

from teamtree.agents.runtime.observation_wire import decode_observation
from teamtree.agents.tasktree.grasp_tracker import GraspTracker
from teamtree.agents.tasktree.world_view import WorldView
from teamtree.planners.tasktree import ActivationMetric
from tests.robot_in_process import TREE

CUP, TEA = "root/0", "root/1"


def _world(cup_x: float = 0.0) -> WorldView:
    """pr2's view of the cup and the tea on the table before it."""
    world = WorldView(TREE, "pr2", "pr2")
    objects = {
        name: {"shape": "cylinder", "dims": [0.03, 0.1], "position": [x, 0.0, 0.8],
               "goal": [x, -0.2, 0.8], "at_goal": False, "held_by": None}
        for name, x in (("cup", cup_x), ("tea", 0.2))
    }  # fmt: skip
    body = {"t": 1.0, "objects": objects,
            "robot": {"name": "pr2", "arm": [0.0, -0.3, 0.9], "base": [0.0, -0.65, 0.0],
                      "yaw": 1.5708, "busy": None, "paused": False}}  # fmt: skip
    obs = decode_observation(body)
    world.merge(obs)
    world.absorb(msgspec.structs.replace(obs, full=True))
    return world


def test_distance_only_potentials_score_no_grasp_and_a_start_owes_it() -> None:
    world = _world()
    grasps = GraspTracker(world, ActivationMetric.named("distance"), 1.0, seed=7)
    potentials = grasps.potentials()
    assert set(potentials) == {CUP, TEA} and all(p > 0 for p in potentials.values())
    assert grasps.scores[CUP]["grasp"] is None and grasps.cache == {}
    score, owed = grasps.started(CUP)
    assert owed and score["grasp"] is None and grasps.owed[CUP][0] == "cup"
    grasps.score_owed(CUP, structlog.get_logger("test"))
    assert CUP not in grasps.owed and grasps.scores[CUP]["grasp"] is not None
    assert grasps.grasps_to_publish() == {CUP: round(grasps.scores[CUP]["grasp"], 2)}
    assert grasps.grasps_to_publish() is None  # nothing new since


def test_distance_and_grasp_potentials_are_published_once_per_change() -> None:
    world = _world()
    grasps = GraspTracker(world, ActivationMetric.named("distance+grasp"), 1.0, seed=7)
    grasps.potentials()
    published = grasps.grasps_to_publish()
    assert published is not None and set(published) == {CUP, TEA}
    grasps.potentials()  # the same poses: the same (cached) scores
    assert grasps.grasps_to_publish() is None
    score, owed = grasps.started(CUP)
    assert score["grasp"] is not None and not owed and not grasps.owed  # known: no debt


def test_a_score_depends_on_the_seed_and_pose_not_on_the_order() -> None:
    world = _world()
    first = GraspTracker(world, ActivationMetric.named("distance+grasp"), 1.0, seed=7)
    second = GraspTracker(world, ActivationMetric.named("distance+grasp"), 1.0, seed=7)
    cup, tea = world.objects["cup"], world.objects["tea"]
    a = (first.grasp("cup", cup), first.grasp("tea", tea))
    b = (second.grasp("tea", tea), second.grasp("cup", cup))
    assert a == b[::-1]
