"""The vectorised grasp sampler against the one it replaced (issue 19).

``GraspScorer.candidates`` used to sample its 128 candidates one at a time: 6-11 ms of
a robot's event loop per score. It now draws the same random numbers in the same order
and runs the geometry on all samples at once. The reference below is that loop as it
stood (with the shape tests and pose factors of the time, one vector at a time): for
any shape, arm and seed both give the same candidates, to rounding, and leave the
generator in the same state, so recorded scores do not move.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.hardware.geometry import ArmModel, GraspOrientation, ShapePrimitive, up_axis
from teamtree.planners.tasktree.metrics import GraspCandidate, GraspScorer


def _rotation(shape: ShapePrimitive) -> np.ndarray:
    c, s = math.cos(shape.yaw), math.sin(shape.yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _half(shape: ShapePrimitive) -> np.ndarray:
    return np.asarray(shape.dimensions) / 2


def _unit(v: np.ndarray) -> np.ndarray:
    return v / float(np.linalg.norm(v))


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def _support(self: ShapePrimitive, d: np.ndarray) -> float:
    """max over the shape's points x of d·x (d need not be unit)."""
    base = float(d @ self.center)
    if self.kind == "sphere":
        return base + self.dimensions[0] * float(np.linalg.norm(d))
    dl = _rotation(self).T @ d
    if self.kind == "box":
        return base + float(np.abs(dl) @ _half(self))
    r, h = self.dimensions
    return base + r * float(math.hypot(dl[0], dl[1])) + h / 2 * abs(float(dl[2]))


def _intersect(
    self: ShapePrimitive, p: np.ndarray, u: np.ndarray
) -> tuple[float, float, np.ndarray, np.ndarray] | None:
    """Where the line p + s·u (u unit) enters and leaves: (s_in, s_out, n_in, n_out).

    Normals are outward, in the world frame. None if the line misses.
    """
    rot = _rotation(self)
    q = rot.T @ (p - self.center)
    v = rot.T @ u
    if self.kind == "sphere":
        r = self.dimensions[0]
        b = float(q @ v)
        disc = b * b - (float(q @ q) - r * r)
        if disc <= 0:
            return None
        s0, s1 = -b - math.sqrt(disc), -b + math.sqrt(disc)
        n0, n1 = (q + s0 * v) / r, (q + s1 * v) / r
        return s0, s1, rot @ n0, rot @ n1
    if self.kind == "box":
        half = _half(self)
        lo, hi = -math.inf, math.inf
        n_lo = n_hi = np.zeros(3)
        for i in range(3):
            if abs(v[i]) < 1e-12:
                if abs(q[i]) > half[i]:
                    return None
                continue
            a, b = (-half[i] - q[i]) / v[i], (half[i] - q[i]) / v[i]
            e = np.zeros(3)
            e[i] = 1.0
            na, nb = -e, e  # face normals at -half and +half
            if a > b:
                a, b, na, nb = b, a, nb, na
            if a > lo:
                lo, n_lo = a, na
            if b < hi:
                hi, n_hi = b, nb
        if lo >= hi:
            return None
        return lo, hi, rot @ n_lo, rot @ n_hi
    r, h = self.dimensions
    lo, hi = -math.inf, math.inf
    n_lo = n_hi = np.zeros(3)
    # side wall
    a2 = v[0] ** 2 + v[1] ** 2
    if a2 < 1e-12:
        if q[0] ** 2 + q[1] ** 2 > r * r:
            return None
    else:
        b = q[0] * v[0] + q[1] * v[1]
        c = q[0] ** 2 + q[1] ** 2 - r * r
        disc = b * b - a2 * c
        if disc <= 0:
            return None
        s0, s1 = (-b - math.sqrt(disc)) / a2, (-b + math.sqrt(disc)) / a2
        lo, hi = s0, s1
        p0, p1 = q + s0 * v, q + s1 * v
        n_lo = np.array([p0[0], p0[1], 0.0]) / r
        n_hi = np.array([p1[0], p1[1], 0.0]) / r
    # caps
    if abs(v[2]) < 1e-12:
        if abs(q[2]) > h / 2:
            return None
    else:
        a, b = (-h / 2 - q[2]) / v[2], (h / 2 - q[2]) / v[2]
        na, nb = -up_axis(), up_axis()
        if a > b:
            a, b, na, nb = b, a, nb, na
        if a > lo:
            lo, n_lo = a, na
        if b < hi:
            hi, n_hi = b, nb
    if lo >= hi:
        return None
    return lo, hi, rot @ n_lo, rot @ n_hi


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


def _reach_factor(
    position: np.ndarray,
    approach: np.ndarray,
    depth: float,
    arm: ArmModel,
    knee: float = 0.8,
    softness: float = 0.07,
) -> float:
    """Logistic in the wrist's distance from the shoulder over ``arm.reach``: 0.5 at
    ``knee``, steepness ``softness`` (both fractions of the reach)."""
    wrist = position - approach * (depth + arm.hand_length)
    r = float(np.linalg.norm(wrist - np.asarray(arm.base_position, dtype=float))) / arm.reach
    return 1.0 / (1.0 + math.exp((r - knee) / softness))


