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

__all__ = ["ArmModel", "GraspOrientation", "ShapePrimitive", "up_axis"]


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
    def _rotation(self) -> np.ndarray:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return _frozen(np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]))

    @functools.cached_property
    def _half(self) -> np.ndarray:
        return _frozen(np.asarray(self.dimensions) / 2)

    def support(self, d: np.ndarray) -> float:
        """max over the shape's points x of d·x (d need not be unit)."""
        base = float(d @ self.center)
        if self.kind == "sphere":
            return base + self.dimensions[0] * float(np.linalg.norm(d))
        dl = self._rotation.T @ d
        if self.kind == "box":
            return base + float(np.abs(dl) @ self._half)
        r, h = self.dimensions
        return base + r * float(math.hypot(dl[0], dl[1])) + h / 2 * abs(float(dl[2]))

    def intersect(
        self, p: np.ndarray, u: np.ndarray
    ) -> tuple[float, float, np.ndarray, np.ndarray] | None:
        """Where the line p + s·u (u unit) enters and leaves: (s_in, s_out, n_in, n_out).

        Normals are outward, in the world frame. None if the line misses.
        """
        rot = self._rotation
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
            half = self._half
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
