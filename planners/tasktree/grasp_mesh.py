"""Grasp scores from antipodal grasps sampled on object meshes (seed 000 §2.4.2).

Nicolescu et al. rate each object with GPD on the robot's point cloud, keep the best
grasp, then zero it if it is out of reach or outside the gripper's allowed orientation.
``MeshGraspScorer`` follows that pipeline on geometry instead of a learned rating:

1. **Object models** (``grasp_models.object_model``): each object is a union of solid parts (boxes,
   cylinders, spheres, tori) meshed with trimesh, in the object's frame (origin at the
   centre of the object's bounding primitive, z up, base at ``-height / 2``) and sized
   from that primitive: a cup with a handle, a tea pot with body, lid, knob, handle and
   spout, a sugar box, a sandwich, an orange, an apple, a burger of stacked buns and a
   wider patty. An object with no model of its own is meshed from its primitive.
2. **Candidates, once per model and hand** (``grasp_candidates``, cached): points are
   sampled on the surface (a point cloud of the whole object: GPD's view is partial,
   ours is not); from each, closing directions within the friction cone of the inward
   normal are cast through the mesh to where they leave the solid; a pair whose far
   normal also lies within the cone and whose width fits the gripper is antipodal. For
   each pair, ``n_approaches`` approach directions around the closing axis are tried;
   the hand (two fingers ``finger_depth`` long, opened to the gripper's width, and a
   palm) is pushed in as deep as it goes without any cloud point inside a finger or the
   palm. What survives is a candidate, with a quality in [0, 1] (friction margin times
   width clearance), the lowest point of its fingers and its ``share``: the fraction
   of the object's cloud within the fingers' depth (GPD rates a grasp from the points
   inside the hand; a top-down hand over a 16 cm pot holds its top few centimetres).
   Deterministic for ``seed``.
3. **Per robot and pose** (``score``, vectorised numpy over the candidates): the
   candidates are turned by the object's yaw and moved to its position; kept are those
   whose orientation fits the arm (the orientation filter of ``metrics``, on every
   candidate, as GPD's approach constraint samples inside it), whose fingers stay above
   the table top (the object's base), whose approach comes from the arm's side (its
   horizontal part within ``approach_cone_deg`` of the bearing from the shoulder) and
   whose wrist is within reach (the reach filter; a mobile base adds its travel).

The score is ``100 · min(1, Σ quality · share^share_power · reach weight /
full_count)``: the surviving count, weighted by quality, by the share of the object
held (square root by default) and by the wrist's reach factor (``grasp_pose.reach_factor``:
grasps near the edge of the arm's workspace count less). ``full_count`` is one constant
for every robot and object: the weighted count at which an object is as graspable as a
score can say. A count rather than the best candidate's rating because a rating from
geometry alone saturates (most antipodal pairs on a box are perfect), while how many
ways a hand can take an object from where the arm stands is what changes with the
gripper, the orientation constraint and the pose. Candidates are sampled at a fixed
density per surface area (``points_per_m2``), so a bigger object offers more grasps.
``full_count`` (300) and ``share_power`` (0.5) were chosen on the tea-party configs
against Tables 1 and 2 (docs/tea_party.md): a higher power orders more objects as the
paper does but sinks the Baxter's tea pot below its burger in scenario 2, which the
paper's outcome there needs the other way round.

Readings chosen where the paper is silent: a table top at the object's base; closed
solids (the cup is not hollow, so no finger goes inside it); fingers 2 cm wide, a
palm 4 cm wide and 2 cm thick; the approach cone of a sideways arm; whole-object point
clouds (no occlusion). ``score`` takes under a millisecond per pose once the model's
candidates exist (``bench_grasp_tables.py`` prints both times); building them takes
seconds, which is why ``unbuilt`` and ``build`` expose that step to callers that must
not block (``grasp_scoring.GraspScoring``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamtree.broker.lazy import lazy_module
from teamtree.hardware.geometry import ArmModel, GraspOrientation, ShapePrimitive
from teamtree.planners.tasktree.grasp_models import ObjectModel, object_model
from teamtree.planners.tasktree.grasp_pose import reach_factors
from teamtree.planners.tasktree.metrics import GraspCandidate, GraspResult

if TYPE_CHECKING:
    import numpy as np
    import trimesh
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE
    trimesh = lazy_module("trimesh")  # only when a model's candidates are first made

__all__ = ["CandidateSet", "MeshGraspScorer", "grasp_candidates"]


@dataclass(frozen=True)
class CandidateSet:
    """Antipodal grasp candidates of one model for one hand, in the object's frame
    (rows): grasp centre, approach, closing axis, width, quality [0, 1], the lowest
    z of the fingers, and how far the palm stands behind the centre."""

    position: np.ndarray
    approach: np.ndarray
    closing: np.ndarray
    width: np.ndarray
    quality: np.ndarray
    lowest: np.ndarray
    palm: np.ndarray
    share: np.ndarray
    pairs: int

    def __len__(self) -> int:
        return len(self.width)


def _ray_exits(
    origins: np.ndarray, dirs: np.ndarray, triangles: np.ndarray, normals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each ray, starting just inside a union of closed meshes, leaves it: the
    first hit at which the count of solids it is inside falls to 0 (entering a face
    adds one, leaving takes one). Möller-Trumbore on every triangle, in numpy (no
    rtree or embree needed). Returns (hit, distance, exit normal)."""
    v0 = triangles[:, 0]
    e1 = triangles[:, 1] - v0
    e2 = triangles[:, 2] - v0
    n = len(origins)
    hit = np.zeros(n, dtype=bool)
    dist = np.zeros(n)
    out_normal = np.zeros((n, 3))
    for lo in range(0, n, 128):
        o, d = origins[lo : lo + 128], dirs[lo : lo + 128]
        p = np.cross(d[:, None, :], e2[None, :, :])
        det = np.einsum("tk,rtk->rt", e1, p)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        s = o[:, None, :] - v0[None, :, :]
        u = np.einsum("rtk,rtk->rt", s, p) * inv
        q = np.cross(s, e1[None, :, :])
        v = np.einsum("rk,rtk->rt", d, q) * inv
        t = np.einsum("tk,rtk->rt", e2, q) * inv
        ok &= (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-7)
        sign = np.where(np.einsum("rk,tk->rt", d, normals) > 0, -1, 1)  # leaving: -1
        for i in range(len(o)):
            cols = np.flatnonzero(ok[i])
            if not len(cols):
                continue
            order = cols[np.argsort(t[i, cols], kind="stable")]
            depth = 1 + np.cumsum(sign[i, order])
            out = np.flatnonzero(depth <= 0)
            if len(out):
                j = order[out[0]]
                hit[lo + i] = True
                dist[lo + i] = t[i, j]
                out_normal[lo + i] = normals[j]
    return hit, dist, out_normal


