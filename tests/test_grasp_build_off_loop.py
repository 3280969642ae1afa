"""A grasp scorer's one-off build per object model (the mesh scorer's candidates, seconds
of CPU) runs off the robot's event loop: while it is pending the loop goes on, the
object's grasp is not scored (``None``) and, under distance+grasp, its leaves are not
claimed; once it ends the grasps are scored and the robot claims. The builds here are
held by gates the tests open, so nothing depends on how long a build takes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import structlog

import teamtree.planners.tasktree.grasp_mesh as grasp_mesh
from teamtree.agents.tasktree.grasp_tracker import GraspTracker, build_in_thread
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, decode
from teamtree.hardware.geometry import ArmModel, ShapePrimitive
from teamtree.planners.tasktree import (
    ActivationMetric,
    GraspResult,
    MeshGraspScorer,
    TaskController,
    Tick,
    grasp_scorer,
)
from tests.robot_in_process import TEAM, TREE, observation
from tests.test_grasp_tracker import CUP, TEA, _world


class GatedScorer:
    """A ``GraspScoring`` whose build of each object waits for `gate` (set by the test)
    and notes the thread it ran in; it scores 50 once built."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.built: set[str | None] = set()
        self.threads: set[int] = set()

    def unbuilt(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> Any:
        return None if name in self.built else ("model", name)

    def build(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> None:
        self.threads.add(threading.get_ident())
        self.started.set()
        self.gate.wait()
        self.built.add(name)

    def score(
        self, shape: ShapePrimitive, arm: ArmModel, rng: Any, name: str | None = None
    ) -> GraspResult:
        assert name in self.built, "scored before its build"
        return GraspResult(50.0, None, "ok", 1)


async def _loop_turns() -> None:
    """Another task of the loop runs to its end (a callback set an event it waits on)."""
    done = asyncio.Event()
    asyncio.get_running_loop().call_soon(done.set)
    await done.wait()


def _tracked(scorer: GatedScorer) -> tuple[GraspTracker, list[float | None]]:
    """A distance+grasp tracker on `scorer`, and the list its ``on_built`` fills with
    each build's seconds (None for a failed build)."""
    metric = ActivationMetric.named("distance+grasp")
    tracker = GraspTracker(_world(), metric, 1.0, seed=7, scorer=scorer)
    built: list[float | None] = []

    async def on_built(seconds: float | None) -> None:
        built.append(seconds)

    tracker.on_built = on_built
    return tracker, built


def test_a_pending_build_leaves_the_grasp_unscored_and_the_loop_running() -> None:
    async def run() -> None:
        scorer = GatedScorer()
        tracker, built = _tracked(scorer)
        assert tracker.potentials() == {CUP: 0.0, TEA: 0.0}  # not scored: not claimed
        assert tracker.scores[CUP]["grasp"] is None and tracker.scores[TEA]["grasp"] is None
        assert set(tracker.building) == {("model", "cup"), ("model", "tea")}
        await asyncio.to_thread(scorer.started.wait)  # the cup's build is under way
        for _ in range(3):
            await _loop_turns()  # the loop runs other tasks meanwhile
            assert tracker.potentials() == {CUP: 0.0, TEA: 0.0} and not built
        assert tracker.grasps_to_publish() is None  # nothing scored to publish
        assert threading.get_ident() not in scorer.threads  # not on the loop's thread
        scorer.gate.set()
        await tracker.builds_done()
        assert len(built) == 2 and all(s is not None and s >= 0 for s in built)
        assert not tracker.building and built == tracker.built_s
        potentials = tracker.potentials()
        assert all(p > 0 for p in potentials.values()) and set(potentials) == {CUP, TEA}
        assert tracker.scores[CUP]["grasp"] == 50.0
        assert tracker.grasps_to_publish() == {CUP: 50.0, TEA: 50.0}

    asyncio.run(run())


class BrokenScorer(GatedScorer):
    """A build that fails (a mesh library error, say), once the gate opens."""

    def build(self, shape: ShapePrimitive, arm: ArmModel, name: str | None = None) -> None:
        self.gate.wait()
        raise RuntimeError(f"no model of {name}")


def test_a_failed_build_is_reported_without_seconds_and_its_object_scores_0() -> None:
    async def run() -> None:
        scorer = BrokenScorer()
        scorer.gate.set()
        tracker, built = _tracked(scorer)
        assert tracker.potentials() == {CUP: 0.0, TEA: 0.0}  # builds started
        tasks = list(tracker.building.values())
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert [type(r) for r in results] == [RuntimeError, RuntimeError]
        assert built == [None, None] and tracker.built_s == [] and not tracker.building
        assert tracker.potentials() == {CUP: 0.0, TEA: 0.0}  # no grasp: not claimed

    asyncio.run(run())


def test_under_distance_alone_an_owed_grasp_waits_for_its_build() -> None:
    async def run() -> None:
        scorer = GatedScorer()
        tracker = GraspTracker(_world(), ActivationMetric.named("distance"), 1.0, 7, scorer)
        assert all(p > 0 for p in tracker.potentials().values())  # distance alone
        tracker.warm()  # the builds start as soon as the shapes are known
        assert set(tracker.building) == {("model", "cup"), ("model", "tea")}
        score, owed = tracker.started(CUP)
        assert owed and score["grasp"] is None
        log = structlog.get_logger("test")
        tracker.score_owed(CUP, log)  # the behaviour ended while the build is pending
        assert CUP in tracker.owed and tracker.scores[CUP]["grasp"] is None
        later = asyncio.ensure_future(tracker.score_later(CUP, log))
        await _loop_turns()
        assert not later.done()
        scorer.gate.set()
        await later
        assert CUP not in tracker.owed and tracker.scores[CUP]["grasp"] == 50.0

    asyncio.run(run())


def test_both_scorers_share_one_calling_convention() -> None:
    world = _world()
    assert world.arm is not None
    cup = world.objects["cup"]
    for kind in ("primitive", "mesh"):
        scorer = grasp_scorer(kind)
        scorer.build(cup, world.arm, "cup")
        assert scorer.unbuilt(cup, world.arm, "cup") is None
        result = scorer.score(cup, world.arm, np.random.default_rng(1), name="cup")
        assert 0.0 <= result.score <= 100.0
    assert isinstance(grasp_scorer("mesh"), MeshGraspScorer)


def _transitions(robot: RobotAgent) -> list[dict[str, Any]]:
    return [decode(m.payload).body for m in robot.connection._outbox if m.topic.endswith("/state")]


def test_a_mesh_robot_claims_once_its_models_are_built_and_not_before() -> None:
    """The real mesh scorer's builds for the cup and the tea, held until the test lets
    them run (in the build thread): the robot handles ticks and observations and
    claims nothing meanwhile; after them it claims, and its grasp is the fresh score."""
    grasp_mesh._FILTERED.clear()  # built by no earlier test: the gate holds them
    grasp_mesh.grasp_candidates.cache_clear()

    async def run() -> None:
        robot = RobotAgent(
            "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE,
            roster=["pr2", "baxter"],
            params=RobotParams(profile="pr2", driver="pr2-driver", metric="distance+grasp",
                               grasp_scorer="mesh"),
        )  # fmt: skip
        gate = asyncio.Event()
        held: list[Callable[[], None]] = []

        async def gated(work: Callable[[], None]) -> None:
            held.append(work)
            await gate.wait()
            await build_in_thread(work)

        robot.grasps.build = gated
        await robot.setup()
        await robot.grasps.load_numpy()
        robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
        await robot.receiver.receive(observation(None, 1))  # the arm and both objects
        await _loop_turns()
        assert len(robot.grasps.building) == 2 and len(held) == 2
        for hid in (2, 3):
            await robot.feed(Tick())
            await robot.receiver.receive(observation(None, hid))
            await _loop_turns()
        assert robot.controller.my_working is None and not _transitions(robot)
        assert all(s["grasp"] is None for s in robot.grasps.scores.values())
        assert robot.controller.potentials == {n: 0.0 for n in TREE.leaves}
        gate.set()
        await robot.grasps.builds_done()  # and the potentials recomputed after them
        await robot.feed(Tick())  # no peer online: the claim is won at once
        node = robot.controller.my_working
        assert node is not None
        working = [t for t in _transitions(robot) if t["status"] == "working"]
        name = TREE[node].param_dict["object"]
        shape = robot.world.objects[name]
        fresh = MeshGraspScorer().score(shape, robot.world.arm, None, name=name).score
        assert working[0]["grasp"] is not None and working[0]["grasp"] == fresh

    asyncio.run(run())
