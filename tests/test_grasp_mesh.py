"""The mesh grasp scorer (seed 000 §2.4.2): antipodal grasps sampled on object models,
filtered by each arm's gripper, orientation, table, approach and reach at the pose."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.hardware.profiles import arm_model
from teamtree.planners.tasktree import MeshGraspScorer, ShapePrimitive, object_model
from teamtree.planners.tasktree.grasp_mesh import grasp_candidates
from tests.conftest import REPO, benchmark_module

tables = benchmark_module("bench_grasp_tables")

SCORER = MeshGraspScorer()


def scene(scenario: int) -> tuple[dict[str, ShapePrimitive], dict[str, object]]:
    doc = tomllib.loads((REPO / "configs" / f"tea_party_s{scenario}.toml").read_text())
    world = next(a for a in doc["agents"] if a.get("kind") == "world")
    shapes = {
        n: ShapePrimitive(o["shape"], tuple(o["dims"]), tuple(o["position"]), o.get("yaw", 0.0))
        for n, o in world["objects"].items()
    }
    arms = {
        r: arm_model(s["profile"], tuple(s["base"]), yaw=float(s.get("yaw", 0.0)))
        for r, s in world["robots"].items()
    }
    return shapes, arms


@pytest.mark.parametrize("scenario", (1, 2, 3))
@pytest.mark.parametrize("name", ("sandwich", "orange", "apple"))
def test_the_pr2_gets_no_sideways_grasp_on_wide_objects(scenario: int, name: str) -> None:
    """§2.4.1: too wide for the PR2's 9 cm gripper held sideways (Table 1's zeros)."""
    shapes, arms = scene(scenario)
    result = SCORER.score(shapes[name], arms["pr2"], name=name)
    assert result.score == 0.0 and result.n_candidates == 0, result
    assert SCORER.score(shapes[name], arms["baxter"], name=name).score > 1.0


def test_the_baxter_takes_the_tea_pot_by_its_knob_and_handle_from_above() -> None:
    """The tea pot model has a lid knob and a handle; top-down grasps survive on both."""
    shapes, arms = scene(2)
    pot = shapes["tea_pot"]
    keep, _, f, g = SCORER.surviving(pot, arms["baxter"], "tea_pot")
    local = g[keep] - pot.center
    r, h = pot.dimensions
    assert np.all(-f.approach[keep][:, 2] >= math.cos(math.radians(20.0)))
    knob = (np.hypot(local[:, 0], local[:, 1]) < 0.5 * r) & (local[:, 2] > 0.3 * h)
    handle = local[:, 0] < -r - 0.005  # the handle stands out on -x (yaw 0)
    assert knob.sum() >= 5 and handle.sum() >= 5, (knob.sum(), handle.sum())


def test_the_score_changes_with_the_pose() -> None:
    """The PR2's burger, farther from its shoulder in S3 than in S2 (15 / 91 / 5 in the
    paper): fewer grasps within easy reach; and out of reach altogether, 0."""
    s2, arms = scene(2)
    s3, _ = scene(3)
    pr2 = arms["pr2"]
    assert (
        SCORER.score(s2["burger"], pr2, name="burger").score
        > 1.5 * SCORER.score(s3["burger"], pr2, name="burger").score
    )
    far = ShapePrimitive("cylinder", s2["burger"].dimensions, (5.0, 5.0, 0.785))
    assert SCORER.score(far, pr2, name="burger").score == 0.0


def test_candidates_are_deterministic_for_a_seed() -> None:
    model = object_model("orange", ShapePrimitive("sphere", (0.045,), (0.0, 0.0, 0.0)))
    build = grasp_candidates.__wrapped__
    a = build(model, 0.14, 0.05, 0.02, seed=3)
    b = build(model, 0.14, 0.05, 0.02, seed=3)
    c = build(model, 0.14, 0.05, 0.02, seed=4)
    assert np.array_equal(a.position, b.position) and np.array_equal(a.quality, b.quality)
    assert len(a) > 50 and not (len(a) == len(c) and np.array_equal(a.position, c.position))


SUGAR = ShapePrimitive("box", (0.06, 0.06, 0.08), (0.0, 0.0, 0.79))


@settings(max_examples=40, deadline=None, print_blob=True)
@given(
    x=st.floats(-2.0, 2.0),
    y=st.floats(-2.0, 2.0),
    yaw=st.floats(-math.pi, math.pi),
    robot=st.sampled_from(("pr2", "baxter")),
)
def test_scores_stay_in_range_and_vanish_out_of_reach(
    x: float, y: float, yaw: float, robot: str
) -> None:
    _, arms = scene(1)
    arm = arms[robot]
    shape = ShapePrimitive("box", SUGAR.dimensions, (x, y, 0.79), yaw)
    result = SCORER.score(shape, arm, name="sugar")
    assert 0.0 <= result.score <= 100.0, (x, y, yaw, robot, result)
    reach = arm.reach + (arm.base_travel if arm.mobile_base else 0.0)
    d = float(np.linalg.norm(np.asarray(shape.position) - np.asarray(arm.base_position)))
    if d > reach + 0.2:  # the grasp centre lies within the box, the wrist behind it
        assert result.score == 0.0, (x, y, yaw, robot, d, result)


@pytest.mark.slow
def test_with_mesh_scores_the_burger_goes_to_the_pr2_in_scenario_2() -> None:
    """§4, S2: the Baxter, free first at the orange's goal, prefers the tea pot (its
    knob and handle from above) to the far burger, and the PR2 takes the burger."""
    r = tables.trial(2, "distance+grasp", "mesh")
    assert r.placer("burger") == "pr2" and r.placer("tea_pot") == "baxter", tables.describe(r)


def test_a_robot_chooses_the_mesh_scorer_in_its_config() -> None:
    import msgspec

    from teamtree.agents.tasktree.grasp_tracker import GraspTracker
    from teamtree.agents.tasktree.params import RobotParams
    from teamtree.planners.tasktree import ActivationMetric, GraspScorer

    params = msgspec.convert({"profile": "pr2", "driver": "d", "grasp_scorer": "mesh"}, RobotParams)
    tracker = GraspTracker(None, ActivationMetric(), 1.0, 0, params.grasp_scorer)  # type: ignore[arg-type]
    assert isinstance(tracker.scorer, MeshGraspScorer)
    assert isinstance(GraspTracker(None, ActivationMetric(), 1.0, 0).scorer, GraspScorer)  # type: ignore[arg-type]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"profile": "pr2", "driver": "d", "grasp_scorer": "gpd"}, RobotParams)
