"""A task-tree robot's scores per leaf: its activation potential (eq. 1 of seed 000)
from the distance and, under ``distance+grasp``, the grasp score of the leaf's object
for this arm; and the grasp scores it publishes retained on ``<me>/scores``.

Grasp scores cost the most CPU: each is cached per object pose and arm base, and
drawn from a generator seeded by the robot's ``seed`` and that key, so a score depends
on what is scored, not on how many came before it. Under the distance metric alone a
started behaviour's grasp is scored for the log and the transitions only
(``GRASP_SCORE_DELAY_S``).

A scorer may need a one-off build per object model and hand before it scores (the mesh
scorer's candidates: seconds of CPU, ``GraspScoring.unbuilt``). That build never runs
on the event loop: a robot that stalls its loop for seconds stops renewing its body's
lease and its presence. The tracker starts it in a worker thread as soon as the
object's shape is known (``warm``, from every observation) and, until it is done, that
object's grasp is not scored yet (``None``): under ``distance+grasp`` its leaves'
potential is 0, so the robot does not claim them, and once the build ends the tracker
calls ``on_built`` (the robot recomputes its potentials and may claim). The robot also
waits for the builds of the objects in view before its first claims (``builds_done``,
robot.py). Per-pose scores of a built model take under a millisecond and stay on the
loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import time
import zlib
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

from teamtree.agents.tasktree.world_view import WorldView
from teamtree.broker.inbound import give_way_to_critical
from teamtree.broker.lazy import lazy_module, preload
from teamtree.planners.tasktree import (
    ActivationMetric,
    GraspScoring,
    ShapePrimitive,
    distance_scores,
    grasp_scorer,
)

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE

__all__ = ["GRASP_SCORE_DELAY_S", "GraspTracker", "build_in_thread"]

GRASP_SCORE_DELAY_S = 0.05
"""Under the distance metric alone a started behaviour's grasp is scored for the log
and the transitions (it chooses nothing) this long after the start, once no claim or
reply waits in the process (``give_way_to_critical``), or at the behaviour's end if
that comes first. Scored at the start, its CPU ran in the handler of the reply that
won the claim, ahead of every other claim and reply of the process, during the burst
a mission's first claims make."""


_BUILDER: concurrent.futures.ThreadPoolExecutor | None = None


def build_in_thread(work: Callable[[], None]) -> Awaitable[None]:
    """Run a scorer's build (`work`) in the process's grasp-build thread.

    One thread for the process: the builds of its agents queue behind each other
    rather than take both cores (and the GIL, in turns) from the agents' loops, and a
    model built for one robot is found built by the next robot with the same hand."""
    global _BUILDER
    if _BUILDER is None:
        _BUILDER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grasp-build")
    return asyncio.get_running_loop().run_in_executor(_BUILDER, work)