def _bearing_factor(position: np.ndarray, approach: np.ndarray, arm: ArmModel) -> float:
    """``1 − h·(1 − max(0, cos θ))``: h the approach's horizontal length (1 sideways,
    ~0 top-down), θ the angle between its horizontal part and the shoulder's bearing."""
    h = math.hypot(float(approach[0]), float(approach[1]))
    if h < 1e-9:
        return 1.0
    bx = float(position[0]) - arm.base_position[0]
    by = float(position[1]) - arm.base_position[1]
    b = math.hypot(bx, by)
    if b < 1e-9:
        return 1.0
    cos = (float(approach[0]) * bx + float(approach[1]) * by) / (h * b)
    return 1.0 - h * (1.0 - max(0.0, cos))


def _coverage_factor(finger_depth: float, extent: float, power: float = 3.0) -> float:
    """``(finger_depth / extent)^power``, capped at 1: how much of the object's extent
    along the approach the fingers can hold between them."""
    return min(1.0, finger_depth / extent) ** power


def reference_candidates(
    self: GraspScorer, shape: ShapePrimitive, arm: ArmModel, rng: np.random.Generator
) -> list[GraspCandidate]:
    """GraspScorer.candidates as it stood before it was vectorised."""
    orient = arm.orientation if self.constrain_sampler else GraspOrientation.ANY
    tol = math.radians(arm.tolerance_deg)
    cos_mu = math.cos(math.atan(self.friction))
    bottom = -_support(shape, -up_axis())
    bearing = None  # sideways: approach from the arm's side (grasp_pose.bearing_factor)
    if self.pose_aware:
        d = shape.center - np.asarray(arm.base_position, dtype=float)
        bearing = math.atan2(float(d[1]), float(d[0]))
    out: list[GraspCandidate] = []
    for _ in range(self.n_candidates):
        a, c = _sample_axes(orient, tol, rng, bearing)
        e2 = _cross(a, c)
        extent_a = _support(shape, a) + _support(shape, -a)
        reach_in = min(arm.finger_depth, extent_a)
        depth = float(rng.uniform(0.2, 1.0)) * reach_in
        half_e2 = (_support(shape, e2) + _support(shape, -e2)) / 2
        off = float(rng.uniform(-0.5, 0.5))
        mid = shape.center + off * half_e2 * e2
        # seat the grasp `depth` inside the object's near face along the approach
        near = _support(shape, -a) - float(mid @ -a)
        g = mid + (depth - near) * a
        hit = _intersect(shape, g, c)
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
            q_d = _coverage_factor(arm.finger_depth, extent_a, self.coverage_power)
            q_d *= _reach_factor(g, a, depth, arm, self.reach_knee, self.reach_softness)
            q_d *= _bearing_factor(g, a, arm)
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


shapes = st.one_of(
    st.tuples(
        st.just("box"),
        st.tuples(*[st.floats(0.02, 0.25)] * 3),
    ),
    st.tuples(st.just("cylinder"), st.tuples(st.floats(0.01, 0.12), st.floats(0.03, 0.3))),
    st.tuples(st.just("sphere"), st.tuples(st.floats(0.01, 0.1))),
)
yaws = st.one_of(st.just(0.0), st.just(math.pi / 2), st.floats(-math.pi, math.pi))


@settings(max_examples=300, deadline=None)
@given(
    shape=shapes,
    xy=st.tuples(st.floats(-1, 1), st.floats(-1, 1)),
    height=st.floats(0.6, 0.9),
    yaw=yaws,
    base=st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(0.7, 1.2)),
    reach=st.floats(0.5, 1.5),
    width=st.floats(0.05, 0.15),
    orientation=st.sampled_from(list(GraspOrientation)),
    tolerance=st.floats(5, 40),
    pose_aware=st.booleans(),
    constrain=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_vectorised_sampler_gives_the_loops_candidates(
    shape: tuple[str, tuple[float, ...]],
    xy: tuple[float, float],
    height: float,
    yaw: float,
    base: tuple[float, float, float],
    reach: float,
    width: float,
    orientation: GraspOrientation,
    tolerance: float,
    pose_aware: bool,
    constrain: bool,
    seed: int,
) -> None:
    kind, dims = shape
    obj = ShapePrimitive(kind, dims, (*xy, dims[-1] / 2 + height), yaw=yaw)
    arm = ArmModel(base, reach, width, orientation=orientation, tolerance_deg=tolerance)
    scorer = GraspScorer(pose_aware=pose_aware, constrain_sampler=constrain)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    got = scorer.candidates(obj, arm, ours)
    want = reference_candidates(scorer, obj, arm, theirs)
    assert ours.random() == theirs.random(), f"seed {seed}: the generators part ways"
    assert len(got) == len(want), f"seed {seed}"
    for g, w in zip(got, want, strict=True):
        assert g.quality == pytest.approx(w.quality, abs=1e-9), f"seed {seed}"
        assert g.width == pytest.approx(w.width, abs=1e-12)
        for mine, ref in (
            (g.position, w.position),
            (g.approach, w.approach),
            (g.closing, w.closing),
        ):
            assert mine == pytest.approx(ref, abs=1e-12), f"seed {seed}"


