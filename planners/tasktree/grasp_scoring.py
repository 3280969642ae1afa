"""One calling convention for the grasp scorers, and the scorer a config names.

Callers score through ``GraspScoring`` and never branch on the scorer's type:
``score(shape, arm, rng, name=None)`` rates object `name` at `shape`'s pose for `arm`
(``GraspScorer`` samples with `rng` and ignores `name`; ``MeshGraspScorer`` scores the
named object's model and ignores `rng`). A scorer may need a one-off build before its
first score of an object and hand (the mesh scorer's candidates: seconds of CPU); it
says so with ``unbuilt`` and does it with ``build``, so a caller that must not block
(an agent's event loop) can run ``build`` elsewhere first and score once it is done.
Pure: nothing here starts a thread or waits.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from teamtree.broker import SpecificationError
from teamtree.hardware.geometry import ArmModel, ShapePrimitive
from teamtree.planners.tasktree.metrics import GraspResult

__all__ = ["GRASP_SCORERS", "GraspScoring", "grasp_scorer"]

GRASP_SCORERS: tuple[str, ...] = ("primitive", "mesh")
"""The kinds ``grasp_scorer`` makes (a robot's ``grasp_scorer`` config key)."""


class GraspScoring(Protocol):
    """What ``GraspScorer`` and ``MeshGraspScorer`` both offer."""

    def score(
        self, shape: ShapePrimitive, arm: ArmModel, rng: Any, name: str | None = None
    ) -> GraspResult:
        """The grasp score (0-100) of object `name` at `shape`'s pose for `arm`."""
        ...

    def unbuilt(
        self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None
    ) -> Hashable | None:
        """None when ``score`` of `name` for `arm` is cheap now; else a key naming the
        one-off work it would do first (the same key for every pose of that work)."""
        ...

    def build(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> None:
        """Do the work ``unbuilt`` names (nothing if none); pure computation, so it may
        run in another thread than the one that scores."""
        ...


def grasp_scorer(kind: str) -> GraspScoring:
    """The scorer of a config's ``grasp_scorer``: ``"primitive"`` (``GraspScorer``, on the
    object's shape primitive) or ``"mesh"`` (``MeshGraspScorer``, on its mesh model)."""
    if kind == "primitive":
        from teamtree.planners.tasktree.metrics import GraspScorer

        return GraspScorer()
    if kind == "mesh":
        from teamtree.planners.tasktree.grasp_mesh import MeshGraspScorer

        return MeshGraspScorer()
    raise SpecificationError(f"grasp scorer {kind!r} is not 'primitive' or 'mesh'")
