"""Activation metrics (seed 000 §2.4): eq. 2 distance, the grasp pipeline's filters, eq. 1."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from teamtree.broker import SpecificationError
from teamtree.planners.tasktree import (
    ActivationMetric,
    ArmModel,
    GraspScorer,
    NetworkModel,
    ShapePrimitive,
    SimConfig,
    check_invariants,
    distance_score,
    distance_scores,
    leaf_potentials,
    orientation_ok,
    parse_tree,
    simulate,
)

TABLE_Z = 0.70
SIDEWAYS = ArmModel((0.0, 0.0, 0.9), reach=1.0, gripper_max_width=0.09, orientation="sideways")
TOP_DOWN = ArmModel((1.2, 0.0, 0.9), reach=1.1, gripper_max_width=0.14, orientation="top_down")
FLAT_BAR = ShapePrimitive("box", (0.30, 0.05, 0.01), (0.6, 0.0, TABLE_Z + 0.005))
BOTTLE = ShapePrimitive("cylinder", (0.03, 0.20), (0.6, 0.0, TABLE_Z + 0.10))
BIG_BALL = ShapePrimitive("sphere", (0.06,), (0.6, 0.0, TABLE_Z + 0.06))


def score(shape: ShapePrimitive, arm: ArmModel, seed: int = 0, **kw: object) -> tuple[float, str]:
    r = GraspScorer(**kw).score(shape, arm, np.random.default_rng(seed))  # type: ignore[arg-type]
    return r.score, r.reason


def test_distance_scores_are_distance_score_row_by_row() -> None:
    rng = np.random.default_rng(3)
    arm = (0.31, -0.2, 0.93)
    points = [tuple(p) for p in rng.uniform(-2.0, 2.0, size=(500, 3)).round(4)] + [arm]
    assert distance_scores(points, arm) == [distance_score(p, arm) for p in points]
    assert distance_scores([], arm) == []


def test_crosses_are_numpy_cross_row_by_row() -> None:
    from teamtree.planners.tasktree.metrics import _crosses

    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(2, 200, 3))
    assert _crosses(a, b).tolist() == np.cross(a, b).tolist()
    assert _crosses(a, b[0]).tolist() == np.cross(a, b[0]).tolist()


def test_distance_score_is_inverse_distance() -> None:
    assert distance_score((1, 2, 2), (0, 0, 0)) == pytest.approx(1 / 3)
    assert distance_score((0, 0, 0), (0, 0, 0)) == pytest.approx(1000.0)  # floored


def test_eq1_weights_and_the_grasp_gate() -> None:
    m = ActivationMetric()
    assert (m.w_d, m.w_g) == (1.0, 0.001)
    assert m.potential((0, 0, 2), (0, 0, 0), 50.0) == pytest.approx(0.5 + 0.05)
    assert m.potential((0, 0, 2), (0, 0, 0), 0.0) == 0.0  # no grasp: cannot do it
    assert ActivationMetric(gate_on_grasp=False).potential((0, 0, 2), (0, 0, 0), 0.0) == 0.5
    d = ActivationMetric.named("distance")
    assert d.potential((0, 0, 2), (0, 0, 0), 0.0) == 0.5
    with pytest.raises(SpecificationError):
        ActivationMetric.named("grasp-only")


def test_orientation_filter() -> None:
    down, east, north, up = (0, 0, -1), (1, 0, 0), (0, 1, 0), (0, 0, 1)
    assert orientation_ok(down, east, "top_down", 20)
    assert not orientation_ok(east, north, "top_down", 20)
    assert orientation_ok(east, north, "sideways", 20)
    assert not orientation_ok(east, up, "sideways", 20)  # gripper not parallel to the floor
    assert not orientation_ok(down, east, "sideways", 20)
    tilted = (math.cos(math.radians(10)), 0, -math.sin(math.radians(10)))
    assert orientation_ok(tilted, north, "sideways", 20)
    assert orientation_ok(down, east, "any", 0)


def test_sideways_arm_scores_zero_for_an_object_only_graspable_top_down() -> None:
    assert score(FLAT_BAR, SIDEWAYS) == (0.0, "no candidate")
    s, reason = score(FLAT_BAR, TOP_DOWN)
    assert reason == "ok" and 0 < s <= 100
    # the literal §2.4.2 order (best of all, then the filter) also gives 0
    assert score(FLAT_BAR, SIDEWAYS, constrain_sampler=False)[0] == 0.0


def test_literal_order_zeroes_an_arm_whose_best_grasp_has_the_wrong_orientation() -> None:
    # a low puck: held whole from above, so the best of all candidates is top-down
    puck = ShapePrimitive("cylinder", (0.03, 0.04), (0.6, 0.0, TABLE_Z + 0.02))
    results = {score(puck, SIDEWAYS, seed=s, constrain_sampler=False)[1] for s in range(10)}
    assert "orientation" in results
    assert all(score(puck, SIDEWAYS, seed=s)[0] > 0 for s in range(10))


def test_too_wide_for_the_gripper_scores_zero() -> None:
    assert score(BIG_BALL, SIDEWAYS) == (0.0, "no candidate")  # 12 cm > 9 cm
    assert score(BIG_BALL, TOP_DOWN)[0] > 0  # 12 cm < 14 cm


def test_reachability_filter_and_mobile_base() -> None:
    far = ArmModel((3.0, 0.0, 0.9), reach=1.0, gripper_max_width=0.09, orientation="sideways")
    assert score(BOTTLE, far) == (0.0, "unreachable")
    mobile = ArmModel((3.0, 0.0, 0.9), 1.0, 0.09, "sideways", mobile_base=True, base_travel=2.0)
    assert score(BOTTLE, mobile)[1] == "ok"


def test_scores_are_deterministic_per_seed_and_in_the_papers_range() -> None:
    a = GraspScorer().score(BOTTLE, TOP_DOWN, np.random.default_rng(7))
    b = GraspScorer().score(BOTTLE, TOP_DOWN, np.random.default_rng(7))
    assert a == b
    for shape in (FLAT_BAR, BOTTLE, BIG_BALL):
        for arm in (SIDEWAYS, TOP_DOWN):
            for seed in range(3):
                s, _ = score(shape, arm, seed)
                assert 0.0 <= s <= 100.0  # Tables 1, 2 are on a 0-100 scale


def test_bad_shapes_and_arms_are_specification_errors() -> None:
    with pytest.raises(SpecificationError):
        ShapePrimitive("cone", (1.0,), (0, 0, 0))
    with pytest.raises(SpecificationError):
        ShapePrimitive("box", (1.0, 2.0), (0, 0, 0))
    with pytest.raises(ValueError):
        ArmModel((0, 0, 0), 1.0, 0.1, orientation="upside_down")


def _team_potentials(metric: ActivationMetric) -> tuple[object, dict, dict]:
    """PR2-like (sideways, near everything) and Baxter-like (top-down, farther)."""
    tree = parse_tree("AND(THEN(bar, bottle), OR(ball, bar2), bottle2)")
    objects = {
        "bar": FLAT_BAR,
        "bottle": BOTTLE,
        "ball": BIG_BALL,
        "bar2": ShapePrimitive("box", (0.25, 0.04, 0.01), (0.5, 0.2, TABLE_Z + 0.005)),
        "bottle2": ShapePrimitive("cylinder", (0.03, 0.2), (0.5, -0.2, TABLE_Z + 0.1)),
    }
    rng = np.random.default_rng(3)
    pr2 = leaf_potentials(tree, objects, SIDEWAYS, (0.4, 0.0, 0.8), metric, rng)
    bax = leaf_potentials(tree, objects, TOP_DOWN, (1.1, 0.0, 0.9), metric, rng)
    return tree, pr2, bax


@pytest.mark.parametrize("seed", range(5))
def test_distance_and_grasp_never_gives_a_zero_grasp_behaviour_to_that_robot(seed: int) -> None:
    metric = ActivationMetric.named("distance+grasp")
    tree, pr2, bax = _team_potentials(metric)
    zero_for_pr2 = {leaf for leaf, s in pr2.items() if s.grasp is not None and s.grasp.score == 0}
    assert zero_for_pr2 and all(bax[leaf].grasp.score > 0 for leaf in zero_for_pr2)
    pots = {
        "pr2": {k: v.potential for k, v in pr2.items()},
        "baxter": {k: v.potential for k, v in bax.items()},
    }
    cfg = SimConfig(("pr2", "baxter"), seed=seed, potentials=pots, network=NetworkModel())
    res = simulate(tree, cfg)
    assert check_invariants(tree, res) == [], res.summary()
    done_by_pr2 = {e.node for e in res.executions if e.robot == "pr2" and e.completed}
    assert not done_by_pr2 & zero_for_pr2, res.summary()


def test_distance_only_may_give_an_ungraspable_object_to_the_closer_robot() -> None:
    tree, pr2, bax = _team_potentials(ActivationMetric.named("distance"))
    _, pr2_g, _ = _team_potentials(ActivationMetric.named("distance+grasp"))
    zero_for_pr2 = {leaf for leaf, s in pr2_g.items() if s.grasp.score == 0}
    pots = {
        "pr2": {k: v.potential for k, v in pr2.items()},
        "baxter": {k: v.potential for k, v in bax.items()},
    }
    res = simulate(tree, SimConfig(("pr2", "baxter"), seed=0, potentials=pots))
    assert check_invariants(tree, res) == [], res.summary()
    done_by_pr2 = {e.node for e in res.executions if e.robot == "pr2" and e.completed}
    assert done_by_pr2 & zero_for_pr2, res.summary()


def test_a_shapes_shared_arrays_are_read_only_and_match_its_fields() -> None:
    """A shape's centre and half extents are made once and shared by every support
    and intersection test: nobody may change them in place."""
    shape = ShapePrimitive("box", (0.1, 0.2, 0.3), (0.4, 0.5, 0.8), yaw=0.7)
    assert shape.center.tolist() == [0.4, 0.5, 0.8]
    assert shape._half.tolist() == [0.05, 0.1, 0.15]
    assert shape._yaw_cos_sin == (math.cos(0.7), math.sin(0.7))
    for array in (shape.center, shape._half):
        with pytest.raises(ValueError, match="read-only"):
            array[0] += 1.0
    moved = dataclasses.replace(shape, position=(0.0, 0.0, 0.8))
    assert moved.center.tolist() == [0.0, 0.0, 0.8] and shape.center.tolist()[0] == 0.4
