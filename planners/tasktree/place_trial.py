"""A PLACE-tree mission of robots in the simulated world, run in one process (seed 000 §4).

What a ``teamtree run`` of a tea-party config does, without processes or a broker: the
world (``hardware.World``) times every PLACE from distances and arm speeds, each robot
runs a ``TaskController`` fed the potentials its agent would compute from the same
observation (eq. 1 over the gripper and the objects, grasp scores from the member's
``grasp_scorer`` seeded as the agent's, 0 for what it cannot reach), and the peer
messages go through a broker that delays each hop by a fixed time. Simulated time
only: a trial is deterministic for its inputs and takes well under a second (a few
seconds when it scores grasps), so the paper's scenario outcomes can be tested and
tabled without timing noise. Every robot reads one clock (simulated milliseconds, no skew), so the
claim stamps need no receive step.

Timing as the agents run it: each robot ticks and observes every ``time_factor /
tick_hz`` simulated seconds (the world agent's time factor over the robot's tick rate);
a message takes ``2 × hop_s × time_factor`` from sender to receiver. ``start`` offsets
a robot's first tick (process start-up differs from run to run).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teamtree.broker import SpecificationError
from teamtree.hardware.geometry import ShapePrimitive
from teamtree.hardware.profiles import arm_model, can_place, profile
from teamtree.hardware.world import World
from teamtree.planners.tasktree.grasp_scoring import grasp_scorer
from teamtree.planners.tasktree.metrics import (
    ActivationMetric,
    distance_score,
)
from teamtree.planners.tasktree.peer import TaskController
from teamtree.planners.tasktree.peer_messages import (
    BehaviourFinished,
    ClaimDecided,
    ClaimRule,
    EffectConfirmed,
    PotentialsChanged,
    PresenceChanged,
    PublishClaim,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    StartBehaviour,
    Tick,
)
from teamtree.planners.tasktree.tree import NodeKind, TaskTree

__all__ = ["Placement", "TrialMember", "TrialResult", "run_place_trial"]


@dataclass(frozen=True)
class TrialMember:
    """One robot's agent settings, as its ``[[agents]]`` entry gives them."""

    metric: str = "distance+grasp"
    w_d: float = 1.0
    w_g: float = 0.001
    seed: int = 0
    min_grasp: float = 1.0
    grasp_scorer: str = "primitive"
    """``"primitive"`` (``GraspScorer``) or ``"mesh"`` (``MeshGraspScorer``)."""


@dataclass(frozen=True)
class Placement:
    """One PLACE run to its end: who, which object, when (simulated s), and the
    robot's activation potential and grasp score for it when it started."""

    robot: str
    leaf: str
    object: str
    start: float
    end: float
    potential: float
    grasp: float


@dataclass
class TrialResult:
    """The placements in start order, the OR branches taken, the world's violations."""

    placements: list[Placement]
    or_branches: dict[str, str]
    completed: bool
    end_time: float
    violations: list[dict[str, Any]] = field(default_factory=list)
    claims: list[tuple[float, str, str, bool, dict[str, float]]] = field(default_factory=list)
    """(time, robot, leaf, won, the robot's non-zero potentials by object) per claim."""

    def placed(self) -> dict[str, list[str]]:
        """{robot: objects it placed, in order}."""
        out: dict[str, list[str]] = {}
        for p in self.placements:
            out.setdefault(p.robot, []).append(p.object)
        return out

    def placer(self, obj: str) -> str | None:
        """The robot that placed ``obj`` (None if nobody did)."""
        return next((p.robot for p in self.placements if p.object == obj), None)


class _Robot:
    def __init__(
        self,
        rid: str,
        member: TrialMember,
        ctl: TaskController,
        grasps: dict[tuple[Any, ...], float],
    ):
        self.rid = rid
        self.member = member
        self.metric = ActivationMetric.named(member.metric, w_d=member.w_d, w_g=member.w_g)
        self.ctl = ctl
        self.rng = np.random.default_rng(member.seed)
        self.scorer = grasp_scorer(member.grasp_scorer)
        self.grasps = grasps
        self.scores: dict[str, tuple[float, float]] = {}  # leaf -> (potential, grasp)
        self.command = 0
        # command id -> (leaf, start, (potential, grasp) at the start)
        self.running: dict[str, tuple[str, float, tuple[float, float]]] = {}
        self.seq = 0
        self.clock = (0, 0, rid)


