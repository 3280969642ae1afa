"""A task-tree robot's scores per leaf: its activation potential (eq. 1 of seed 000)
from the distance and, under ``distance+grasp``, the grasp score of the leaf's object
for this arm; and the grasp scores it publishes retained on ``<me>/scores``.

Grasp scores cost the most CPU: each is cached per object pose and arm base, and
drawn from a generator seeded by the robot's ``seed`` and that key, so a score depends
on what is scored, not on how many came before it. Under the distance metric alone a
started behaviour's grasp is scored for the log and the transitions only
(``GRASP_SCORE_DELAY_S``).
"""

from __future__ import annotations

import asyncio
import zlib
from typing import TYPE_CHECKING, Any

from teamtree.agents.tasktree.world_view import WorldView
from teamtree.broker.inbound import give_way_to_critical
from teamtree.broker.lazy import lazy_module, preload
from teamtree.planners.tasktree import (
    ActivationMetric,
    GraspScorer,
    MeshGraspScorer,
    ShapePrimitive,
    distance_scores,
)

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE

__all__ = ["GRASP_SCORE_DELAY_S", "GraspTracker"]

GRASP_SCORE_DELAY_S = 0.05
"""Under the distance metric alone a started behaviour's grasp is scored for the log
and the transitions (it chooses nothing) this long after the start, once no claim or
reply waits in the process (``give_way_to_critical``), or at the behaviour's end if
that comes first. Scored at the start, its CPU ran in the handler of the reply that
won the claim, ahead of every other claim and reply of the process, during the burst
a mission's first claims make."""