def _perpendiculars(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors per row of `c` spanning the plane normal to it."""
    helper = np.where(np.abs(c[:, 2:3]) < 0.9, [[0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0]])
    u = np.cross(c, helper)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u, np.cross(c, u)


@functools.lru_cache(maxsize=64)
def grasp_candidates(
    model: ObjectModel,
    gripper_width: float,
    finger_depth: float,
    finger_thickness: float,
    *,
    friction: float = 0.5,
    points_per_m2: float = 40000.0,
    max_points: int = 1200,
    directions: int = 2,
    n_approaches: int = 16,
    seed: int = 0,
) -> CandidateSet:
    """Antipodal candidates of `model` for a hand opening to `gripper_width` with
    fingers `finger_depth` long and `finger_thickness` thick (module docstring, step 2).
    Cached: the same model and hand give the same array objects."""
    rng = np.random.default_rng(seed)
    meshes = [part.mesh() for part in model.parts]
    mesh = trimesh.util.concatenate(meshes)
    count = int(min(max_points, max(200, points_per_m2 * mesh.area)))
    points, faces = trimesh.sample.sample_surface(mesh, count, seed=rng)
    normals = mesh.face_normals[faces]
    owner = np.repeat(np.arange(len(meshes)), [len(m.faces) for m in meshes])[faces]
    outside = np.ones(len(points), dtype=bool)
    for k, part in enumerate(model.parts):
        others = owner != k
        outside[others] &= ~part.contains(points[others], margin=1e-4)
    points, normals = points[outside], normals[outside]
    cloud = points  # what the hand must not touch
    # closing directions: the inward normal and (directions - 1) tilted inside the cone
    half = math.atan(friction)
    rows = [-normals]
    u, w = _perpendiculars(-normals)
    for _ in range(directions - 1):
        tilt = 0.5 * half * np.sqrt(rng.random(len(points)))
        turn = rng.uniform(0, 2 * math.pi, len(points))
        d = -normals * np.cos(tilt)[:, None] + np.sin(tilt)[:, None] * (
            np.cos(turn)[:, None] * u + np.sin(turn)[:, None] * w
        )
        rows.append(d)
    dirs = np.concatenate(rows)
    starts = np.tile(points, (directions, 1))
    n_start = np.tile(normals, (directions, 1))
    hit, width, n_far = _ray_exits(starts + 1e-6 * dirs, dirs, mesh.triangles, mesh.face_normals)
    cos_mu = math.cos(half)
    far = np.einsum("ij,ij->i", dirs, n_far)
    near = -np.einsum("ij,ij->i", dirs, n_start)
    keep = hit & (width > 1e-3) & (width <= gripper_width) & (far >= cos_mu) & (near >= cos_mu)
    p, c, width = starts[keep], dirs[keep], width[keep]
    centre = p + c * (width / 2)[:, None]
    friction_q = (np.minimum(far[keep], near[keep]) - cos_mu) / (1.0 - cos_mu)
    clearance = np.minimum(1.0, (gripper_width - width) / 0.01)
    pairs = len(width)
    # approach directions around each closing axis
    e1, e2 = _perpendiculars(c)
    angles = 2 * math.pi * np.arange(n_approaches) / n_approaches
    a = (np.cos(angles)[None, :, None] * e1[:, None, :]) + (
        np.sin(angles)[None, :, None] * e2[:, None, :]
    )
    a = a.reshape(-1, 3)
    cc = np.repeat(c, n_approaches, axis=0)
    g = np.repeat(centre, n_approaches, axis=0)
    b = np.cross(a, cc)
    # the hand: fingers |c| in [W/2, W/2 + t], |b| <= 1 cm, from the palm to the tips;
    # palm |c| <= W/2 + t, |b| <= 2 cm, 2 cm thick behind the fingers' roots
    half_w, t = gripper_width / 2, finger_thickness
    palm_offsets = finger_depth * np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    palm = np.full(len(a), np.nan)
    share = np.zeros(len(a))
    for lo in range(0, len(a), 256):
        sl = slice(lo, lo + 256)
        rel = cloud[None, :, :] - g[sl, None, :]
        pa = np.einsum("rpk,rk->rp", rel, a[sl])
        pc = np.abs(np.einsum("rpk,rk->rp", rel, cc[sl]))
        pb = np.abs(np.einsum("rpk,rk->rp", rel, b[sl]))
        in_finger = (pc >= half_w) & (pc <= half_w + t) & (pb <= 0.01)
        in_palm = (pc <= half_w + t) & (pb <= 0.02)
        chosen = np.full(pa.shape[0], np.nan)
        for off in palm_offsets[::-1]:  # deepest first: the palm nearest the contacts
            hits = in_finger & (pa >= -off) & (pa <= finger_depth - off)
            hits |= in_palm & (pa >= -off - 0.02) & (pa < -off)
            free = ~hits.any(axis=1) & np.isnan(chosen)
            chosen[free] = off
        palm[sl] = chosen
        inside = (pa >= -chosen[:, None]) & (pa <= finger_depth - chosen[:, None])
        share[sl] = inside.mean(axis=1)
    ok = ~np.isnan(palm)
    a, cc, b, g, palm, share = a[ok], cc[ok], b[ok], g[ok], palm[ok], share[ok]
    q = np.repeat(friction_q * clearance, n_approaches)[ok]
    w = np.repeat(width, n_approaches)[ok]
    # lowest point of the fingers (separable over the finger box's three axes)
    lowest = (
        g[:, 2]
        + np.minimum(-palm * a[:, 2], (finger_depth - palm) * a[:, 2])
        - (half_w + t) * np.abs(cc[:, 2])
        - 0.01 * np.abs(b[:, 2])
    )
    return CandidateSet(g, a, cc, w, q, lowest, palm, share, pairs)


@dataclass(frozen=True)
class _Filtered:
    """Candidates that pass the pose-independent filters for one arm kind."""

    position: np.ndarray
    approach: np.ndarray
    closing: np.ndarray
    width: np.ndarray
    quality: np.ndarray
    palm: np.ndarray


@dataclass(frozen=True)
class MeshGraspScorer:
    """Grasp score 0-100 from the antipodal candidates of an object's mesh model that
    survive one arm's gripper, orientation, table, approach and reach filters at the
    object's pose (module docstring). Deterministic for ``seed``; a generator passed to
    ``score`` is not used (the candidates are sampled once per model). The first score
    of a model and hand builds its candidates (seconds); ``unbuilt`` tells whether one
    is due and ``build`` does it, so an agent runs it off its event loop
    (``GraspScoring``, agents/tasktree/grasp_tracker.py)."""

    full_count: float = 300.0
    share_power: float = 0.5
    approach_cone_deg: float = 60.0
    table_clearance: float = 0.005
    friction: float = 0.5
    n_approaches: int = 16
    seed: int = 0
    models: Mapping[str, str] | None = None
    """Object name → model name, when a config's names are not the models' own."""

    def model(self, name: str | None, shape: ShapePrimitive) -> ObjectModel:
        """The object model scored for object `name` with primitive `shape`."""
        if name is not None and self.models is not None:
            name = self.models.get(name, name)
        return object_model(name, shape)

    def candidates(self, model: ObjectModel, arm: ArmModel) -> CandidateSet:
        """All candidates of `model` for `arm`'s hand (cached per model and hand)."""
        return grasp_candidates(
            model,
            arm.gripper_max_width,
            arm.finger_depth,
            arm.finger_thickness,
            friction=self.friction,
            n_approaches=self.n_approaches,
            seed=self.seed,
        )

    def _filtered_key(self, model: ObjectModel, arm: ArmModel) -> tuple[Any, ...]:
        return (model, arm.gripper_max_width, arm.finger_depth, arm.finger_thickness,
                str(arm.orientation), arm.tolerance_deg, self.table_clearance,
                self.share_power, self.friction, self.n_approaches, self.seed)  # fmt: skip

    def unbuilt(
        self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None
    ) -> tuple[Any, ...] | None:
        """None once object `name`'s candidates for `arm`'s hand and orientation are
        built (``score`` then takes under a millisecond); else the key of that build,
        the same for every pose (``GraspScoring``)."""
        key = self._filtered_key(self.model(name, shape), arm)
        return None if key in _FILTERED else key

    def build(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> None:
        """Build object `name`'s candidates for `arm` (seconds: step 2 of the module
        docstring) and their pose-independent filters. Pure computation on module
        caches whose entries are set whole, so it may run in a worker thread while
        another thread scores objects already built (``GraspScoring``)."""
        self._filtered(self.model(name, shape), arm)

    def _filtered(self, model: ObjectModel, arm: ArmModel) -> _Filtered:
        key = self._filtered_key(model, arm)
        cached = _FILTERED.get(key)
        if cached is not None:
            return cached
        cs = self.candidates(model, arm)
        keep = _orientation_mask(cs.approach, cs.closing, arm)
        keep &= cs.lowest >= model.bottom + self.table_clearance
        quality = cs.quality * cs.share**self.share_power
        out = _Filtered(cs.position[keep], cs.approach[keep], cs.closing[keep],
                        cs.width[keep], quality[keep], cs.palm[keep])  # fmt: skip
        if len(_FILTERED) > 256:  # the oldest goes: the others stay built
            _FILTERED.pop(next(iter(_FILTERED), None), None)
        _FILTERED[key] = out
        return out

    def surviving(
        self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, _Filtered, np.ndarray]:
        """(mask of the candidates that survive every filter at `shape`'s pose, their
        reach weights, the pose-independent survivors, world positions)."""
        f = self._filtered(self.model(name, shape), arm)
        cos, sin = math.cos(shape.yaw), math.sin(shape.yaw)
        rot = np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])
        g = f.position @ rot.T + shape.center
        a = f.approach @ rot.T
        shoulder = np.asarray(arm.base_position, dtype=float)
        keep = np.ones(len(g), dtype=bool)
        h = np.hypot(a[:, 0], a[:, 1])
        bx, by = g[:, 0] - shoulder[0], g[:, 1] - shoulder[1]
        bearing = np.hypot(bx, by)
        level = (h > 0.5) & (bearing > 1e-9)  # sideways-ish approaches come from the arm
        cos_b = (a[:, 0] * bx + a[:, 1] * by) / np.where(level, h * bearing, 1.0)
        keep &= ~level | (cos_b >= math.cos(math.radians(self.approach_cone_deg)))
        wrist = g - a * (f.palm + arm.hand_length)[:, None]
        reach = arm.reach + (arm.base_travel if arm.mobile_base else 0.0)
        keep &= np.linalg.norm(wrist - shoulder, axis=1) <= reach
        weight = reach_factors(g, a, f.palm, arm)
        return keep, weight, f, g

    def score(
        self,
        shape: ShapePrimitive,
        arm: ArmModel,
        rng: Any = None,
        name: str | None = None,
    ) -> GraspResult:
        """The grasp score of object `name` (its model; else its primitive) at `shape`'s
        pose for `arm`, with the best surviving candidate; ``rng`` is not used."""
        keep, weight, f, g = self.surviving(shape, arm, name)
        if not keep.any():
            return GraspResult(0.0, None, "no candidate", 0)
        mass = f.quality[keep] * weight[keep]
        score = 100.0 * min(1.0, float(mass.sum()) / self.full_count)
        i = np.flatnonzero(keep)[int(np.argmax(mass))]
        cos, sin = math.cos(shape.yaw), math.sin(shape.yaw)
        rot = np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])
        best = GraspCandidate(
            tuple(g[i].tolist()),  # type: ignore[arg-type]
            tuple((rot @ f.approach[i]).tolist()),  # type: ignore[arg-type]
            tuple((rot @ f.closing[i]).tolist()),  # type: ignore[arg-type]
            float(f.width[i]),
            100.0 * float(mass.max()),
        )
        return GraspResult(score, best, "ok", int(keep.sum()))


_FILTERED: dict[tuple[Any, ...], _Filtered] = {}


def _orientation_mask(approach: np.ndarray, closing: np.ndarray, arm: ArmModel) -> np.ndarray:
    """``metrics.orientation_ok`` on every row: the arm's allowed orientation."""
    orientation = GraspOrientation(arm.orientation)
    if orientation is GraspOrientation.ANY:
        return np.ones(len(approach), dtype=bool)
    if orientation is GraspOrientation.TOP_DOWN:
        return -approach[:, 2] >= math.cos(math.radians(arm.tolerance_deg))
    s = math.sin(math.radians(arm.tolerance_deg))
    return (np.abs(approach[:, 2]) <= s) & (np.abs(closing[:, 2]) <= s)