class _Trial:
    def __init__(
        self,
        tree: TaskTree,
        world_spec: Mapping[str, Any],
        members: Mapping[str, TrialMember],
        *,
        time_factor: float,
        tick_hz: float,
        hop_s: float,
        start: Mapping[str, float],
        rule: ClaimRule | str,
        time_limit: float,
        grasp_cache: dict[str, dict[tuple[Any, ...], float]],
        grasp_table: Mapping[str, Mapping[str, float]],
    ):
        self.tree = tree
        self.table = grasp_table
        if not isinstance(world_spec, Mapping) or not {"objects", "robots"} <= set(world_spec):
            raise SpecificationError(
                "world spec: expected a map with 'objects' and 'robots', as the world "
                "agent's [[agents]] entry has them"
            )
        unknown = sorted(set(members) - set(world_spec["robots"]))
        if unknown:
            raise SpecificationError(
                f"robot {unknown[0]!r} has no body in the world spec; add it under "
                f"'robots' (known: {', '.join(sorted(world_spec['robots'])) or 'none'})"
            )
        self.world = World.from_spec(world_spec["objects"], world_spec["robots"])
        self.specs = {r: profile(s.get("profile", r)) for r, s in world_spec["robots"].items()}
        self.tick = time_factor / tick_hz
        self.hop = hop_s * time_factor
        self.limit = time_limit
        self.heap: list[tuple[float, int, str, Any]] = []
        self.n = 0
        self.t = 0.0
        self.leaf_objects = [(leaf, tree[leaf].param_dict.get("object")) for leaf in tree.leaves]
        self.placements: list[Placement] = []
        self.claims: list[tuple[float, str, str, bool, dict[str, float]]] = []
        self.robots: dict[str, _Robot] = {}
        ids = sorted(members)
        for rid in ids:
            ctl = TaskController(
                tree, rid, online_peers=set(ids) - {rid}, rule=rule, default_potential=0.0
            )
            cache = grasp_cache.setdefault(rid, {})
            self.robots[rid] = _Robot(rid, members[rid], ctl, cache)
        for rid in ids:
            self.push(float(start.get(rid, 0.0)) * time_factor, "tick", rid)

    def push(self, t: float, kind: str, payload: Any) -> None:
        self.n += 1
        heapq.heappush(self.heap, (t, self.n, kind, payload))

    def stamp(self, r: _Robot) -> tuple[int, int, str]:
        wall = int(self.t * 1000)
        w, c, _ = r.clock
        r.clock = (wall, 0, r.rid) if wall > w else (w, c + 1, r.rid)
        return r.clock

    def feed(self, r: _Robot, event: Any) -> None:
        for a in r.ctl.handle(event, self.stamp(r)):
            match a:
                case PublishClaim(claim=c, to=to):
                    self.send(r.rid, c, to)
                case PublishReply(reply=rep):
                    self.send(r.rid, rep, rep.claimant)
                case PublishTransition(transition=msg) | PublishSnapshot(snapshot=msg):
                    self.send(r.rid, msg, None)
                case StartBehaviour(node=node):
                    self.push(self.t + self.hop, "execute", (r.rid, node))
                case ClaimDecided(claim=c, won=won):
                    pots = {self.tree[n].param_dict.get("object", n): round(v, 4)
                            for n, v in r.ctl.potentials.items() if v > 0}  # fmt: skip
                    self.claims.append((round(self.t, 3), r.rid, c.node, won, pots))

    def send(self, sender: str, msg: Any, to: str | None) -> None:
        for q in [to] if to is not None else sorted(set(self.robots) - {sender}):
            self.push(self.t + 2 * self.hop, "deliver", (q, msg))

    def observe(self, r: _Robot) -> None:
        """What the agent does with one observation: finished commands, effects seen,
        potentials (``GraspTracker.potentials``, agents/tasktree/grasp_tracker.py)."""
        for ev in self.world.events_since(r.seq, r.rid):
            r.seq = max(r.seq, ev["seq"])
            if ev["kind"] not in ("finished", "failed"):
                continue
            run = r.running.pop(ev["command_id"], None)
            if run is None:
                continue
            leaf, started, (pot, grasp) = run
            obj = self.tree[leaf].param_dict.get("object")
            if ev["ok"]:
                self.placements.append(
                    Placement(r.rid, leaf, str(obj), started, ev["t"], pot, grasp)
                )
            self.feed(r, BehaviourFinished(leaf, bool(ev["ok"])))
        view = self.world.observe(r.rid, self.t)
        robot = view["robot"]
        arm_pos = tuple(robot["arm"])
        base = (*robot["base"], robot["yaw"])
        arm = arm_model(self.specs[r.rid], base[:3], yaw=base[3])
        potentials: dict[str, float] = {}
        for leaf, name in self.leaf_objects:
            obj = view["objects"].get(name)
            if obj is None:
                potentials[leaf] = 0.0
                continue
            if obj["at_goal"] and leaf not in r.ctl.done:
                self.feed(r, EffectConfirmed(leaf))
            if obj["at_goal"] or obj["held_by"] not in (None, r.rid):
                potentials[leaf] = 0.0
                continue
            shape = ShapePrimitive(obj["shape"], tuple(obj["dims"]), tuple(obj["position"]),
                                   float(obj["yaw"]))  # fmt: skip
            grasp = None
            if r.metric.use_grasp:
                key = (name, shape.position, shape.yaw, arm.base_position)
                fixed = self.table.get(r.rid, {}).get(name)
                if fixed is not None:
                    grasp = float(fixed)
                else:
                    if key not in r.grasps:
                        r.grasps[key] = r.scorer.score(shape, arm, r.rng, name=name).score
                    grasp = r.grasps[key]
                grasp = 0.0 if grasp < r.member.min_grasp else grasp
            pot = r.metric.from_distance_score(
                distance_score(shape.position, arm_pos), grasp or 0.0
            )
            goal = obj["goal"]
            if goal is not None and not can_place(
                self.specs[r.rid], base[:3], base[3], shape.position, goal
            ):
                pot = 0.0
            potentials[leaf] = pot
            r.scores[leaf] = (pot, grasp or 0.0)
        self.feed(r, PotentialsChanged(potentials))

    def run(self) -> TrialResult:
        for r in self.robots.values():
            for q in self.robots:
                if q != r.rid:
                    self.feed(r, PresenceChanged(q, True))
        while self.heap:
            t, _, kind, payload = heapq.heappop(self.heap)
            if t > self.limit:
                break
            self.t = t
            self.world.advance(t)
            if kind == "tick":
                r = self.robots[payload]
                self.observe(r)
                if r.ctl.mission_done and not r.running:
                    continue
                self.feed(r, Tick())
                self.push(t + self.tick, "tick", payload)
            elif kind == "deliver":
                q, msg = payload
                self.feed(self.robots[q], msg)
            elif kind == "execute":
                rid, leaf = payload
                r = self.robots[rid]
                r.command += 1
                cid = f"{rid}-{r.command}"
                r.running[cid] = (leaf, t, r.scores.get(leaf, (0.0, 0.0)))
                params = dict(self.tree[leaf].param_dict)
                reply = self.world.execute(rid, cid, leaf, self.tree[leaf].behavior, params, t)
                if not reply["ok"]:
                    r.running.pop(cid, None)
                    self.feed(r, BehaviourFinished(leaf, False))
        return TrialResult(
            placements=sorted(self.placements, key=lambda p: (p.start, p.robot)),
            or_branches=self._or_branches(),
            completed=all(r.ctl.mission_done for r in self.robots.values()),
            end_time=max((p.end for p in self.placements), default=0.0),
            violations=list(self.world.violations),
            claims=self.claims,
        )

    def _or_branches(self) -> dict[str, str]:
        placed = {p.leaf for p in self.placements}
        out = {}
        for node in self.tree:
            if node.kind is NodeKind.OR:
                for child in node.children:
                    if any(leaf in placed for leaf in self.tree.leaf_ids(child.id)):
                        out[node.id] = str(child.param_dict.get("object", child.label))
        return out