@settings(max_examples=200, deadline=None)
@given(
    shape=shapes,
    yaw=yaws,
    p=st.tuples(*[st.floats(-0.3, 0.3)] * 3),
    u=st.tuples(*[st.floats(-1, 1)] * 3).filter(lambda v: math.hypot(*v) > 0.1),
)
def test_a_shapes_lines_and_supports_are_the_one_vector_ones(
    shape: tuple[str, tuple[float, ...]],
    yaw: float,
    p: tuple[float, float, float],
    u: tuple[float, float, float],
) -> None:
    kind, dims = shape
    obj = ShapePrimitive(kind, dims, (0.1, -0.2, 0.8), yaw=yaw)
    point = np.asarray(obj.position) + np.asarray(p)
    direction = _unit(np.asarray(u))
    assert obj.support(direction) == pytest.approx(_support(obj, direction), abs=1e-12)
    got, want = obj.intersect(point, direction), _intersect(obj, point, direction)
    chords = [hit[1] - hit[0] for hit in (got, want) if hit is not None]
    if len(chords) < 2 or min(chords) < 1e-6:
        # a line that grazes the surface (tangent to a sphere or a wall, along a face):
        # hit or miss turns on the last bit, in either version; the sampler drops such
        # grasps anyway (a width under 0.1 mm)
        assert all(chord < 1e-6 for chord in chords), (got, want)
        return
    assert got is not None and want is not None
    assert got[0] == pytest.approx(want[0], abs=1e-9)
    assert got[1] == pytest.approx(want[1], abs=1e-9)
    assert got[2].tolist() == pytest.approx(want[2].tolist(), abs=1e-9)
    assert got[3].tolist() == pytest.approx(want[3].tolist(), abs=1e-9)


def test_axis_aligned_lines_through_a_box_and_a_cylinder() -> None:
    """Lines parallel to a face (the 1e-12 branch): in when inside the slab, else a miss."""
    box = ShapePrimitive("box", (0.2, 0.2, 0.2), (0.0, 0.0, 1.0))
    hit = box.intersect(np.array([-1.0, 0.05, 1.0]), np.array([1.0, 0.0, 0.0]))
    assert hit is not None and hit[:2] == pytest.approx((0.9, 1.1))
    assert hit[2].tolist() == [-1.0, 0.0, 0.0] and hit[3].tolist() == [1.0, 0.0, 0.0]
    assert box.intersect(np.array([-1.0, 0.15, 1.0]), np.array([1.0, 0.0, 0.0])) is None
    can = ShapePrimitive("cylinder", (0.1, 0.2), (0.0, 0.0, 1.0))
    down = can.intersect(np.array([0.0, 0.05, 2.0]), np.array([0.0, 0.0, -1.0]))
    assert down is not None and down[:2] == pytest.approx((0.9, 1.1))
    assert down[2].tolist() == [0.0, 0.0, 1.0] and down[3].tolist() == [0.0, 0.0, -1.0]
    assert can.intersect(np.array([0.0, 0.15, 2.0]), np.array([0.0, 0.0, -1.0])) is None
    assert up_axis().tolist() == [0.0, 0.0, 1.0]


def test_a_robots_grasp_score_depends_on_the_pose_scored_not_on_what_came_before() -> None:
    """A robot's grasp score of an object at a pose, from an arm base, is the same
    whichever objects it scored before (it used to draw from one stream, so reading
    more observations gave an object another score), and its seed changes it."""
    from teamtree.agents.tasktree.params import RobotParams
    from teamtree.agents.tasktree.robot import RobotAgent
    from teamtree.broker import Endpoint
    from teamtree.planners.tasktree import parse_tree

    def robot(seed: int) -> RobotAgent:
        r = RobotAgent(
            "pr2",
            team="t1",
            endpoint=Endpoint("127.0.0.1", 1),
            tree=parse_tree("AND(PLACE(object=cup), PLACE(object=pot))"),
            params=RobotParams(profile="pr2", driver="pr2-driver", seed=seed),
        )
        r.world.arm = ArmModel((0.0, 0.0, 0.9), 1.0, 0.12, orientation="sideways")
        return r

    cup = ShapePrimitive("cylinder", (0.04, 0.1), (0.4, 0.1, 0.85))
    pot = ShapePrimitive("cylinder", (0.045, 0.2), (0.3, -0.3, 0.9))
    first, second = robot(7), robot(7)
    a = (first.grasps.grasp("cup", cup), first.grasps.grasp("pot", pot))
    b = (second.grasps.grasp("pot", pot), second.grasps.grasp("cup", cup))
    assert a == b[::-1] and a[0] > 0 and a[1] > 0
    moved = ShapePrimitive("cylinder", (0.04, 0.1), (0.41, 0.1, 0.85))
    assert first.grasps.grasp("cup", moved) != a[0]  # another pose: another sample
    assert robot(8).grasps.grasp("cup", cup) != a[0]  # another seed: another sample
