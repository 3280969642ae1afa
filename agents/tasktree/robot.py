"""The robot agent: its own copy of the team's task tree, coordinated with peers over
the broker by the peer rule, acting through its driver (seed 000 §2.2-2.4, §3).

The planner (``TaskController``) decides; this class feeds it facts (messages,
presence, observations turned into activation potentials) and carries out its actions
through the parts it holds, one concept each:

- ``WorldView`` (world_view.py): the arm, the objects and which leaves the world
  shows done or undone, from the driver's observations;
- ``GraspTracker`` (grasp_tracker.py): each leaf's potential and grasp score; a
  scorer's one-off build per object model (the mesh scorer's) runs in a worker thread,
  and under ``distance+grasp`` the robot waits for the builds of the objects in view
  before its first claims and claims no leaf whose grasp is not scored yet;
- ``DriverLink`` (driver_link.py): the commands to the driver, their leases, the
  driver's progress and the failures nobody reports;
- ``HumanTeammates`` (human_teammates.py): the human models and the dialogs;
- ``PeerOutbox`` (peer_outbox.py): the peer rule's messages to the peers;
- ``SnapshotPublisher`` (snapshot_publisher.py) and ``StallCheck`` (stall_check.py).

Wire: docs/protocol.md, "Task trees"; each part's module names the messages it
sends; the agent itself sends ``<me>/state`` ``node.transition``, ``_/mission``
``mission.tree`` (retained) and ``<me>/scores`` ``node.grasp_scores`` (retained).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.observation_wire import ObservationWireError, decode_observation
from teamtree.agents.runtime.params import decode_params
from teamtree.agents.runtime.team_view import Presence
from teamtree.agents.tasktree.driver_link import DriverLink
from teamtree.agents.tasktree.grasp_tracker import GraspTracker
from teamtree.agents.tasktree.human_teammates import HumanTeammates
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.peer_outbox import (
    CLAIM_REPLY,
    CLAIMS,
    INTEREST,
    INTEREST_ACK,
    INTEREST_ACKS,
    POTENTIALS,
    PeerOutbox,
)
from teamtree.agents.tasktree.snapshot_publisher import SNAPSHOT, SnapshotPublisher
from teamtree.agents.tasktree.stall_check import StallCheck
from teamtree.agents.tasktree.world_view import WorldView
from teamtree.agents.treeprotocol.mission_config import mission_tree
from teamtree.agents.treeprotocol.peer_member import PeerRuleMember
from teamtree.agents.treeprotocol.peer_wire import transition_to_wire
from teamtree.broker import ConfigError, SpecificationError, TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.lazy import lazy_module
from teamtree.broker.topics import Topic
from teamtree.planners.tasktree import (
    AbortBehaviour,
    ActivationMetric,
    EffectUndone,
    NodeStatus,
    PauseBehaviour,
    PotentialsChanged,
    PresenceChanged,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    StartBehaviour,
    TaskController,
    TaskTree,
    Tick,
    render_unicode,
)

if TYPE_CHECKING:
    from teamtree.agents.treeprotocol import mission_wire
else:
    # the tree's wire codec, for the mission.tree the robot publishes after ONLINE
    mission_wire = lazy_module("teamtree.agents.treeprotocol.mission_wire")

STATE = "state"
MISSION = "mission"
HUMAN_KIND = "human"
CLAIM_RESEND_S = 20.0
"""Base seconds before a claim still missing replies is asked again of the silent
peers (then jittered and doubled, ``ContentionAvoider.resend_after``). Claims and
replies go at QoS 1 over sessions that outlive a reconnect, so a connected peer gets
the claim however slow it is; it is lost only with a session, and a peer that lost
its session announces itself ONLINE again and is asked at once. A timed resend is the
last resort, and asking a busy peer again only makes it busier: under load, most
replies are merely late, and resends become most of the traffic."""


class RobotAgent(PeerRuleMember):
    """A robot that shares a THEN/AND/OR task with its peers (see module docstring).

    ``params``: its ``[[agents]]`` keys (``RobotParams``, docs/config.md), kept whole.
    From the config besides: ``tree`` (the mission's), ``expect_peers`` (the config's
    other robots, waited for ``start_timeout_s``), ``humans`` (human id -> hand name:
    every ``human`` agent of the config and the ``humans`` key's ids) and ``roster``
    (the members and humans, the only ones that speak for the tree).
    """

    kind = "robot"
    overridable: ClassVar[frozenset[str]] = frozenset({"metric"})
    optional_tasks: ClassVar[frozenset[str]] = frozenset({"snapshot", "grasp", "dialog"})

    def __init__(
        self,
        *args: Any,
        tree: TaskTree,
        params: RobotParams,
        expect_peers: list[str] | None = None,
        humans: dict[str, str] | None = None,
        roster: list[str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.params = params
        self.tree = tree
        self.driver = params.driver
        if roster is not None:
            self.roster = frozenset(roster) | {self.id}
        self.expect_peers = sorted(set(expect_peers or []) - {self.id})
        self.controller: TaskController | None = None
        self.executed: list[dict[str, Any]] = []
        self.metric = ActivationMetric.named(params.metric, w_d=params.w_d, w_g=params.w_g)
        self.world = WorldView(tree, self.id, params.profile)
        self.grasps = GraspTracker(
            self.world,
            self.metric,
            params.min_grasp,
            params.seed,
            params.grasp_scorer,
            spawn=lambda coro: self.spawn(coro, "grasp"),
        )
        self.grasps.on_built = self._on_grasps_built
        self.link = DriverLink(
            self, params.driver, params.lease(), self.world, params.service_timeout_s
        )
        self.teammates = HumanTeammates(self, humans or {}, params.dialog_timeout_s)
        self.outbox = PeerOutbox(self, self.teammates)
        self.snapshots = SnapshotPublisher(self)
        self.stall = StallCheck(self, params.stall_timeout_s)
        self._stale_potentials = False  # not computed while working: feed() does it after
        self._backlog: list[Any] = []  # events before the mission's start
        self._mission_done = asyncio.Event()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the robot's keys and read the mission tree. Raises ConfigError."""
        params = decode_params(spec, config, RobotParams, driver=f"{spec.id}-driver")
        try:
            params.lease()
        except ValueError as exc:
            index = config.agents.index(spec)
            raise ConfigError(
                str(exc), path=str(config.path), key=f"agents[{index}].lease_renew_s"
            ) from None
        humans = {
            a.id: str(a.params.get("hand", a.id)) for a in config.agents if a.kind == HUMAN_KIND
        }
        for h in params.humans:
            humans.setdefault(h, h)
        return {
            "tree": mission_tree(config),
            "params": params,
            "expect_peers": [m.id for m in config.members if m.kind == cls.kind],
            "humans": humans,
            "roster": sorted({m.id for m in config.members} | set(humans)),
        }

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "profile": self.params.profile,
            "driver": self.driver,
            "metric": self.params.metric,
            "humans": sorted(self.teammates.humans),
        }

    # -- wiring ------------------------------------------------------------------

    async def setup(self) -> None:
        self.subscribe_peer_rule(
            claims=CLAIMS, replies=CLAIM_REPLY, transitions=STATE, snapshots=SNAPSHOT
        )
        if self.params.avoid_contention:
            self.subscribe_potentials(POTENTIALS, tuple(self.tree.leaves))
        # without declared interest too: a peer that declares its interest (a mixed
        # team, an attached robot) waits for this robot's acknowledgement before it
        # claims, and the controller gives it, as a robot that may claim any leaf
        self.subscribe_interest(INTEREST, INTEREST_ACK, INTEREST_ACKS)
        self.on_agent(
            self.driver, "observation", self._on_observation, kind="observation", latest=True
        )
        self.on_agent(self.driver, "progress", self.link.on_progress)

    def _now(self) -> tuple[int, int, str]:
        stamp = self.clock.now()
        return (stamp.wall_ms, stamp.logical, stamp.node)

    async def feed(self, event: Any) -> None:
        """Hand one event to the controller and carry out its actions."""
        c = self.controller
        if c is None:
            if not isinstance(event, PotentialsChanged):  # potentials are recomputed
                self._backlog.append(event)
            return
        if self._stale_potentials and self._reads_potentials() and self.grasps.load_numpy().done():
            self._stale_potentials = False  # the latest, before it selects
            c.handle(PotentialsChanged(self.grasps.potentials()), self._now())
        now = self._now()  # after the potentials: a claim's stamp is when it is made
        for action in c.handle(event, now):
            await self._act(action)
        local = self.teammates.local
        while local:  # replies the human models give to our claims
            await self.feed(local.pop(0))
        if self.controller.mission_done and self.controller.my_working is None:
            self._mission_done.set()

    def _reads_potentials(self) -> bool:
        """Whether the controller may read potentials now: when it can take more work
        (it selects and claims by them) or is paused (its re-claim carries one). While
        it works at capacity it reads none, so new ones wait (``_on_observation``):
        handing them over would only make it spread activation again."""
        c = self.controller
        return c is not None and (len(c.mine) < c.capacity or c.paused)

    async def _act(self, action: Any) -> None:
        if await self.outbox.send(action):
            return
        match action:
            case PublishTransition(transition=t):
                if t.node in self.grasps.owed and t.status is not NodeStatus.WORKING:
                    self.grasps.score_owed(t.node, self.log)  # the behaviour ended first
                score = self.grasps.scores.get(t.node, {})
                body = transition_to_wire(t, score.get("potential"), score.get("grasp"))
                await self.publish(STATE, "node.transition", body)
            case PublishSnapshot(snapshot=snap):
                await self.snapshots.throttled(snap)
            case StartBehaviour(node=node):
                await self._command("behaviour.execute", node)
            case PauseBehaviour(node=node):
                await self._command("behaviour.pause", node)
            case ResumeBehaviour(node=node):
                await self._command("behaviour.resume", node)
                await self._command("behaviour.renew", node)  # with the new token
            case AbortBehaviour(node=node, reason=reason):
                self.log.warning("behaviour.aborted", node=node, reason=reason)
                await self._command("behaviour.cancel", node)

    async def _command(self, kind: str, node: str) -> None:
        """Send the driver `kind` about `node`; an execute's grasp is scored (or owed)."""
        if kind == "behaviour.execute":
            score, owed = self.grasps.started(node)
            if owed:
                self.spawn(self.grasps.score_later(node, self.log), "grasp")
            grasp = score.get("grasp")
            self.log.info(
                "behaviour.started",
                node=node,
                label=self.tree[node].label,
                potential=round(score.get("potential", 0.0), 4),
                grasp=None if grasp is None else round(grasp, 1),
            )
        await self.link.command(kind, node)

    # -- inbound -----------------------------------------------------------------

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        self.link.on_presence(agent_id, new, self.team_view)
        await super().on_presence(agent_id, old, new)

    async def publish_controller_snapshot(self) -> None:
        await self.snapshots.publish_latest()

    async def _on_observation(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.driver:
            return
        world = self.world
        try:
            obs = decode_observation(env.body)
            objects = world.merge(obs)
            if objects is None:
                return  # deltas before any keyframe: the next one comes within a second
            names = None if obs.full else list(obs.objects)  # what a delta carries
            obs = msgspec.structs.replace(obs, objects=objects, full=True)
            seen, moved = world.absorb(obs, names)
            changed = None if moved else seen  # potentials: the arm's motion moves them all
            if names is None:
                seen = None  # a keyframe: every leaf is looked at for an object at its goal
            updates = self.teammates.observe(obs)
        except ObservationWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        except (ValueError, SpecificationError) as exc:  # typed, but not a shape or pose
            self._drop("malformed", str(topic), env.sender, f"bad observation body: {exc}")
            return
        c = self.controller
        for event in () if c is None else world.events(obs, c, seen, keyframe=names is None):
            if isinstance(event, EffectUndone):
                self.log.warning("node.undone", node=event.node, label=self.tree[event.node].label)
            await self.feed(event)
        await self.link.release_failures(observed=True)
        await self.link.check_body(obs)
        self.grasps.warm()  # new objects' grasp builds start now, off the loop
        await self._update_potentials(changed)
        for human, update in updates:
            await self.teammates.apply(human, update)
        await self._publish_grasps()

    async def _update_potentials(self, changed: set[str] | None) -> None:
        """Recompute the potentials of the leaves of the `changed` objects (None: all)
        and hand them to the controller, or mark them stale while it reads none."""
        c = self.controller
        if not self.grasps.load_numpy().done() or (c is not None and not self._reads_potentials()):
            self._stale_potentials = True  # computed by feed() once it reads them again
        else:
            potentials = self.grasps.potentials(None if self._stale_potentials else changed)
            self._stale_potentials = False
            if potentials or changed is None:
                await self.feed(PotentialsChanged(potentials))

    async def _publish_grasps(self) -> None:
        grasps = self.grasps.grasps_to_publish()
        if grasps is not None:
            await self.publish("scores", "node.grasp_scores", {"grasp": grasps}, retain=True)

    async def _on_grasps_built(self, seconds: float | None) -> None:
        """An object's grasp build ended (`seconds`: how long it took; None when it
        failed, which is logged apart): its leaves' grasps can be scored now, so the
        potentials (under distance+grasp, 0 for them until now) are recomputed."""
        if seconds is not None:
            builds = len(self.grasps.built_s)
            self.log.info("grasp.built", builds=builds, seconds=round(seconds, 2))
        if self.world.arm is None:
            return
        await self._update_potentials(None)
        await self._publish_grasps()

    async def on_stop(self) -> None:
        if self.snapshots.owed:  # stopped within an interval: the last state, not stale
            with contextlib.suppress(TeamtreeError):
                await self.publish_controller_snapshot()
        await super().on_stop()

    # -- the mission -------------------------------------------------------------

    async def on_tick(self) -> None:
        if self.controller is not None and not self._mission_done.is_set():
            await self.feed(Tick())
            await self.link.release_failures(observed=False)
            await self.link.renew_leases()
            await self.link.check_driver()
            self.stall.check()

    async def main(self) -> None:
        await self.wait_connected()
        await self.wait_synced()  # on a cluster: the team's state before any claim
        body = mission_wire.mission_tree_body(self.tree)
        await self.publish(MISSION, "mission.tree", body, team=True, retain=True)
        p, humans = self.params, self.teammates.humans
        loop = asyncio.get_running_loop()
        deadline = loop.time() + p.start_timeout_s
        await asyncio.sleep(0.3)  # retained presence and snapshots arrive first
        while not set(self.expect_peers) <= self.peer_rule_peers() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        await self.grasps.load_numpy()
        if self.metric.use_grasp:  # the first claims weigh every object in view
            self.grasps.warm()
            if self.grasps.building:
                self.log.info("grasp.building", builds=len(self.grasps.building))
                await self.grasps.builds_done()
        peers = self.peer_rule_peers()
        missing = sorted(set(self.expect_peers) - peers)
        if missing:
            self.log.warning("team.incomplete", missing=missing, online=sorted(peers))
        lease = self.link.lease
        self.controller = c = TaskController(
            self.tree,
            self.id,
            online_peers=peers,
            await_snapshots=True,
            rule=p.rule,
            default_potential=0.0,
            takeover_ms=lease.takeover_ms,
            wait_clock=_monotonic_ms,  # a takeover wait no stamp from a skewed clock cuts
            avoid_contention=p.avoid_contention,
            declared_interest=p.declared_interest,
            interest_prefetch=p.interest_prefetch,
            resend_ticks=max(1, round(CLAIM_RESEND_S * self.runtime.tick_hz)),
            seed=f"{p.seed}:{self.id}",
            # a peer's word may be forged: a release waits for the holder's lease, and
            # done comes only from the world (the people's models are this robot's own)
            release_hold_ms=lease.takeover_ms,
            released_at_once=set(humans),
            evidence_leaves=self.world.evidence_leaves(),
        )
        if c.avoider is not None:
            c.avoider.silent = set(humans)  # they publish no potentials
        self.log.info("mission.started", peers=sorted(peers), metric=p.metric)
        await self.snapshots.publish(c.snapshot(self._now()))
        await self.feed(PotentialsChanged(self.grasps.potentials()))
        backlog, self._backlog = self._backlog, []
        for event in backlog:
            await self.feed(event)
        for member in peers:
            await self.feed(PresenceChanged(member, True))
        for human in humans:  # peers whose replies the models give
            await self.feed(PresenceChanged(human, True))
            await self.teammates.reconcile(human)
        await self._mission_done.wait()
        await self.snapshots.publish(c.snapshot(self._now()))
        done = [self.tree[e["node"]].label for e in self.executed if e["ok"]]
        self.log.info(
            "mission.done",
            executed=done,
            peer_done_unconfirmed=c.trust.unconfirmed,
            future_stamps_refused=c.reports.refused_future,
        )
        self.log.info("tree.final", tree="\n" + render_unicode(self.tree, c.statuses()))


def _monotonic_ms() -> int:
    """This process's monotonic clock in ms: what a takeover wait is measured on."""
    return int(time.monotonic() * 1000)