def run_place_trial(
    tree: TaskTree,
    world_spec: Mapping[str, Any],
    members: Mapping[str, TrialMember],
    *,
    time_factor: float = 8.0,
    tick_hz: float = 20.0,
    hop_s: float = 0.002,
    start: Mapping[str, float] | None = None,
    rule: ClaimRule | str = ClaimRule.EARLIEST,
    time_limit: float = 3600.0,
    grasp_cache: dict[str, dict[tuple[Any, ...], float]] | None = None,
    grasp_table: Mapping[str, Mapping[str, float]] | None = None,
) -> TrialResult:
    """Run one mission of ``members`` (robot id → settings) over ``tree`` in the world
    ``world_spec`` (``{"objects": ..., "robots": ...}`` as the world agent's config has
    them); deterministic. ``start``: each robot's start-up delay in wall seconds (by
    default the robots in id order start half a tick apart, as unsynchronised ticks
    do). ``grasp_cache``: robot → scores by (object, pose, arm base), shared by the
    trials of a sweep so each pose is scored once (the agent scores each once too).
    ``grasp_table``: robot → object → a fixed grasp score used instead of the scorer
    (e.g. the paper's Tables 1 and 2, to tell the scores' part in an outcome from the
    rest); objects it leaves out are scored.
    Raises SpecificationError for a bad world spec."""
    if start is None:
        start = {rid: i * 0.5 / tick_hz for i, rid in enumerate(sorted(members))}
    trial = _Trial(
        tree,
        world_spec,
        members,
        time_factor=time_factor,
        tick_hz=tick_hz,
        hop_s=hop_s,
        start=start,
        rule=rule,
        time_limit=time_limit,
        grasp_cache={} if grasp_cache is None else grasp_cache,
        grasp_table=grasp_table or {},
    )
    return trial.run()