class GraspTracker:
    """Scores of the leaves of `world`'s tree under `metric`; grasp scores below
    `min_grasp` count as 0 (seed 000's tables round to whole numbers, and an off-centre
    chord of a too-wide sphere scores a fraction of 1); `seed` seeds the sampler;
    `scorer` is ``"primitive"`` (``GraspScorer``) or ``"mesh"`` (``MeshGraspScorer``,
    which samples its candidates once per object model and ignores the generator)."""

    def __init__(
        self,
        world: WorldView,
        metric: ActivationMetric,
        min_grasp: float,
        seed: int,
        scorer: str = "primitive",
    ):
        self.world = world
        self.metric = metric
        self.min_grasp = min_grasp
        self.seed = seed
        self.scorer: GraspScorer | MeshGraspScorer = (
            MeshGraspScorer() if scorer == "mesh" else GraspScorer()
        )
        self.scores: dict[str, dict[str, float]] = {}  # leaf -> potential, grasp, distance
        self.cache: dict[tuple[Any, ...], float] = {}
        # started leaves whose grasp is still to score: the object's name and its shape
        # at the start (GRASP_SCORE_DELAY_S)
        self.owed: dict[str, tuple[str, ShapePrimitive]] = {}
        self._published: dict[str, float] = {}
        # the leaves whose scores were written since the grasps were last compared with
        # those published: only theirs are compared
        self._written: set[str] = set()
        self._numpy: asyncio.Future[None] | None = None  # load_numpy

    def load_numpy(self) -> asyncio.Future[None]:
        """numpy, imported in a worker thread from the first call on (done once it is).

        The scores need it, from the driver's first observation or the mission's
        start, whichever comes first; imported there on the event loop it stalled every
        agent of the process as the mission began, and imported at start-up it slowed
        the start of the agents beside it. ``numpy.random`` (the grasp sampler's) comes
        with it."""
        if self._numpy is None:
            self._numpy = asyncio.ensure_future(preload("numpy", "numpy.random"))
        return self._numpy

    def rng(self, key: tuple[Any, ...]) -> np.random.Generator:
        """The grasp sampler's generator for one object pose and arm base: seeded by
        this robot's ``seed`` and the key, so a score depends on what is scored, not
        on how many scores came before it (one shared stream gave the same object
        another score on a busier machine)."""
        return np.random.default_rng([int(self.seed or 0) % 2**64, zlib.crc32(repr(key).encode())])

    def key(self, name: str, shape: ShapePrimitive) -> tuple[Any, ...]:
        assert self.world.arm is not None
        return (name, shape.position, shape.yaw, self.world.arm.base_position)

    def grasp(self, name: str, shape: ShapePrimitive) -> float:
        """Grasp score of `shape` for this arm (0-100; below `min_grasp` counts as 0),
        cached per object pose and arm base: it does not change as the arm moves."""
        assert self.world.arm is not None
        key = self.key(name, shape)
        if key not in self.cache:
            scorer, arm = self.scorer, self.world.arm
            if isinstance(scorer, MeshGraspScorer):
                self.cache[key] = scorer.score(shape, arm, name=name).score
            else:
                self.cache[key] = scorer.score(shape, arm, self.rng(key)).score
        grasp = self.cache[key]
        return 0.0 if grasp < self.min_grasp else grasp  # tables round; a chord is no grasp

    def started(self, node: str) -> tuple[dict[str, float], bool]:
        """`node`'s scores as its behaviour starts, its grasp filled in when known, and
        whether the grasp is owed instead (``owed``: the caller schedules
        ``score_later``)."""
        score = self.scores.setdefault(node, {})
        name = self.world.tree[node].param_dict.get("object")
        objects = self.world.objects
        if score.get("grasp") is None and self.world.arm is not None and name in objects:
            shape = objects[name]
            if self.key(name, shape) in self.cache:
                score["grasp"] = self.grasp(name, shape)  # known: no CPU to speak of
                self._written.add(node)
            else:
                self.owed[node] = (name, shape)
                return score, True
        return score, False

    async def score_later(self, node: str, log: Any) -> None:
        """Score a started behaviour's grasp off the claims' path (GRASP_SCORE_DELAY_S)."""
        await asyncio.sleep(GRASP_SCORE_DELAY_S)
        await give_way_to_critical()
        self.score_owed(node, log)

    def score_owed(self, node: str, log: Any) -> None:
        """Score the grasp owed for `node` (its object as it was at the start), if any."""
        owed = self.owed.pop(node, None)
        if owed is None:
            return
        grasp = self.grasp(*owed)
        self.scores.setdefault(node, {})["grasp"] = grasp
        self._written.add(node)
        log.info("behaviour.grasp_scored", node=node, grasp=round(grasp, 1))

    def potentials(self, changed: set[str] | None = None) -> dict[str, float]:
        """Eq. 1 per leaf from the latest observation, for every leaf or (`changed`
        given) only the leaves of the objects whose view changed: an idle arm stands
        still, so the others keep theirs. Grasp scores are computed only under
        distance+grasp (they cost the most CPU)."""
        world = self.world
        if world.arm is None or world.arm_position is None:
            return {}
        pairs = world.leaf_pairs(changed)
        shapes = [None if name is None else world.objects.get(name) for _, name in pairs]
        found = [shape.position for shape in shapes if shape is not None]
        scores = iter(distance_scores(found, world.arm_position) if found else ())
        out: dict[str, float] = {}
        for (leaf, name), shape in zip(pairs, shapes, strict=True):
            if shape is None or name is None:
                out[leaf] = 0.0
                continue
            distance = next(scores)
            grasp = self.grasp(name, shape) if self.metric.use_grasp else None
            potential = self.metric.from_distance_score(distance, grasp or 0.0)
            if not world.reachable(name, shape):  # the world would answer "unreachable"
                potential = 0.0
            out[leaf] = potential
            self.scores[leaf] = {"potential": potential, "grasp": grasp, "distance": distance}
        self._written.update(out)
        return out

    def grasps_to_publish(self) -> dict[str, float] | None:
        """Every leaf's rounded grasp score when one differs from those last published
        (then taken as published), else None. Looks only at the leaves whose scores
        were written since the last look: the others cannot differ."""
        written, self._written = self._written, set()
        published, scores = self._published, self.scores
        for leaf in written:
            grasp = scores.get(leaf, {}).get("grasp")
            if published.get(leaf) != (None if grasp is None else round(grasp, 2)):
                break
        else:
            return None
        self._published = {
            leaf: round(score["grasp"], 2)
            for leaf, score in scores.items()
            if score.get("grasp") is not None
        }
        return self._published
