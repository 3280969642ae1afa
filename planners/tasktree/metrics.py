"""Activation metrics for PLACE behaviours (seed 000 §2.4): distance, grasp score, eq. 1.

``activation_potential = w_d · distance_score + w_g · grasp_score`` (eq. 1) with
``distance_score = 1 / ‖x_obj − x_arm‖`` (eq. 2), defaults w_d = 1, w_g = 0.001.

The paper's grasp score comes from GPD (Gualtieri et al. 2016) on a Kinect point
cloud. GPD is not available here, so ``GraspScorer`` stands in for it: it samples
antipodal two-finger grasps analytically on the object's shape primitive (box,
cylinder, sphere) at the object's pose and rates each 0-100 from friction-cone
alignment, width clearance, centring and, since the paper's scores change with where
the object lies (Tables 1 and 2), the pose relative to the arm (``grasp_pose``: wrist
reach, approach bearing, how much of the object fits between the fingers). Then, as
§2.4.2 describes: keep the best candidate, apply the reachability filter, then the
orientation filter; a failed filter gives 0.

Readings chosen where the paper is ambiguous:

- §2.4.1 says the PR2 "only gets" sideways grasps (constraints placed on the gripper)
  while §2.4.2 applies orientation as a filter after keeping GPD's best grasp. By
  default (``constrain_sampler=True``) candidates are sampled inside the arm's allowed
  orientation, as GPD's approach-direction constraint does, and the orientation filter
  then checks the kept one; ``constrain_sampler=False`` is the literal §2.4.2 order
  (best of all candidates, then filter), which zeroes an arm whenever the overall best
  grasp happens to have the wrong orientation.
- "sideways" = approach and finger-closing axis both within the tolerance of the
  horizontal (gripper nearly parallel to the floor); "top_down" = approach within the
  tolerance of straight down.
- With the grasp term on, a grasp score of 0 gates the potential to 0
  (``gate_on_grasp``): the PLACE behaviour takes its grasp from the pipeline (§3.1),
  so without one the robot cannot run it. Without the gate, w_g = 0.001 makes the
  grasp term (≤ 0.1) too small to stop a closer robot that cannot grasp, and the
  paper's Scenario 1 and 3 allocations under distance-and-grasp could not happen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from msgspec import Struct

from teamtree.broker import SpecificationError
from teamtree.broker.lazy import lazy_module
from teamtree.hardware.geometry import (
    ArmModel,
    GraspOrientation,
    ShapePrimitive,
    row_dots,
    up_axis,
)
from teamtree.planners.tasktree.grasp_pose import bearing_factors, coverage_factor, reach_factors
from teamtree.planners.tasktree.tree import TaskTree

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE


__all__ = [
    "ActivationMetric",
    "ArmModel",
    "GraspCandidate",
    "GraspOrientation",
    "GraspResult",
    "GraspScorer",
    "LeafScore",
    "ShapePrimitive",
    "distance_score",
    "distance_scores",
    "leaf_potentials",
    "orientation_ok",
]


class GraspCandidate(Struct, frozen=True):
    """A two-finger grasp: centre ``position``, unit ``approach`` (palm → object) and
    ``closing`` axes, opening ``width`` at the contacts, ``quality`` 0-100."""

    position: tuple[float, float, float]
    approach: tuple[float, float, float]
    closing: tuple[float, float, float]
    width: float
    quality: float


class GraspResult(Struct, frozen=True):
    """The pipeline's answer for one object and arm (§2.4.2).

    ``score``: final grasp score 0-100 (0 if no candidate or a filter failed);
    ``candidate``: the best candidate before filtering; ``reason``: ``"ok"``,
    ``"no candidate"``, ``"unreachable"`` or ``"orientation"``; ``n_candidates``.
    """

    score: float
    candidate: GraspCandidate | None
    reason: str
    n_candidates: int


def orientation_ok(
    approach: Sequence[float],
    closing: Sequence[float],
    orientation: GraspOrientation | str,
    tolerance_deg: float,
) -> bool:
    """The orientation filter (§2.4.2): does the grasp fit the allowed orientation?"""
    orientation = GraspOrientation(orientation)
    if orientation is GraspOrientation.ANY:
        return True
    s = math.sin(math.radians(tolerance_deg))
    a = np.asarray(approach, dtype=float)
    c = np.asarray(closing, dtype=float)
    if orientation is GraspOrientation.TOP_DOWN:
        return bool(-a[2] >= math.cos(math.radians(tolerance_deg)))
    return bool(abs(a[2]) <= s and abs(c[2]) <= s)


def _crosses(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cross product of each row of `a` (n x 3) with `b` (a 3-vector or n x 3 rows):
    the products and differences ``np.cross`` makes, at a fraction of its cost."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = (b[0], b[1], b[2]) if b.ndim == 1 else (b[:, 0], b[:, 1], b[:, 2])
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


class GraspScorer(Struct, frozen=True):
    """Antipodal grasp sampler + best-candidate + reachability and orientation filters.

    A stand-in for GPD (not available here; see the module docstring). ``n_candidates``
    grasps are sampled per call with the caller's numpy Generator, so a seed fixes the
    result. ``friction`` is the contact friction coefficient (friction-cone half angle
    atan(μ)). ``constrain_sampler``: sample only inside the arm's allowed orientation.

    ``pose_aware`` (default): each candidate's quality also depends on the object's
    pose relative to the arm (``grasp_pose``: wrist reach, approach bearing, lever from
    the centroid), and the width term only asks for ``width_margin`` of clearance
    (full marks from there on, falling linearly to 0 at the gripper's widest), as
    GPD's hand model does. ``pose_aware=False`` is the earlier shape-only scorer
    (width term ``1 − (width / max)²``, no pose factors), kept as a baseline.
    """

    n_candidates: int = 128
    friction: float = 0.5
    constrain_sampler: bool = True
    tip_margin: float = 0.002
    pose_aware: bool = True
    width_margin: float = 0.01
    reach_knee: float = 0.8
    reach_softness: float = 0.07
    coverage_power: float = 3.0

    def candidates(
        self, shape: ShapePrimitive, arm: ArmModel, rng: np.random.Generator
    ) -> list[GraspCandidate]:
        """Sample antipodal candidates that fit the gripper; quality 0-100, best first.

        Each sample draws its approach and closing axes, then a depth and an offset
        (``_draws``), all before any test may drop it; the geometry then runs on every
        sample at once as numpy arrays. That is the old one-sample-at-a-time loop's
        arithmetic on its very draws, in its order (tests/test_grasp_sampler.py checks
        both against each other: the same candidates to ~1e-11), at a fraction of its
        CPU: scored one sample at a time, a score held a robot's event loop for
        milliseconds.
        """
        orient = arm.orientation if self.constrain_sampler else GraspOrientation.ANY
        tol = math.radians(arm.tolerance_deg)
        cos_mu = math.cos(math.atan(self.friction))
        bottom = -shape.support(-up_axis())
        bearing = None  # sideways: approach from the arm's side (grasp_pose.bearing_factor)
        if self.pose_aware:
            d = shape.center - np.asarray(arm.base_position, dtype=float)
            bearing = math.atan2(float(d[1]), float(d[0]))
        a, psi, u_depth, u_off = self._draws(orient, tol, rng, bearing)
        h = _crosses(a, up_axis())
        short = np.sqrt(row_dots(h, h)) < 1e-6
        h[short] = (1.0, 0.0, 0.0)
        h = h / np.sqrt(row_dots(h, h))[:, None]
        k = _crosses(a, h)
        c = np.cos(psi)[:, None] * h + np.sin(psi)[:, None] * k
        c = c / np.sqrt(row_dots(c, c))[:, None]
        e2 = _crosses(a, c)
        back = shape.supports(-a)
        extent_a = shape.supports(a) + back
        depth = (0.2 + (1.0 - 0.2) * u_depth) * np.minimum(arm.finger_depth, extent_a)
        half_e2 = (shape.supports(e2) + shape.supports(-e2)) / 2
        off = -0.5 + (0.5 - -0.5) * u_off
        mid = shape.center + (off * half_e2)[:, None] * e2
        # seat the grasp `depth` inside the object's near face along the approach
        near = back - row_dots(mid, -a)
        g = mid + (depth - near)[:, None] * a
        hit, s_in, s_out, n_in, n_out = shape.intersects(g, c)
        width = s_out - s_in
        worst = np.minimum(-row_dots(n_in, c), row_dots(n_out, c))
        # lowest point of a finger pad: it spans `depth` back to the palm and
        # `tip_margin` past the contact along the approach, thickness along e2
        along = np.minimum(self.tip_margin * a[:, 2], -depth * a[:, 2])
        lowest = g[:, 2] + along - arm.finger_thickness / 2 * np.abs(e2[:, 2])
        keep = hit & (width <= arm.gripper_max_width) & (width > 1e-4)
        keep &= worst >= cos_mu  # antipodal within the friction cone
        keep &= lowest >= bottom  # else the fingers would hit the table
        q_a = (worst - cos_mu) / (1.0 - cos_mu)
        q_c = 0.5 + 0.5 * (1.0 - 2.0 * np.abs(off))
        if self.pose_aware:
            q_w = np.minimum(1.0, (arm.gripper_max_width - width) / self.width_margin)
            q_d = coverage_factor(arm.finger_depth, extent_a, self.coverage_power)
            q_d = q_d * reach_factors(g, a, depth, arm, self.reach_knee, self.reach_softness)
            q_d = q_d * bearing_factors(g, a, arm)
        else:
            q_w = 1.0 - (width / arm.gripper_max_width) ** 2
            q_d = 0.3 + 0.7 * depth / arm.finger_depth
        quality = 100.0 * q_a * q_w * q_d * q_c
        rows = np.flatnonzero(keep)
        out = [
            GraspCandidate(tuple(gi), tuple(ai), tuple(ci), wi, qi)  # type: ignore[arg-type]
            for gi, ai, ci, wi, qi in zip(
                g[rows].tolist(),
                a[rows].tolist(),
                c[rows].tolist(),
                width[rows].tolist(),
                quality[rows].tolist(),
                strict=True,
            )
        ]
        out.sort(key=lambda k: -k.quality)
        return out

    def _draws(
        self,
        orient: GraspOrientation,
        tol: float,
        rng: np.random.Generator,
        bearing: float | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every sample's unit approach, closing angle psi, and the uniforms of its
        depth and offset, drawn from `rng` in the loop's order (sample by sample).

        Top-down and sideways, a sample is five uniforms, and ``uniform(lo, hi)`` is
        ``lo + (hi - lo) * random()``: one ``rng.random((n, 5))`` is those draws. An
        unconstrained approach is uniform on the sphere by rejection (a varying number
        of normal draws), so those samples are drawn one by one.
        """
        n = self.n_candidates
        if orient is GraspOrientation.ANY:
            rows = []
            for _ in range(n):
                while True:  # uniform on the sphere, not approaching from below the table
                    a = rng.normal(size=3)
                    a = a / float(np.linalg.norm(a))
                    if a[2] <= 0.3:
                        break
                psi = float(rng.uniform(0, math.pi))
                rows.append((*a.tolist(), psi, float(rng.random()), float(rng.random())))
            drawn = np.array(rows).reshape(n, 6)
            return drawn[:, :3], drawn[:, 3], drawn[:, 4], drawn[:, 5]
        u = rng.random((n, 5))

        def uniform(column: int, low: float, high: float) -> np.ndarray:
            return low + (high - low) * u[:, column]

        if orient is GraspOrientation.TOP_DOWN:
            tilt, az = uniform(0, 0, tol), uniform(1, 0, 2 * math.pi)
            a = np.stack([np.sin(tilt) * np.cos(az), np.sin(tilt) * np.sin(az), -np.cos(tilt)], 1)
            psi = uniform(2, 0, math.pi)
        else:
            el = uniform(0, -tol, tol)
            if bearing is None:
                az = uniform(1, 0, 2 * math.pi)
            else:  # an approach turned more than 90 degrees from the bearing would score 0
                az = bearing + uniform(1, -math.pi / 2, math.pi / 2)
            a = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), -np.sin(el)], 1)
            psi = uniform(2, -tol, tol)
        return a, psi, u[:, 3], u[:, 4]

    def score(
        self,
        shape: ShapePrimitive,
        arm: ArmModel,
        rng: np.random.Generator,
        name: str | None = None,
    ) -> GraspResult:
        """Best candidate → reachability filter → orientation filter (§2.4.2); `name`
        is not used (the primitive is the model), it is there for ``GraspScoring``."""
        cands = self.candidates(shape, arm, rng)
        if not cands:
            return GraspResult(0.0, None, "no candidate", 0)
        best = cands[0]
        reach = arm.reach + (arm.base_travel if arm.mobile_base else 0.0)
        dist = float(np.linalg.norm(np.asarray(best.position) - np.asarray(arm.base_position)))
        if dist > reach:
            return GraspResult(0.0, best, "unreachable", len(cands))
        if not orientation_ok(best.approach, best.closing, arm.orientation, arm.tolerance_deg):
            return GraspResult(0.0, best, "orientation", len(cands))
        return GraspResult(best.quality, best, "ok", len(cands))

    def unbuilt(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> None:
        """Nothing to build: every score samples afresh (``GraspScoring``)."""
        return None

    def build(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> None:
        """Nothing to build (``GraspScoring``)."""


def distance_score(
    x_obj: Sequence[float], x_arm: Sequence[float], min_distance: float = 1e-3
) -> float:
    """Eq. 2: 1 / ‖x_obj − x_arm‖ (distance floored at ``min_distance`` metres)."""
    d = float(np.linalg.norm(np.asarray(x_obj, dtype=float) - np.asarray(x_arm, dtype=float)))
    return 1.0 / max(d, min_distance)


def distance_scores(
    x_objs: Sequence[Sequence[float]] | np.ndarray,
    x_arm: Sequence[float],
    min_distance: float = 1e-3,
) -> list[float]:
    """Eq. 2 for many objects at once (one row of `x_objs` each), for a robot that
    scores every leaf on every observation. The same floats as ``distance_score`` row
    by row: the squared norm comes from the same dot product ``np.linalg.norm`` takes."""
    d = np.asarray(x_objs, dtype=float).reshape(-1, 3) - np.asarray(x_arm, dtype=float)
    vecdot = getattr(np, "vecdot", None)
    if vecdot is not None:
        squared = vecdot(d, d)
    else:  # numpy < 2: one dot per row, as np.linalg.norm does
        squared = np.array([row.dot(row) for row in d], dtype=float)
    return (1.0 / np.maximum(np.sqrt(squared), min_distance)).tolist()


class ActivationMetric(Struct, frozen=True):
    """Eq. 1: w_d · distance_score + w_g · grasp_score (grasp on the 0-100 scale).

    ``use_grasp=False`` is the paper's distance-only metric. ``gate_on_grasp``: with
    the grasp term on, a grasp score of 0 makes the potential 0 (module docstring).
    """

    w_d: float = 1.0
    w_g: float = 0.001
    use_grasp: bool = True
    gate_on_grasp: bool = True

    @classmethod
    def named(cls, name: str, **kwargs: float | bool) -> ActivationMetric:
        """``"distance"`` or ``"distance+grasp"`` (the paper's two trials, §3.1)."""
        if name == "distance":
            return cls(use_grasp=False, **kwargs)  # type: ignore[arg-type]
        if name == "distance+grasp":
            return cls(use_grasp=True, **kwargs)  # type: ignore[arg-type]
        raise SpecificationError(f"metric {name!r} is not 'distance' or 'distance+grasp'")

    def potential(
        self, x_obj: Sequence[float], x_arm: Sequence[float], grasp_score: float = 0.0
    ) -> float:
        """The activation potential of one PLACE behaviour."""
        return self.from_distance_score(distance_score(x_obj, x_arm), grasp_score)

    def from_distance_score(self, score: float, grasp_score: float = 0.0) -> float:
        """``potential`` from an eq. 2 score already computed (``distance_scores``)."""
        d = self.w_d * score
        if not self.use_grasp:
            return d
        if self.gate_on_grasp and grasp_score <= 0.0:
            return 0.0
        return d + self.w_g * grasp_score


class LeafScore(Struct, frozen=True):
    """Per-leaf figures ``leaf_potentials`` computes (for printing who did what, why)."""

    potential: float
    distance_score: float
    grasp: GraspResult | None = None


def leaf_potentials(
    tree: TaskTree,
    objects: Mapping[str, ShapePrimitive],
    arm: ArmModel,
    arm_position: Sequence[float],
    metric: ActivationMetric,
    rng: np.random.Generator,
    scorer: GraspScorer | None = None,
) -> dict[str, LeafScore]:
    """Eq. 1 for every leaf whose ``object`` parameter names an object in ``objects``.

    ``arm_position``: the end effector now (x_arm of eq. 2). Leaves without a known
    object get potential 0. Recompute every tick from the current world (§2.4.1).
    """
    scorer = scorer or GraspScorer()
    out: dict[str, LeafScore] = {}
    for leaf in tree.leaves:
        obj = tree[leaf].param_dict.get("object")
        shape = objects.get(obj) if isinstance(obj, str) else None
        if shape is None:
            out[leaf] = LeafScore(0.0, 0.0, None)
            continue
        ds = distance_score(shape.position, arm_position)
        grasp = scorer.score(shape, arm, rng) if metric.use_grasp else None
        pot = metric.potential(shape.position, arm_position, grasp.score if grasp else 0.0)
        out[leaf] = LeafScore(pot, ds, grasp)
    return out
