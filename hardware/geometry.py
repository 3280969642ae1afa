"""Geometry of objects and arms: shape primitives and arm models (what a body is).

Shared by the simulated world (hardware) and the activation metrics (planners), so it
lives on the lower layer.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from teamtree.broker.errors import SpecificationError
from teamtree.broker.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE

__all__ = ["ArmModel", "GraspOrientation", "ShapePrimitive", "row_dots", "up_axis"]


@functools.cache
def up_axis() -> np.ndarray:
    """The world's up axis, +z (one array, made on first use: numpy loads lazily).
    Shared: read it, never write to it."""
    return np.array([0.0, 0.0, 1.0])


class GraspOrientation(StrEnum):
    """Which gripper orientations an arm may grasp with (§2.4.1)."""

    SIDEWAYS = "sideways"
    """Approach and closing axis nearly horizontal (PR2 in the paper)."""
    TOP_DOWN = "top_down"
    """Approach nearly straight down (Baxter in the paper)."""
    ANY = "any"
    """No constraint."""


@dataclass(frozen=True)
class ArmModel:
    """What the grasp filters need to know about one arm; robot profiles fill it.

    ``base_position``: arm base (shoulder) in the world frame, metres. ``reach``: how
    far from the base a grasp may be. ``gripper_max_width``: widest opening.
    ``finger_depth``: how far the fingers reach past the palm. ``orientation``: the
    allowed ``GraspOrientation``; ``tolerance_deg`` how far from it a grasp may be.
    ``mobile_base``: the base can drive; ``base_travel`` is how far it may drive to
    reach a grasp (added to ``reach`` when mobile). ``hand_length``: palm to wrist
    along the approach, so the wrist of a grasp stands that far behind the palm.
    """

    base_position: tuple[float, float, float]
    reach: float
    gripper_max_width: float
    orientation: GraspOrientation | str = GraspOrientation.ANY
    tolerance_deg: float = 20.0
    finger_depth: float = 0.05
    finger_thickness: float = 0.02
    mobile_base: bool = False
    base_travel: float = 0.0
    hand_length: float = 0.12

    def __post_init__(self) -> None:
        object.__setattr__(self, "orientation", GraspOrientation(self.orientation))
        if self.reach <= 0 or self.gripper_max_width <= 0 or self.finger_depth <= 0:
            raise SpecificationError("ArmModel: reach, gripper width and finger depth must be > 0")


def row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The dot product of each row of `a` with the same row of `b` (n x 3): the
    products and sums a 3-vector dot makes, for many vectors at once."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


_SHAPE_DIMS = {"box": 3, "cylinder": 2, "sphere": 1}


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@dataclass(frozen=True)
class ShapePrimitive:
    """An object's geometry: ``kind`` box / cylinder / sphere, centred at ``position``.

    ``dimensions``: box (size_x, size_y, size_z) full extents; cylinder (radius,
    height), axis vertical; sphere (radius,). ``yaw``: rotation about the vertical
    axis (radians). Raises SpecificationError for a bad kind or dimensions.
    """

    kind: str
    dimensions: tuple[float, ...]
    position: tuple[float, float, float]
    yaw: float = 0.0

    def __post_init__(self) -> None:
        n = _SHAPE_DIMS.get(self.kind)
        if n is None:
            raise SpecificationError(f"shape kind {self.kind!r} is not box, cylinder or sphere")
        if len(self.dimensions) != n or any(d <= 0 for d in self.dimensions):
            raise SpecificationError(f"a {self.kind} needs {n} positive dimension(s)")

    # The arrays below are made once per shape (a grasp score asks for them ~300 times:
    # a fifth of its time went to building them) and are read-only, as they are shared.

    @functools.cached_property
    def center(self) -> np.ndarray:
        """Centre as a numpy vector (read-only)."""
        return _frozen(np.asarray(self.position, dtype=float))

    @functools.cached_property
    def _yaw_cos_sin(self) -> tuple[float, float]:
        return math.cos(self.yaw), math.sin(self.yaw)

    @functools.cached_property
    def _half(self) -> np.ndarray:
        return _frozen(np.asarray(self.dimensions) / 2)

    def support(self, d: np.ndarray) -> float:
        """max over the shape's points x of d·x (d need not be unit)."""
        return float(self.supports(np.asarray(d, dtype=float).reshape(1, 3))[0])

    def supports(self, d: np.ndarray) -> np.ndarray:
        """``support`` of every row of `d` (n x 3) at once."""
        c = self.center
        base = d[:, 0] * c[0] + d[:, 1] * c[1] + d[:, 2] * c[2]
        if self.kind == "sphere":
            return base + self.dimensions[0] * np.sqrt(row_dots(d, d))
        dl = self._local(d)
        if self.kind == "box":
            return base + row_dots(np.abs(dl), self._half[None, :])
        r, height = self.dimensions
        return base + r * np.hypot(dl[:, 0], dl[:, 1]) + height / 2 * np.abs(dl[:, 2])

    def _local(self, d: np.ndarray) -> np.ndarray:
        """Rows of `d` in the shape's frame (the rotation is about z)."""
        cos, sin = self._yaw_cos_sin
        return np.stack(
            [d[:, 0] * cos + d[:, 1] * sin, d[:, 1] * cos - d[:, 0] * sin, d[:, 2]], axis=1
        )

    def _world(self, d: np.ndarray) -> np.ndarray:
        """Rows of `d` from the shape's frame to the world's."""
        cos, sin = self._yaw_cos_sin
        return np.stack(
            [d[:, 0] * cos - d[:, 1] * sin, d[:, 0] * sin + d[:, 1] * cos, d[:, 2]], axis=1
        )

    def intersects(
        self, p: np.ndarray, u: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``intersect`` for every row of `p` and `u` (n x 3, u unit) at once:
        (hit, s_in, s_out, n_in, n_out); rows where ``hit`` is False hold no answer."""
        q = self._local(p - self.center)
        v = self._local(u)
        n = len(q)
        if self.kind == "sphere":
            r = self.dimensions[0]
            b = row_dots(q, v)
            disc = b * b - (row_dots(q, q) - r * r)
            hit = disc > 0
            root = np.sqrt(np.where(hit, disc, 0.0))
            s0, s1 = -b - root, -b + root
            n0 = (q + s0[:, None] * v) / r
            n1 = (q + s1[:, None] * v) / r
            return hit, s0, s1, self._world(n0), self._world(n1)
        lo = np.full(n, -math.inf)
        hi = np.full(n, math.inf)
        n_lo = np.zeros((n, 3))
        n_hi = np.zeros((n, 3))
        hit = np.ones(n, dtype=bool)
        if self.kind == "box":
            axes = range(3)
            bounds = [(-h, h) for h in self._half.tolist()]
        else:
            r, height = self.dimensions
            a2 = v[:, 0] ** 2 + v[:, 1] ** 2
            flat = a2 < 1e-12
            hit &= ~flat | (q[:, 0] ** 2 + q[:, 1] ** 2 <= r * r)
            b = q[:, 0] * v[:, 0] + q[:, 1] * v[:, 1]
            c = q[:, 0] ** 2 + q[:, 1] ** 2 - r * r
            disc = b * b - a2 * c
            wall = ~flat
            hit &= ~wall | (disc > 0)
            root = np.sqrt(np.where(wall & (disc > 0), disc, 0.0))
            safe = np.where(wall, a2, 1.0)
            s0, s1 = (-b - root) / safe, (-b + root) / safe
            lo = np.where(wall, s0, lo)
            hi = np.where(wall, s1, hi)
            p0, p1 = q + s0[:, None] * v, q + s1[:, None] * v
            n_lo[wall, 0] = p0[wall, 0] / r
            n_lo[wall, 1] = p0[wall, 1] / r
            n_hi[wall, 0] = p1[wall, 0] / r
            n_hi[wall, 1] = p1[wall, 1] / r
            axes = (2,)
            bounds = [None, None, (-height / 2, height / 2)]
        for i in axes:
            low, high = bounds[i]
            vi, qi = v[:, i], q[:, i]
            parallel = np.abs(vi) < 1e-12
            hit &= ~parallel | (np.abs(qi) <= high)
            safe = np.where(parallel, 1.0, vi)
            a, b = (low - qi) / safe, (high - qi) / safe
            swap = a > b  # entering through the +face: its normal is +e_i
            enter = np.where(swap, b, a)
            leave = np.where(swap, a, b)
            sign = np.where(swap, 1.0, -1.0)
            better_lo = ~parallel & (enter > lo)
            better_hi = ~parallel & (leave < hi)
            lo = np.where(better_lo, enter, lo)
            hi = np.where(better_hi, leave, hi)
            n_lo[better_lo] = 0.0
            n_lo[better_lo, i] = sign[better_lo]
            n_hi[better_hi] = 0.0
            n_hi[better_hi, i] = -sign[better_hi]
        hit &= lo < hi
        return hit, lo, hi, self._world(n_lo), self._world(n_hi)

    def intersect(
        self, p: np.ndarray, u: np.ndarray
    ) -> tuple[float, float, np.ndarray, np.ndarray] | None:
        """Where the line p + s·u (u unit) enters and leaves: (s_in, s_out, n_in, n_out).

        Normals are outward, in the world frame. None if the line misses.
        """
        rows = np.asarray(p, dtype=float).reshape(1, 3), np.asarray(u, dtype=float).reshape(1, 3)
        hit, s_in, s_out, n_in, n_out = self.intersects(*rows)
        if not hit[0]:
            return None
        return float(s_in[0]), float(s_out[0]), n_in[0], n_out[0]
