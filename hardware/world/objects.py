"""Graspable objects: shape primitive, pose, goal, who holds it."""

from __future__ import annotations

from dataclasses import dataclass

from teamtree.hardware.geometry import ShapePrimitive
from teamtree.hardware.profiles import Vec3
from teamtree.hardware.world.vectors import dist, vec3

GOAL_TOLERANCE = 0.02
"""Metres between an object and its goal for ``at_goal``."""


@dataclass(slots=True)
class WorldObject:
    """A graspable object: shape primitive, pose, goal, who holds it."""

    name: str
    shape: str
    dims: tuple[float, ...]
    position: Vec3
    goal: Vec3 | None = None
    yaw: float = 0.0
    held_by: str | None = None
    placements: int = 0  #: PLACEs finished since the object was last moved by hand

    def __post_init__(self) -> None:
        self.position = vec3(self.position, f"object {self.name!r} position")
        if self.goal is not None:
            self.goal = vec3(self.goal, f"object {self.name!r} goal")
        self.dims = tuple(float(d) for d in self.dims)
        self.primitive()  # validates shape and dims

    def primitive(self) -> ShapePrimitive:
        """The grasp pipeline's view of this object. Raises SpecificationError."""
        return ShapePrimitive(self.shape, self.dims, self.position, self.yaw)

    def at_goal(self, tolerance: float = GOAL_TOLERANCE) -> bool:
        """True when nobody holds the object and it is within `tolerance` of its goal."""
        return (
            self.goal is not None
            and self.held_by is None
            and dist(self.position, self.goal) <= tolerance
        )