class GraspTracker:
    """Scores of the leaves of `world`'s tree under `metric`; grasp scores below
    `min_grasp` count as 0 (seed 000's tables round to whole numbers, and an off-centre
    chord of a too-wide sphere scores a fraction of 1); `seed` seeds the sampler;
    `scorer` is ``"primitive"`` (``GraspScorer``), ``"mesh"`` (``MeshGraspScorer``, which
    builds its candidates once per object model and hand and ignores the generator) or
    a ``GraspScoring``.

    `build` runs a scorer's build off the event loop (``build_in_thread``; a test gives
    its own); `spawn` starts the task that awaits it (the robot's ``spawn``: cancelled
    when the agent stops); ``on_built``, when set, is awaited after each build with the
    seconds it took (None when it failed). With no
    running event loop (a script, a test) a build runs in place: there is no loop to
    stall."""

    def __init__(
        self,
        world: WorldView,
        metric: ActivationMetric,
        min_grasp: float,
        seed: int,
        scorer: str | GraspScoring = "primitive",
        *,
        build: Callable[[Callable[[], None]], Awaitable[None]] = build_in_thread,
        spawn: Callable[[Awaitable[None]], asyncio.Future[None]] = asyncio.ensure_future,
    ):
        self.world = world
        self.metric = metric
        self.min_grasp = min_grasp
        self.seed = seed
        self.scorer: GraspScoring = grasp_scorer(scorer) if isinstance(scorer, str) else scorer
        self.build = build
        self.spawn = spawn
        self.on_built: Callable[[float | None], Awaitable[None]] | None = None
        # builds under way (the scorer's key -> the task awaiting it) and those that
        # failed (their objects score 0: no grasp, and no build again on every look)
        self.building: dict[Hashable, asyncio.Future[None]] = {}
        self.failed: dict[Hashable, BaseException] = {}
        self.built_s: list[float] = []  #: the seconds each build that ended well took
        self._warmed: set[tuple[Any, ...]] = set()  # warm: objects' models looked at
        self._names: list[str] | None = None  # warm: the objects the leaves name
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

    def grasp(self, name: str, shape: ShapePrimitive) -> float | None:
        """Grasp score of `shape` for this arm (0-100; below `min_grasp` counts as 0),
        cached per object pose and arm base: it does not change as the arm moves. None
        while the scorer's build for the object is under way (started here if not yet:
        ``ready``)."""
        assert self.world.arm is not None
        key = self.key(name, shape)
        if key not in self.cache:
            if not self.ready(name, shape):
                return None
            unbuilt = self.scorer.unbuilt(shape, self.world.arm, name)
            if unbuilt is not None and unbuilt in self.failed:
                self.cache[key] = 0.0  # no model to grasp by
            else:
                result = self.scorer.score(shape, self.world.arm, self.rng(key), name=name)
                self.cache[key] = result.score
        grasp = self.cache[key]
        return 0.0 if grasp < self.min_grasp else grasp  # tables round; a chord is no grasp

    def ready(self, name: str, shape: ShapePrimitive) -> bool:
        """Whether object `name` at `shape` can be scored now without the scorer's
        one-off build; if not, that build starts (once) off the event loop."""
        arm = self.world.arm
        assert arm is not None
        unbuilt = self.scorer.unbuilt(shape, arm, name)
        if unbuilt is None or unbuilt in self.failed:
            return True
        if unbuilt in self.building:
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop to stall
            self.scorer.build(shape, arm, name)
            return True
        work = functools.partial(self.scorer.build, shape, arm, name)
        self.building[unbuilt] = self.spawn(self._build(unbuilt, work))
        return False

    async def _build(self, unbuilt: Hashable, work: Callable[[], None]) -> None:
        """Await one build, then ``on_built``; under way (``building``) until both end."""
        try:
            failed: Exception | None = None
            took: float | None = None
            began = time.perf_counter()
            try:
                await self.build(work)
                took = time.perf_counter() - began
                self.built_s.append(took)
            except Exception as exc:  # that object scores 0 rather than never
                self.failed[unbuilt] = failed = exc
            if self.on_built is not None:
                await self.on_built(took)
            if failed is not None:
                raise failed  # for the agent's log (the robot spawns it as optional)
        finally:
            self.building.pop(unbuilt, None)

    def warm(self) -> None:
        """Start the builds of every leaf's object whose shape is known (once per object
        and shape), so its grasp is ready by the time the robot weighs it."""
        world = self.world
        if world.arm is None:
            return
        if self._names is None:
            self._names = sorted({name for _, name in world.leaf_pairs(None) if name})
        for name in self._names:
            shape = world.objects.get(name)
            if shape is None:
                continue
            seen = (name, shape.kind, shape.dimensions, world.arm.base_position)
            if seen not in self._warmed:
                self._warmed.add(seen)
                self.ready(name, shape)

    async def builds_done(self) -> None:
        """Return once no build is under way (those started meanwhile included); a
        build that fails ends too. Waiting does not cancel them."""
        while self.building:
            await asyncio.wait(set(self.building.values()))

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
        """Score a started behaviour's grasp off the claims' path (GRASP_SCORE_DELAY_S);
        if its object's build is under way, once the builds under way have ended."""
        await asyncio.sleep(GRASP_SCORE_DELAY_S)
        await give_way_to_critical()
        while node in self.owed and not self.ready(*self.owed[node]):
            await self.builds_done()
        self.score_owed(node, log)

    def score_owed(self, node: str, log: Any) -> None:
        """Score the grasp owed for `node` (its object as it was at the start), if any
        and if its build is done (else ``score_later`` pays it once it is)."""
        owed = self.owed.get(node)
        if owed is None:
            return
        grasp = self.grasp(*owed)
        if grasp is None:
            return
        del self.owed[node]
        self.scores.setdefault(node, {})["grasp"] = grasp
        self._written.add(node)
        log.info("behaviour.grasp_scored", node=node, grasp=round(grasp, 1))

    def potentials(self, changed: set[str] | None = None) -> dict[str, float]:
        """Eq. 1 per leaf from the latest observation, for every leaf or (`changed`
        given) only the leaves of the objects whose view changed: an idle arm stands
        still, so the others keep theirs. Grasp scores are computed only under
        distance+grasp (they cost the most CPU); there a leaf whose grasp is not scored
        yet (its object's build is under way) has potential 0: it is not claimed."""
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
            if self.metric.use_grasp and grasp is None:
                potential = 0.0  # not scored yet: whatever the gate, not claimed
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
