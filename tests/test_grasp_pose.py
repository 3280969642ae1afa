"""The pose-aware grasp score (seed 000 §2.4.2): where the object lies relative to the
arm changes which grasps exist and how good they are."""

from __future__ import annotations

import math
import statistics

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    ArmModel,
    GraspScorer,
    ShapePrimitive,
    bearing_factor,
    coverage_factor,
    reach_factor,
)

TABLE_Z = 0.75
SIDEWAYS = ArmModel((0.0, 0.0, 0.8), reach=0.9, gripper_max_width=0.09, orientation="sideways")
TOP_DOWN = ArmModel((0.0, 0.0, 1.0), reach=1.0, gripper_max_width=0.14, orientation="top_down")
UNIT = st.floats(-1.0, 1.0)


def median_score(shape: ShapePrimitive, arm: ArmModel, seeds: int = 3) -> float:
    scorer = GraspScorer()
    return statistics.median(
        scorer.score(shape, arm, np.random.default_rng(s)).score for s in range(seeds)
    )


@given(st.floats(0.3, 1.5), st.floats(0.3, 1.5), st.floats(-math.pi, math.pi), UNIT)
def test_reach_factor_falls_with_distance(r1: float, r2: float, az: float, dz: float) -> None:
    """Approaching outward from the shoulder (the wrist stays between the shoulder
    and the object once the object is farther than the hand is long)."""
    near, far = sorted((r1, r2))
    a = np.array([math.cos(az), math.sin(az), 0.0])
    at = [np.array([r * math.cos(az), r * math.sin(az), 0.8 + 0.1 * dz]) for r in (near, far)]
    f_near, f_far = (reach_factor(p, a, 0.03, SIDEWAYS) for p in at)
    assert 0.0 <= f_far <= f_near <= 1.0


@given(st.floats(-math.pi, math.pi), st.floats(-math.pi, math.pi), st.floats(0.2, 1.0))
def test_bearing_factor_is_cosine_for_a_horizontal_approach(b: float, turn: float, r: float):
    position = np.array([r * math.cos(b), r * math.sin(b), 0.8])
    approach = np.array([math.cos(b + turn), math.sin(b + turn), 0.0])
    f = bearing_factor(position, approach, SIDEWAYS)
    assert math.isclose(f, max(0.0, math.cos(turn)), abs_tol=1e-9)
    assert bearing_factor(position, np.array([0.0, 0.0, -1.0]), SIDEWAYS) == 1.0


@given(st.floats(0.005, 0.1), st.floats(0.005, 0.5), st.floats(1.0, 4.0))
def test_coverage_factor_is_a_capped_power(depth: float, extent: float, power: float) -> None:
    f = coverage_factor(depth, extent, power)
    assert 0.0 < f <= 1.0
    assert (f == 1.0) == (depth >= extent) or math.isclose(f, 1.0)


@settings(max_examples=4, deadline=None)
@given(st.floats(-math.pi, math.pi), st.sampled_from(["cylinder", "box"]))
def test_the_same_object_scores_lower_far_from_the_arm(bearing: float, kind: str) -> None:
    dims = (0.03, 0.10) if kind == "cylinder" else (0.05, 0.05, 0.10)

    def at(r: float) -> ShapePrimitive:
        xy = (r * math.cos(bearing), r * math.sin(bearing))
        return ShapePrimitive(kind, dims, (*xy, TABLE_Z + 0.05), yaw=bearing)

    near, far = median_score(at(0.45), SIDEWAYS), median_score(at(0.95), SIDEWAYS)
    assert near > 2 * far, (near, far)


def test_a_box_square_to_a_sideways_arm_beats_one_turned_45_degrees() -> None:
    square = ShapePrimitive("box", (0.06, 0.06, 0.08), (0.0, 0.5, TABLE_Z + 0.04), yaw=0.0)
    turned = ShapePrimitive("box", (0.06, 0.06, 0.08), (0.0, 0.5, TABLE_Z + 0.04), yaw=math.pi / 4)
    assert median_score(square, SIDEWAYS) > 1.2 * median_score(turned, SIDEWAYS)


def test_a_tall_pot_is_worse_top_down_than_sideways_and_a_flat_box_the_reverse() -> None:
    """Coverage: top-down fingers hold the rim of a 16 cm pot, sideways most of its 8 cm
    width; a 4 cm-high sandwich is held whole top-down and not at all sideways."""
    pot = ShapePrimitive("cylinder", (0.04, 0.16), (0.0, 0.5, TABLE_Z + 0.08))
    flat = ShapePrimitive("box", (0.12, 0.12, 0.04), (0.0, 0.5, TABLE_Z + 0.02))
    assert median_score(pot, SIDEWAYS) > 2 * median_score(pot, TOP_DOWN) > 0
    assert median_score(flat, TOP_DOWN) > 0 == median_score(flat, SIDEWAYS)


def test_pose_unaware_scorer_is_the_same_anywhere() -> None:
    """The baseline (``pose_aware=False``) ignores where the object lies."""
    scorer = GraspScorer(pose_aware=False)
    a, b = (ShapePrimitive("cylinder", (0.03, 0.10), (x, 0.4, TABLE_Z + 0.05)) for x in (0.0, 0.3))
    sa = scorer.score(a, SIDEWAYS, np.random.default_rng(1)).score
    sb = scorer.score(b, SIDEWAYS, np.random.default_rng(1)).score
    assert math.isclose(sa, sb, rel_tol=1e-9)
