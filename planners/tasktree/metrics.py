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
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from teamtree.broker import SpecificationError
from teamtree.broker.lazy import lazy_module
from teamtree.hardware.geometry import ArmModel, GraspOrientation, ShapePrimitive, up_axis
from teamtree.planners.tasktree.grasp_pose import bearing_factor, coverage_factor, reach_factor
from teamtree.planners.tasktree.tree import TaskTree

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE

_T = TypeVar("_T")

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


@dataclass(frozen=True)
class GraspCandidate:
    """A two-finger grasp: centre ``position``, unit ``approach`` (palm → object) and
    ``closing`` axes, opening ``width`` at the contacts, ``quality`` 0-100."""

    position: tuple[float, float, float]
    approach: tuple[float, float, float]
    closing: tuple[float, float, float]
    width: float
    quality: float


@dataclass(frozen=True)
class GraspResult:
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


def _unit(v: np.ndarray) -> np.ndarray:
    return v / float(np.linalg.norm(v))


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` of two 3-vectors, the same floats (the same products and
    differences) at a fraction of its cost: the sampler calls it for every candidate."""
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


@dataclass(frozen=True)
class GraspScorer:
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
        """Sample antipodal candidates that fit the gripper; quality 0-100, best first."""
        return _drain(self.candidate_steps(shape, arm, rng))

    def candidate_steps(
        self, shape: ShapePrimitive, arm: ArmModel, rng: np.random.Generator, every: int = 16
    ) -> Generator[None, None, list[GraspCandidate]]:
        """``candidates`` as a generator that yields after every `every` samples and
        returns the list: an event loop can run other work between the steps (one
        score is 30-45 ms of CPU here). The same samples in the same order."""
        orient = arm.orientation if self.constrain_sampler else GraspOrientation.ANY
        tol = math.radians(arm.tolerance_deg)
        cos_mu = math.cos(math.atan(self.friction))
        bottom = -shape.support(-up_axis())
        bearing = None  # sideways: approach from the arm's side (grasp_pose.bearing_factor)
        if self.pose_aware:
            d = shape.center - np.asarray(arm.base_position, dtype=float)
            bearing = math.atan2(float(d[1]), float(d[0]))
        out: list[GraspCandidate] = []
        for i in range(self.n_candidates):
            if i and i % every == 0:
                yield
            a, c = self._sample_axes(orient, tol, rng, bearing)
            e2 = _cross(a, c)
            extent_a = shape.support(a) + shape.support(-a)
            reach_in = min(arm.finger_depth, extent_a)
            depth = float(rng.uniform(0.2, 1.0)) * reach_in
            half_e2 = (shape.support(e2) + shape.support(-e2)) / 2
            off = float(rng.uniform(-0.5, 0.5))
            mid = shape.center + off * half_e2 * e2
            # seat the grasp `depth` inside the object's near face along the approach
            near = shape.support(-a) - float(mid @ -a)
            g = mid + (depth - near) * a
            hit = shape.intersect(g, c)
            if hit is None:
                continue
            s_in, s_out, n_in, n_out = hit
            width = s_out - s_in
            if width > arm.gripper_max_width or width <= 1e-4:
                continue
            cos1, cos2 = float(-n_in @ c), float(n_out @ c)
            if min(cos1, cos2) < cos_mu:
                continue  # not antipodal within the friction cone
            # lowest point of a finger pad: it spans `depth` back to the palm and
            # `tip_margin` past the contact along the approach, thickness along e2
            along = min(self.tip_margin * a[2], -depth * a[2])
            lowest = g[2] + along - arm.finger_thickness / 2 * abs(e2[2])
            if lowest < bottom:
                continue  # fingers would hit the table
            q_a = (min(cos1, cos2) - cos_mu) / (1.0 - cos_mu)
            q_c = 0.5 + 0.5 * (1.0 - 2.0 * abs(off))
            if self.pose_aware:
                q_w = min(1.0, (arm.gripper_max_width - width) / self.width_margin)
                q_d = coverage_factor(arm.finger_depth, extent_a, self.coverage_power)
                q_d *= reach_factor(g, a, depth, arm, self.reach_knee, self.reach_softness)
                q_d *= bearing_factor(g, a, arm)
            else:
                q_w = 1.0 - (width / arm.gripper_max_width) ** 2
                q_d = 0.3 + 0.7 * depth / arm.finger_depth
            quality = 100.0 * q_a * q_w * q_d * q_c
            out.append(
                GraspCandidate(
                    tuple(float(x) for x in g),  # type: ignore[arg-type]
                    tuple(float(x) for x in a),  # type: ignore[arg-type]
                    tuple(float(x) for x in c),  # type: ignore[arg-type]
                    float(width),
                    float(quality),
                )
            )
        out.sort(key=lambda k: -k.quality)
        return out

    @staticmethod
    def _sample_axes(
        orient: GraspOrientation,
        tol: float,
        rng: np.random.Generator,
        bearing: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        if orient is GraspOrientation.TOP_DOWN:
            tilt, az = float(rng.uniform(0, tol)), float(rng.uniform(0, 2 * math.pi))
            a = np.array(
                [math.sin(tilt) * math.cos(az), math.sin(tilt) * math.sin(az), -math.cos(tilt)]
            )
            psi = float(rng.uniform(0, math.pi))
        elif orient is GraspOrientation.SIDEWAYS:
            el = float(rng.uniform(-tol, tol))
            if bearing is None:
                az = float(rng.uniform(0, 2 * math.pi))
            else:  # an approach turned more than 90° from the bearing would score 0
                az = bearing + float(rng.uniform(-math.pi / 2, math.pi / 2))
            a = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), -math.sin(el)])
            psi = float(rng.uniform(-tol, tol))
        else:
            while True:  # uniform on the sphere, not approaching from below the table
                a = rng.normal(size=3)
                a = a / float(np.linalg.norm(a))
                if a[2] <= 0.3:
                    break
            psi = float(rng.uniform(0, math.pi))
        h = _cross(a, up_axis())
        if float(np.linalg.norm(h)) < 1e-6:
            h = np.array([1.0, 0.0, 0.0])
        h = _unit(h)
        k = _cross(a, h)
        c = _unit(math.cos(psi) * h + math.sin(psi) * k)
        return a, c

    def score(self, shape: ShapePrimitive, arm: ArmModel, rng: np.random.Generator) -> GraspResult:
        """Best candidate → reachability filter → orientation filter (§2.4.2)."""
        return _drain(self.score_steps(shape, arm, rng))

    def score_steps(
        self, shape: ShapePrimitive, arm: ArmModel, rng: np.random.Generator, every: int = 16
    ) -> Generator[None, None, GraspResult]:
        """``score`` in steps, as ``candidate_steps``; the same result."""
        cands = yield from self.candidate_steps(shape, arm, rng, every)
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


def _drain(steps: Generator[None, None, _T]) -> _T:
    """Run a stepwise computation to its end; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


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


@dataclass(frozen=True)
class ActivationMetric:
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


@dataclass(frozen=True)
class LeafScore:
    """Per-leaf figures ``leaf_potentials`` computes (for printing who did what, why)."""

    potential: float
    distance_score: float
    grasp: GraspResult | None = field(default=None)


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
