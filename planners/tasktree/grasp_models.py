"""Object models for the mesh grasp scorer: each object a union of solid parts.

Sized from the object's bounding primitive in the scene (seed 000's tables give only
primitives): a cup with a handle, a tea pot with body, lid, knob, handle and spout, and
a burger of stacked buns and a wider patty. Any other object is its primitive. Frame:
origin at the centre of the primitive, z up, base at ``-height / 2``. Closed solids
(the cup is not hollow, so no finger goes inside it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teamtree.broker.lazy import lazy_module
from teamtree.hardware.geometry import ShapePrimitive

if TYPE_CHECKING:
    import numpy as np
    import trimesh
else:
    np = lazy_module("numpy")
    trimesh = lazy_module("trimesh")  # only when a model is first meshed

__all__ = ["MODEL_NAMES", "ObjectModel", "Part", "object_model"]


@dataclass(frozen=True)
class Part:
    """One solid of an object model, in the object's frame.

    ``kind``: ``"box"`` (``size`` = full extents x, y, z), ``"cylinder"`` (radius,
    height; axis along local z), ``"sphere"`` (radius,) or ``"torus"`` (major, minor
    radius; ring in the local xy plane). ``center``: where the part's centre lies;
    ``axis``: where its local z points (unit, in the object's frame)."""

    kind: str
    size: tuple[float, ...]
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)

    def rotation(self) -> np.ndarray:
        """3 x 3: columns are the part's local x, y, z in the object's frame."""
        z = np.asarray(self.axis, dtype=float)
        z = z / np.linalg.norm(z)
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x = x / np.linalg.norm(x)
        return np.stack([x, np.cross(z, x), z], axis=1)

    def mesh(self) -> trimesh.Trimesh:
        """The part as a closed triangle mesh (trimesh.creation), placed and turned."""
        t = np.eye(4)
        t[:3, :3] = self.rotation()
        t[:3, 3] = self.center
        if self.kind == "box":
            return trimesh.creation.box(extents=self.size, transform=t)
        if self.kind == "cylinder":
            r, h = self.size
            return trimesh.creation.cylinder(radius=r, height=h, sections=32, transform=t)
        if self.kind == "sphere":
            return trimesh.creation.icosphere(subdivisions=3, radius=self.size[0]).apply_transform(
                t
            )
        if self.kind == "torus":
            major, minor = self.size
            return trimesh.creation.torus(major, minor, 32, 12, transform=t)
        raise ValueError(f"part kind {self.kind!r} is not box, cylinder, sphere or torus")

    def contains(self, points: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Which rows of `points` (object frame) lie inside the part, shrunk by `margin`."""
        q = (points - np.asarray(self.center)) @ self.rotation()
        if self.kind == "box":
            return np.all(np.abs(q) < np.asarray(self.size) / 2 - margin, axis=1)
        if self.kind == "cylinder":
            r, h = self.size
            return (np.hypot(q[:, 0], q[:, 1]) < r - margin) & (np.abs(q[:, 2]) < h / 2 - margin)
        if self.kind == "sphere":
            return np.linalg.norm(q, axis=1) < self.size[0] - margin
        major, minor = self.size
        ring = np.hypot(q[:, 0], q[:, 1]) - major
        return np.hypot(ring, q[:, 2]) < minor - margin


@dataclass(frozen=True)
class ObjectModel:
    """An object as a union of ``parts`` (object frame); ``bottom``: the z of its base,
    where the table top is."""

    name: str
    parts: tuple[Part, ...]
    bottom: float


def _cylinder_on(r: float, h: float, z0: float, x: float = 0.0) -> Part:
    """A vertical cylinder standing on ``z0``."""
    return Part("cylinder", (r, h), (x, 0.0, z0 + h / 2))


def _cup(r: float, h: float) -> tuple[Part, ...]:
    # body; a ring handle in the xz plane, half of it sunk into the body's side
    ring = 0.3 * h
    return (
        _cylinder_on(r, h, -h / 2),
        Part("torus", (ring, 0.007), (r, 0.0, 0.0), (0.0, 1.0, 0.0)),
    )


def _tea_pot(r: float, h: float) -> tuple[Part, ...]:
    # body 80 % of the height, a lid a little narrower, a knob on it; a ring handle on
    # -x standing out 5.5 cm and rising to 2 cm below the body's top (a hand from
    # above takes it), and a spout on +x pointing up at 45 degrees
    body, lid, knob = 0.8 * h, 0.06 * h, 0.14 * h
    z = -h / 2
    spout = 0.45 * h
    s = math.sqrt(0.5)
    return (
        _cylinder_on(r, body, z),
        _cylinder_on(0.75 * r, lid, z + body),
        _cylinder_on(0.25 * r, knob, z + body + lid),
        Part("torus", (0.25 * h, 0.008), (-r - 0.015, 0.0, z + 0.55 * body), (0.0, 1.0, 0.0)),
        Part(
            "cylinder",
            (0.011, spout),
            (r + s * spout / 2 - 0.01, 0.0, z + 0.35 * body + s * spout / 2),
            (s, 0.0, s),
        ),
    )


def _burger(r: float, h: float) -> tuple[Part, ...]:
    # bottom bun, a patty 3 mm wider, top bun of stacked discs narrowing to a dome
    z = -h / 2
    bun, patty = 0.3 * h, 0.2 * h
    top = h - bun - patty
    return (
        _cylinder_on(r - 0.003, bun, z),
        _cylinder_on(r, patty, z + bun),
        _cylinder_on(r - 0.003, 0.5 * top, z + bun + patty),
        _cylinder_on(0.8 * r, 0.3 * top, z + bun + patty + 0.5 * top),
        _cylinder_on(0.5 * r, 0.2 * top, z + bun + patty + 0.8 * top),
    )


def _primitive(shape: ShapePrimitive) -> tuple[Part, ...]:
    if shape.kind == "box":
        return (Part("box", tuple(shape.dimensions)),)
    if shape.kind == "cylinder":
        return (Part("cylinder", tuple(shape.dimensions)),)
    return (Part("sphere", tuple(shape.dimensions)),)


_MODELS = {"cup": _cup, "tea_pot": _tea_pot, "burger": _burger}
MODEL_NAMES: tuple[str, ...] = (*_MODELS, "sugar", "sandwich", "orange", "apple")
"""Objects with a model here; the sugar box, sandwich, orange and apple are their
primitives (a box, a box, spheres): nothing a grasp would find differs."""


def object_model(name: str | None, shape: ShapePrimitive) -> ObjectModel:
    """The model of object `name` sized from its primitive `shape` (a cylinder's radius
    and height for the cup, tea pot and burger); any other object is its primitive."""
    build = _MODELS.get(name or "")
    if build is not None and shape.kind == "cylinder":
        parts = build(*shape.dimensions)
        label = str(name)
    else:
        parts = _primitive(shape)
        label = f"{shape.kind}{tuple(shape.dimensions)}"
    bottom = {"box": shape.dimensions[-1] / 2, "cylinder": shape.dimensions[-1] / 2}
    return ObjectModel(label, parts, -bottom.get(shape.kind, shape.dimensions[0]))
