"""The robot agent: its own copy of the team's task tree, coordinated with peers over
the broker by the peer rule, acting through its driver (seed 000 §2.2-2.4, §3).

Wire (see docs/protocol.md, "Task trees"):

- ``_/claims``           ``node.claim``        a claim, to every peer (without declared interest)
- ``<me>/claims/<peer>`` ``node.claim``        a claim to one peer: with declared interest
  (the default) to each peer whose declaration meets it; also a claim asked again
- ``<me>/potentials``    ``node.potentials``   retained, QoS 0: eq. 1 of its best open
  leaves, for the team's contention avoidance (``avoid_contention``,
  planners/tasktree/contention.py)
- ``<me>/claim_reply/<claimant>`` ``node.claim_reply``
- ``_/interest`` (``<me>/interest/<peer>``) ``node.interest``, ``<me>/interest_ack/<declarer>``
  ``node.interest_ack``: with ``declared_interest``, the leaves this robot may claim and
  the peers' acknowledgements (planners/tasktree/interest.py)
- ``<me>/state``         ``node.transition``   working / done / inactive (released)
- ``<me>/snapshot``      ``node.snapshot``     retained: what this robot knows
- ``_/mission``          ``mission.tree``      retained: the tree with stable node ids
- ``<me>/scores``        ``node.grasp_scores`` retained: this robot's grasp score per leaf
- ``<me>/events``        ``node.claim_decided`` each claim won or lost, why, and how
  long it took (``elapsed_ms``, from its first publish; absent if it was never published)
- ``<me>/command/<driver>`` ``behaviour.execute|cancel|pause|resume|renew``: execute
  carries a lease (``lease_ms`` deadline with ``sent_ms`` and ``clock``, so the body
  reads it on its own clock; ``token`` = the stamp the node was won at, for the
  record), renewed every ``lease_renew_s`` (QoS 0, never queued) while the robot holds
  the node; the body stops by itself when it lapses. Peers take a node over only
  ``lease_s + lease_margin_s`` after its holder's Last Will (docs/protocol.md "Leases").
- from the driver: ``<driver>/observation`` and ``<driver>/progress``
- humans (seed 000 §2.3, Figs. 4-6; docs/humans.md): ``_/dialog`` ``dialog.ask``
  (request to one human, answered ``dialog.answer``), ``<me>/dialog``
  ``dialog.resolved``, ``<me>/belief/<human>`` ``tom.belief`` (retained)

The planner (``TaskController``) decides; this class only feeds it facts (messages,
presence, observations turned into activation potentials) and carries out its actions.

Humans. For each human teammate the robot keeps a ``HumanModel`` (a simulated
controller) updated only from the hand tracks in its driver's observations. In the
``TaskController`` a human is a peer whose claim replies the robot answers itself,
from the model ("peer checks against the model"): a leaf active in the model is
reported ``working`` by the human, so a robot checking it concedes (Fig. 5 step 2).
A leaf that becomes active in the model while this robot works on it is a conflict:
the robot pauses and asks the human over the dialog channel (Fig. 5 step 5). "continue"
(or no answer by the deadline): the robot cancels, lowers the leaf's activation and
picks another (Fig. 5 steps 6-8). "concede": the robot resumes (Fig. 6) and the model
no longer activates that leaf for the human.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from teamtree.agents.runtime.behaviour_wire import (
    BehaviourWireError,
    CommandRef,
    ExecuteCommand,
    RenewCommand,
    decode_progress,
    to_wire,
)
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.runtime.observation_wire import (
    ObjectView,
    ObservationBody,
    ObservationWireError,
    decode_observation,
    merge_objects,
)
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.team_view import Presence
from teamtree.agents.tasktree.dialog_wire import (
    AnswerWire,
    AskWire,
    BeliefWire,
    DialogWireError,
    ResolvedWire,
)
from teamtree.agents.tasktree.dialog_wire import decode as decode_dialog
from teamtree.agents.tasktree.dialog_wire import to_wire as dialog_to_wire
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.peer_member import PeerRuleMember
from teamtree.agents.tasktree.peer_wire import (
    claim_to_wire,
    interest_ack_to_wire,
    interest_to_wire,
    potentials_to_wire,
    reply_to_wire,
    snapshot_to_wire,
)
from teamtree.broker import ConfigError, SpecificationError, TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.inbound import give_way_to_critical
from teamtree.broker.lazy import lazy_module, preload
from teamtree.broker.topics import Topic
from teamtree.hardware.profiles import arm_model, can_place
from teamtree.hardware.profiles import profile as profile_spec
from teamtree.planners.tasktree import (
    AbortBehaviour,
    ActivationMetric,
    ArmModel,
    BehaviourFinished,
    BodyWatch,
    Claim,
    ClaimDecided,
    ClaimReply,
    EffectConfirmed,
    EffectUndone,
    EvidenceChanged,
    GraspScorer,
    HandSample,
    HumanModel,
    Interest,
    InterestAck,
    LeaseTerms,
    ModelUpdate,
    NodeReport,
    NodeStatus,
    PauseBehaviour,
    PeerState,
    PotentialsChanged,
    PresenceChanged,
    PublishClaim,
    PublishInterest,
    PublishInterestAck,
    PublishPotentials,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    ShapePrimitive,
    Snapshot,
    StallWatch,
    StartBehaviour,
    TaskController,
    TaskTree,
    Tick,
    Transition,
    distance_scores,
    render_unicode,
    tree_from_dict,
)

if TYPE_CHECKING:
    import numpy as np

    from teamtree.agents.tasktree import mission_wire
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE
    # the tree's wire codec, for the mission.tree the robot publishes after ONLINE
    mission_wire = lazy_module("teamtree.agents.tasktree.mission_wire")

CLAIMS = "claims"
POTENTIALS = "potentials"
CLAIM_REPLY = "claim_reply"
INTEREST = "interest"
INTEREST_ACK = "interest_ack"
STATE = "state"
SNAPSHOT = "snapshot"
SNAPSHOT_EVERY_S = 0.25
"""The controller's snapshots go out at most once per this many seconds: the first at
once, the ones after it within the interval as one, the latest, at its end. Every
change also goes out at once as a ``node.transition``; the retained snapshot is what a
late joiner and the observers read, and each carries every done leaf, so at 32 robots
x 500 leaves one per transition was most of the bytes every robot decoded."""
GRASP_SCORE_DELAY_S = 0.05
"""Under the distance metric alone a started behaviour's grasp is scored for the log
and the transitions (it chooses nothing) this long after the start, once no claim or
reply waits in the process (``give_way_to_critical``), or at the behaviour's end if
that comes first. Scored at the start, its CPU ran in the handler of the reply that
won the claim, ahead of every other claim and reply of the process, during the burst
a mission's first claims make."""
FAILURE_HOLD_S = 0.5
"""At most this long a behaviour that failed while its body held the object waits for
the driver's observations before its node goes back to the team (``_held_when_failed``)."""
FAILURE_HOLD_OBSERVATIONS = 2
"""The driver's observations such a failure waits for (the world shows an object put
down in the next one)."""
MISSION = "mission"
COMMAND = "command"
METRICS = ("distance", "distance+grasp")
DIALOG = "dialog"
BELIEF = "belief"
ANSWERS = ("continue", "concede")
HUMAN_KIND = "human"


CLAIM_RESEND_S = 20.0
"""Base seconds before a claim still missing replies is asked again of the silent
peers (then jittered and doubled, ``ContentionAvoider.resend_after``). Claims and
replies go at QoS 1 over sessions that outlive a reconnect, so a connected peer gets
the claim however slow it is; it is lost only with a session, and a peer that lost
its session announces itself ONLINE again and is asked at once. A timed resend is the
last resort, and asking a busy peer again only makes it busier: under load, most
replies are merely late, and resends become most of the traffic."""


def mission_tree(config: TeamConfig) -> TaskTree:
    """The task tree of a ``[mission] kind = "tasktree"`` config. Raises ConfigError."""
    raw = config.mission.params.get("tree")
    if raw is None:
        raise ConfigError(
            'is missing; give the task tree, e.g. tree = "THEN(cup, AND(sugar, tea_pot))"',
            path=str(config.path),
            key="mission.tree",
        )
    try:
        return tree_from_dict(raw, where="mission.tree")
    except SpecificationError as exc:
        raise ConfigError(str(exc), path=str(config.path), key="mission.tree") from None


class RobotAgent(PeerRuleMember):
    """A robot that shares a THEN/AND/OR task with its peers (see module docstring).

    Parameters (``[[agents]]`` keys): ``profile`` (robot body, e.g. "pr2"), ``driver``
    (its driver agent's id; default ``<id>-driver``), ``metric`` ("distance" or
    "distance+grasp"), ``w_d``, ``w_g``, ``rule`` ("earliest" or "potential"),
    ``seed``, ``start_timeout_s`` (how long to wait for the config's other robots),
    ``min_grasp`` (grasp scores below it count as 0: seed 000's tables round to whole
    numbers, and an off-centre chord of a too-wide sphere scores a fraction of 1),
    ``humans`` (extra human teammates' ids, e.g. ones at a terminal; every ``human``
    agent of the config is one already), ``dialog_timeout_s`` (how long a question
    waits for its answer; then the robot concedes), ``lease_s``, ``lease_renew_s``,
    ``lease_margin_s`` (the body's lease, see ``LeaseTerms``), ``service_timeout_s``
    (how long the robot waits for a lost driver or world to come back before it ends
    its mission with an error, exit code 2), ``stall_timeout_s`` (how long the team may
    go without progress, no leaf newly done and no claim holding its node throughout,
    while leaves are open, before the robot ends its mission with an error naming them
    and what its attempts met, exit code 2; 0: never),
    ``avoid_contention`` (publish potentials and claim the leaf the team's greedy
    matching gives this robot, with jittered backoff; default true; false: seed 000's
    selection, the highest activation), ``declared_interest`` (declare the leaves this
    robot may claim, acknowledged by every online peer, so that a claim asks only the
    peers whose declaration meets it; default true; false: every claim asks every
    online peer, as seed 000 does; see planners/tasktree/interest.py)
    and ``interest_prefetch`` (how many next-best leaves a declaration adds, default 4).
    """

    kind = "robot"
    overridable: ClassVar[frozenset[str]] = frozenset({"metric"})
    optional_tasks: ClassVar[frozenset[str]] = frozenset({"snapshot", "grasp", "dialog"})

    def __init__(
        self,
        *args: Any,
        tree: TaskTree,
        profile: str,
        driver: str,
        metric: str = "distance+grasp",
        w_d: float = 1.0,
        w_g: float = 0.001,
        rule: str = "earliest",
        seed: int = 0,
        expect_peers: list[str] | None = None,
        start_timeout_s: float = 10.0,
        min_grasp: float = 1.0,
        humans: dict[str, str] | None = None,
        dialog_timeout_s: float = 5.0,
        lease: LeaseTerms | None = None,
        roster: list[str] | None = None,
        service_timeout_s: float = 30.0,
        stall_timeout_s: float = 60.0,
        avoid_contention: bool = True,
        declared_interest: bool = True,
        interest_prefetch: int = 4,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.avoid_contention = avoid_contention
        self.declared_interest = declared_interest
        self.interest_prefetch = interest_prefetch
        if roster is not None:
            self.roster = frozenset(roster) | {self.id}
        self._driver_lost_at: float | None = None
        self._world_lost_at: float | None = None
        self.service_timeout_s = service_timeout_s
        self.stall_timeout_s = stall_timeout_s
        self._stall = StallWatch(stall_timeout_s)  # progress: leaves newly done
        self._stall_attempts = 0  # len(self.executed) when the team last progressed
        self.lease = lease or LeaseTerms()
        self._token_of: dict[str, list[Any]] = {}  # node -> fencing token sent with it
        # leases are read on a clock that no step of the wall clock moves: wall time
        # at the start, run on by the monotonic clock; the body learns its offset
        self._lease_epoch = (wall_ms(), time.monotonic())
        self.lease_clock = f"{self.id}-{self.session}"
        self._claim_clock: tuple[str, float] | None = None
        """The pending claim's id and when it was first published (``perf_counter``):
        its decision reports ``elapsed_ms`` to a fraction of a millisecond (stamps are
        whole milliseconds, and a claim takes 2-3 of them at 8 robots)."""
        # commands whose end may have been lost with a progress message (body_watch.py)
        self._body_watch = BodyWatch(start_s=self.lease.lease_s + 3.0)
        self._renewed_at = 0.0
        self.humans: dict[str, str] = dict(humans or {})  # human id -> hand name
        self.dialog_timeout_s = dialog_timeout_s
        self.models: dict[str, HumanModel] = {
            h: HumanModel(tree, h, hand) for h, hand in self.humans.items()
        }
        self._human_stamp: dict[str, tuple[int, int, str]] = {}
        self._dialogs: dict[str, asyncio.Task[None]] = {}
        self._local: list[Any] = []
        self.dialog_log: list[dict[str, Any]] = []
        self.tree = tree
        self.profile = profile
        self.driver = driver
        self.metric_name = metric
        self.metric = ActivationMetric.named(metric, w_d=w_d, w_g=w_g)
        self.rule = rule
        self.expect_peers = sorted(set(expect_peers or []) - {self.id})
        self.start_timeout_s = start_timeout_s
        self.min_grasp = min_grasp
        self.controller: TaskController | None = None
        self.seed = seed
        self._snapshot_sent_at = float("-inf")
        self._snapshot_owed = False
        self.scorer = GraspScorer()
        self.arm: ArmModel | None = None
        self._base: tuple[float, ...] | None = None
        self.arm_position: tuple[float, float, float] | None = None
        self.objects: dict[str, ShapePrimitive] = {}
        self.scores: dict[str, dict[str, float]] = {}
        self._grasp_cache: dict[tuple[Any, ...], float] = {}
        # started leaves whose grasp is still to score: the object's name and its shape
        # at the start (GRASP_SCORE_DELAY_S)
        self._grasp_owed: dict[str, tuple[str, ShapePrimitive]] = {}
        self._reach_cache: dict[tuple[Any, ...], bool] = {}
        self._published_grasps: dict[str, float] = {}
        # the leaves whose scores were written since the grasps were last compared with
        # those published: only theirs are compared (at 500 leaves, building the whole
        # dict on every observation that wrote one score was a sixth of the handler)
        self._scores_written: set[str] = set()
        self.goals: dict[str, tuple[float, ...]] = {}
        # each leaf's object name (None: not a string), read once: the tree is fixed
        self._leaf_objects: tuple[tuple[str, str | None], ...] = tuple(
            (leaf, name if isinstance(name := tree[leaf].param_dict.get("object"), str) else None)
            for leaf in tree.leaves
        )
        # per object: its last observed view, and the shape and goal made from it
        self._shapes: dict[str, tuple[ObjectView, ShapePrimitive, Any]] = {}
        # per object: (shape, goal, base) last checked and whether PLACE could reach it
        self._reach_last: dict[str, tuple[Any, Any, Any, bool]] = {}
        self._stale_potentials = False  # not computed while working: feed() does it after
        # the objects as the driver's keyframe and the deltas since show them
        self._world_objects: dict[str, ObjectView] | None = None
        self._views: dict[str, ObjectView] = {}  # per object: the view last absorbed
        # leaves with a goal of their own (the world's at_goal is not about it)
        self._own_goal_leaves = frozenset(n for n in tree.leaves if "goal" in tree[n].param_dict)
        # the objects this robot's observations showed at their goals (``_undone``)
        self._placed: set[str] = set()
        self._leaves_of: dict[str, list[tuple[str, str]]] = {}
        for leaf, name in self._leaf_objects:
            if name is not None:
                self._leaves_of.setdefault(name, []).append((leaf, name))
        self.body = profile_spec(profile)
        self._commands = itertools.count(1)
        self._command_of: dict[str, str] = {}  # node -> command id
        # node -> (deadline, observations still to wait for, reason): _held_when_failed
        self._failing: dict[str, tuple[float, int, str | None]] = {}
        self._body_name: str | None = None  # this robot's body, as the world names it
        self._backlog: list[tuple[str, Any]] = []
        self._mission_done = asyncio.Event()
        self._status: StatusReporter | None = None  #: publishes the mission's status
        self._numpy: asyncio.Future[None] | None = None  # _load_numpy
        self.executed: list[dict[str, Any]] = []

    def _load_numpy(self) -> asyncio.Future[None]:
        """numpy, imported in a worker thread from the first call on (done once it is).

        The robot needs it for its potentials and grasps, from its driver's first
        observation or the mission's start, whichever comes first; imported there on
        the event loop it stalled every agent of the process as the mission began,
        and imported at start-up it slowed the start of the agents beside it.
        ``numpy.random`` (the grasp sampler's) comes with it: left to the first grasp
        score, its import stalled the process amid the mission's first claims."""
        if self._numpy is None:
            self._numpy = asyncio.ensure_future(preload("numpy", "numpy.random"))
        return self._numpy

    def _grasp_rng(self, key: tuple[Any, ...]) -> np.random.Generator:
        """The grasp sampler's generator for one object pose and arm base: seeded by
        this robot's ``seed`` and the key, so a score depends on what is scored, not
        on how many scores came before it. (One shared stream made the scores depend
        on how many observations a robot had read: faster code, or a busier machine,
        gave the same object another score.)"""
        return np.random.default_rng([int(self.seed or 0) % 2**64, zlib.crc32(repr(key).encode())])

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the robot's keys and read the mission tree. Raises ConfigError."""
        params = decode_params(spec, config, RobotParams, driver=f"{spec.id}-driver")
        peers = [m.id for m in config.members if m.kind == cls.kind]
        humans = {
            a.id: str(a.params.get("hand", a.id)) for a in config.agents if a.kind == HUMAN_KIND
        }
        for h in params.humans:
            humans.setdefault(h, h)
        values = params_dict(params)
        lease_keys = ("lease_s", "lease_renew_s", "lease_margin_s")
        try:
            lease = LeaseTerms(*(float(values.pop(k)) for k in lease_keys))
        except ValueError as exc:
            index = config.agents.index(spec)
            raise ConfigError(
                str(exc), path=str(config.path), key=f"agents[{index}].lease_renew_s"
            ) from None
        return {
            "tree": mission_tree(config),
            **values,
            "expect_peers": peers,
            "humans": humans,
            "lease": lease,
            "roster": sorted({m.id for m in config.members} | set(humans)),
        }

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "profile": self.profile,
            "driver": self.driver,
            "metric": self.metric_name,
            "humans": sorted(self.humans),
        }

    # -- wiring ------------------------------------------------------------------

    async def setup(self) -> None:
        self.subscribe_peer_rule(
            claims=CLAIMS, replies=CLAIM_REPLY, transitions=STATE, snapshots=SNAPSHOT
        )
        if self.avoid_contention:
            self.subscribe_potentials(POTENTIALS, tuple(self.tree.leaves))
        # without declared interest too: a peer that declares its interest (a mixed
        # team, an attached robot) waits for this robot's acknowledgement before it
        # claims, and the controller gives it, as a robot that may claim any leaf
        self.subscribe_interest(INTEREST, INTEREST_ACK)
        self.on_agent(
            self.driver, "observation", self._on_observation, kind="observation", latest=True
        )
        self.on_agent(self.driver, "progress", self._on_progress)

    def _now(self) -> tuple[int, int, str]:
        stamp = self.clock.now()
        return (stamp.wall_ms, stamp.logical, stamp.node)

    async def feed(self, event: Any) -> None:
        """Hand one event to the controller and carry out its actions."""
        c = self.controller
        if c is None:
            if not isinstance(event, PotentialsChanged):  # potentials are recomputed
                self._backlog.append(("event", event))
            return
        if self._stale_potentials and self._reads_potentials() and self._load_numpy().done():
            self._stale_potentials = False  # the latest, before it selects
            c.handle(PotentialsChanged(self._potentials()), self._now())
        now = self._now()  # after the potentials: a claim's stamp is when it is made
        for action in c.handle(event, now):
            await self._act(action)
        while self._local:  # replies the human models give to our claims
            await self.feed(self._local.pop(0))
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
        match action:
            case PublishClaim(claim=claim, to=to):
                if self._claim_clock is None or self._claim_clock[0] != claim.claim_id:
                    self._claim_clock = (claim.claim_id, time.perf_counter())
                if to is None:
                    await self.publish(CLAIMS, "node.claim", claim_to_wire(claim), team=True)
                elif to not in self.humans:  # only the peer that must answer receives it
                    body = claim_to_wire(claim)
                    await self.publish(CLAIMS, "node.claim", body, recipient=to, to=to)
                for human in self.humans:
                    if to in (None, human):
                        self._local.append(self._model_reply(claim, human))
            case PublishReply(reply=reply):
                await self.publish(
                    CLAIM_REPLY, "node.claim_reply", reply_to_wire(reply), recipient=reply.claimant
                )
            case PublishTransition(transition=t):
                if t.node in self._grasp_owed and t.status is not NodeStatus.WORKING:
                    self._score_owed_grasp(t.node)  # the behaviour ended first
                score = self.scores.get(t.node, {})
                await self.publish(
                    STATE,
                    "node.transition",
                    {
                        "node": t.node,
                        "agent": t.agent,
                        "status": t.status.value,
                        "stamp": list(t.stamp),
                        "potential": score.get("potential"),
                        "grasp": score.get("grasp"),
                    },
                )
            case PublishSnapshot(snapshot=snap):
                await self._throttled_snapshot(snap)
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
            case PublishInterest(interest=interest, to=to):
                body = interest_to_wire(interest)
                if to is None:
                    await self.publish(INTEREST, "node.interest", body, team=True)
                elif to not in self.humans:
                    await self.publish(INTEREST, "node.interest", body, recipient=to, to=to)
                for human in self.humans:  # a person may take any leaf: the model says so
                    if to in (None, human):
                        own = Interest(human, interest.stamp, tuple(self.tree.leaves))
                        self._local.append(InterestAck(human, self.id, interest.stamp, own))
            case PublishInterestAck(ack=ack):
                if ack.declarer not in self.humans:
                    body = interest_ack_to_wire(ack)
                    await self.publish(
                        INTEREST_ACK, "node.interest_ack", body, recipient=ack.declarer
                    )
            case PublishPotentials(potentials=potentials):
                body = potentials_to_wire(self.id, potentials, self.tree.leaves)
                await self.publish(POTENTIALS, "node.potentials", body, qos=0, retain=True)
            case ClaimDecided(claim=claim, won=won, reason=reason):
                body = {"claim_id": claim.claim_id, "node": claim.node, "won": won}
                clock, self._claim_clock = self._claim_clock, None
                if clock is not None and clock[0] == claim.claim_id:
                    body["elapsed_ms"] = round((time.perf_counter() - clock[1]) * 1000, 3)
                self.log.info(
                    "node.claim_won" if won else "node.claim_lost",
                    node=claim.node,
                    label=self.tree[claim.node].label,
                    potential=round(claim.potential, 4),
                    latency_ms=body.get("elapsed_ms", self._now()[0] - claim.stamp[0]),
                    reason=reason,
                )
                await self.publish("events", "node.claim_decided", body | {"reason": reason})

    def _token(self, node: str) -> list[Any]:
        """The fencing token for ``node``: the stamp this robot won it at (a re-claim
        after a reconnect wins a newer one)."""
        c = self.controller
        held = None if c is None else c.working.get(node)
        if held is not None and held[0] == self.id:
            self._token_of[node] = list(held[1])
        return self._token_of.get(node) or list(self._now())

    def _lease_now_ms(self) -> int:
        """Now on the clock this robot's leases are read on (``lease_clock``)."""
        wall0, mono0 = self._lease_epoch
        return wall0 + int((time.monotonic() - mono0) * 1000)

    async def _renew_leases(self) -> None:
        """Renew the body's lease of every node this robot holds, while connected."""
        c = self.controller
        now = time.monotonic()
        if c is None or now - self._renewed_at < self.lease.renew_s:
            return
        self._renewed_at = now
        if not c.connected or not self.connection.connected.is_set():
            return
        for node in list(c.mine):
            if node not in c.paused_leaves and node not in self._failing:  # ended
                await self._command("behaviour.renew", node)

    async def _check_driver(self) -> None:
        """A driver gone longer than the lease cannot report: its body must have
        stopped (its lease lapsed), so the behaviours it ran failed; give them back."""
        c, lost = self.controller, self._driver_lost_at
        now = time.monotonic()
        for what, since in ((f"driver {self.driver}", lost), ("world", self._world_lost_at)):
            if since is not None and now - since > self.service_timeout_s:
                self.log.error(
                    "mission.failed",
                    reason=f"{what} gone for {now - since:.0f} s and not back",
                    fix="restart it; the robot resumes when it returns within "
                    f"service_timeout_s ({self.service_timeout_s:g} s)",
                )
                self.request_stop(2)
                return
        if c is None or lost is None or not c.mine:
            return
        if time.monotonic() - lost < self.lease.takeover_s:
            return
        for node in list(c.mine):
            self.log.warning("behaviour.failed", node=node, reason="driver_lost")
            self.executed.append({"node": node, "ok": False, "reason": "driver_lost"})
            self._command_of.pop(node, None)
            await self.feed(BehaviourFinished(node, False))

    def _check_stall(self) -> None:
        """A team that makes no progress (no leaf newly done, and no claim that held its
        node throughout) for ``stall_timeout_s`` while leaves are open and this robot is
        connected will not finish: e.g. the only robot able to grasp an object is gone,
        or every execute on an object is refused. Claims and attempts are not progress
        (``StallWatch``). End with an error naming the open leaves and what this
        robot's attempts met instead of a silent wait or an endless cycle (exit 2)."""
        c = self.controller
        if c is None or not self.stall_timeout_s:
            return
        if c.mission_done or not c.connected:
            self._stall.reset()
            return
        since = self._stall.since
        holds = [(node, agent, tuple(stamp)) for node, (agent, stamp) in c.working.items()]
        idle = self._stall.observe(c.done, holds, time.monotonic())
        if self._stall.since != since:
            self._stall_attempts = len(self.executed)  # count attempts from here on
        if idle is None:
            return
        acts = c.activations()
        open_leaves = [
            f"{self.tree[leaf].label} (potential here {acts[leaf].potential:.3g})"
            for leaf in self.tree.leaves
            if leaf not in c.done and acts[leaf].level > 0
        ]
        failed = Counter(
            str(e.get("reason")) for e in self.executed[self._stall_attempts :] if not e["ok"]
        )
        if failed:
            met = ", ".join(f"{reason} x{n}" for reason, n in failed.most_common())
            why = (
                f"this robot's behaviours since failed {failed.total()} times ({met}) "
                "and no teammate finished one"
            )
        else:
            why = (
                "open and worked on by nobody; this robot cannot take them (potential 0: "
                "out of reach or no grasp) and no teammate does"
            )
        self.log.error(
            "mission.failed",
            reason=f"no progress for {idle:.0f} s (no leaf done): "
            f"{', '.join(open_leaves) or 'none'}: {why}",
            fix="bring back or add a member able to do them, or change the mission; "
            f"stall_timeout_s ({self.stall_timeout_s:g} s) sets how long the team may wait",
        )
        self.request_stop(2)

    async def _publish_snapshot(self, snap: Snapshot) -> None:
        self._snapshot_sent_at = asyncio.get_running_loop().time()
        self._snapshot_owed = False
        await self.publish(SNAPSHOT, "node.snapshot", snapshot_to_wire(snap), retain=True)
        await self._report_status(snap)

    async def _report_status(self, snap: Snapshot) -> None:
        """The mission's status as this robot knows it: leaves done of the tree's."""
        if self._status is None:
            self._status = StatusReporter(self, "tasktree", "leaves")
        leaves = self.tree.leaves
        done = len(set(snap.done) & set(leaves))
        ended = self.controller is not None and self.controller.mission_done
        reason = "every subtask the tree needs is done" if ended else ""
        detail = "the others were OR alternatives" if ended and done < len(leaves) else ""
        state = "succeeded" if ended else "running"
        await self._status.report(state, done=done, total=len(leaves), reason=reason, detail=detail)

    async def _throttled_snapshot(self, snap: Snapshot) -> None:
        """Publish `snap` now, or the controller's latest at the end of the interval
        (``SNAPSHOT_EVERY_S``) when one went out less than an interval ago."""
        if self._snapshot_owed:
            return  # the trailing one is scheduled and will be the latest
        wait = self._snapshot_sent_at + SNAPSHOT_EVERY_S - asyncio.get_running_loop().time()
        if wait <= 0:
            await self._publish_snapshot(snap)
            return
        self._snapshot_owed = True
        self.spawn(self._owed_snapshot(wait), "snapshot")

    async def _owed_snapshot(self, wait: float) -> None:
        await asyncio.sleep(wait)
        if self._snapshot_owed:  # not sent meanwhile (a reconnect, the mission's end)
            await self.publish_controller_snapshot()

    async def _command(self, kind: str, node: str) -> None:
        if kind == "behaviour.execute":
            leaf = self.tree[node]
            score = self.scores.setdefault(node, {})
            name = leaf.param_dict.get("object")
            if score.get("grasp") is None and self.arm is not None and name in self.objects:
                shape = self.objects[name]
                if self._grasp_key(name, shape) in self._grasp_cache:
                    score["grasp"] = self._grasp(name, shape)  # known: no CPU to speak of
                    self._scores_written.add(node)
                else:
                    self._grasp_owed[node] = (name, shape)
                    self.spawn(self._score_grasp_later(node), "grasp")
            command_id = f"{self.id}-{self.session}-{next(self._commands)}"
            self._command_of[node] = command_id
            self._body_watch.sent(node, command_id, time.monotonic())
            self.log.info(
                "behaviour.started",
                node=node,
                label=leaf.label,
                potential=round(score.get("potential", 0.0), 4),
                grasp=None if score.get("grasp") is None else round(score["grasp"], 1),
            )
            token = self._token(node)
            sent = self._lease_now_ms()
            body = to_wire(
                ExecuteCommand(
                    command_id,
                    leaf.behavior,
                    node,
                    leaf.param_dict,
                    self.lease.deadline_ms(sent),
                    token,
                    sent,
                    self.lease_clock,
                )
            )
        elif kind == "behaviour.renew":
            command_id = self._command_of.get(node)
            if command_id is None:
                return
            sent = self._lease_now_ms()
            lease_ms = self.lease.deadline_ms(sent)
            body = to_wire(
                RenewCommand(command_id, lease_ms, node, self._token(node), sent, self.lease_clock)
            )
            # QoS 0: a renewal is never queued while disconnected and sent late
            await self.publish(COMMAND, kind, body, recipient=self.driver, qos=0)
            return
        else:
            command_id = self._command_of.get(node)
            if command_id is None:
                return
            body = to_wire(CommandRef(command_id, node))
        await self.publish(COMMAND, kind, body, recipient=self.driver)

    # -- inbound -----------------------------------------------------------------

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if agent_id == self.driver:
            self._driver_lost_at = None if new is Presence.ONLINE else time.monotonic()
        member = self.team_view.get(agent_id)
        if member is not None and member.kind == "world":
            gone = not self.team_view.online(kind="world")
            self._world_lost_at = (self._world_lost_at or time.monotonic()) if gone else None
        await super().on_presence(agent_id, old, new)

    async def publish_controller_snapshot(self) -> None:
        if self.controller is not None:
            await self._publish_snapshot(self.controller.snapshot(self._now()))

    async def _on_progress(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.driver:
            return
        try:
            progress = decode_progress(env.body)
        except BehaviourWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        node = progress.node
        if node is None or self._command_of.get(node) != progress.command_id:
            return
        if env.kind == "behaviour.finished":
            self.log.info("behaviour.finished", node=node, label=self.tree[node].label)
            self.executed.append({"node": node, "ok": True})
            await self.feed(BehaviourFinished(node, True))
        elif env.kind == "behaviour.failed":
            reason = progress.reason
            self.log.warning("behaviour.failed", node=node, reason=reason)
            if self._held_when_failed(node):
                self._failing[node] = (
                    time.monotonic() + FAILURE_HOLD_S,
                    FAILURE_HOLD_OBSERVATIONS,
                    reason,
                )
                return
            self.executed.append({"node": node, "ok": False, "reason": reason})
            await self.feed(BehaviourFinished(node, False))

    def _held_when_failed(self, node: str) -> bool:
        """Whether the body held `node`'s object when its behaviour failed, as the
        driver's last observation shows it.

        A body that stops holding an object (its lease lapsed, a cancel) puts it down
        where the gripper is, which is the object's goal when it stopped in the release.
        The driver's ``behaviour.failed`` and its observation showing the object
        ``at_goal`` then race. Observation first: the robot counts its behaviour done
        (``EffectConfirmed`` while the node is its own) and says ``done``. Failure
        first, without a wait: it gave the node back (``inactive``), then counted the
        leaf done from the world, and nobody reported it done. So the failure waits for
        the driver's next ``FAILURE_HOLD_OBSERVATIONS`` observations (at most
        ``FAILURE_HOLD_S``): the node stays this robot's meanwhile (its body has
        stopped, so nothing runs twice), and the record says the same either way."""
        name = self.tree[node].param_dict.get("object")
        view = (self._world_objects or {}).get(name) if isinstance(name, str) else None
        me = self._body_name
        return view is not None and me is not None and view.held_by == me

    async def _release_failures(self, *, observed: bool) -> None:
        """Give back the held failures (``_held_when_failed``) that waited out their
        observations (`observed`: one more came) or their deadline. A node the world
        meanwhile showed done was counted done by ``EffectConfirmed``; the controller
        ignores its failure."""
        if not self._failing:
            return
        now = time.monotonic()
        for node, (deadline, left, reason) in list(self._failing.items()):
            left -= observed
            if left > 0 and now < deadline:
                self._failing[node] = (deadline, left, reason)
                continue
            del self._failing[node]
            self.executed.append({"node": node, "ok": False, "reason": reason})
            await self.feed(BehaviourFinished(node, False))

    async def _on_observation(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.driver:
            return
        try:
            obs = decode_observation(env.body)
            objects = merge_objects(self._world_objects, obs)
            if objects is None:
                return  # deltas before any keyframe: the next one comes within a second
            self._world_objects = objects
            names = None if obs.full else list(obs.objects)  # what a delta carries
            obs = msgspec.structs.replace(obs, objects=objects, full=True)
            seen, moved = self._absorb_observation(obs, names)
            changed = None if moved else seen  # potentials: the arm's motion moves them all
            if names is None:
                seen = None  # a keyframe: every leaf is looked at for an object at its goal
            updates = self._observe_humans(obs)
        except ObservationWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        except (ValueError, SpecificationError) as exc:  # typed, but not a shape or pose
            self._drop("malformed", str(topic), env.sender, f"bad observation body: {exc}")
            return
        if names is None and self.controller is not None:  # a keyframe: every goal known
            evidence = self._evidence_leaves()
            if evidence != self.controller.evidence_leaves:
                await self.feed(EvidenceChanged(evidence))
        for leaf in self._confirmed(obs, seen):
            await self.feed(EffectConfirmed(leaf))
        for leaf in self._undone(obs, seen):
            self.log.warning("node.undone", node=leaf, label=self.tree[leaf].label)
            await self.feed(EffectUndone(leaf))
        await self._release_failures(observed=True)
        await self._check_body(obs)
        if not self._load_numpy().done() or (
            self.controller is not None and not self._reads_potentials()
        ):
            self._stale_potentials = True  # computed by feed() once it reads them again
        else:
            potentials = self._potentials(None if self._stale_potentials else changed)
            self._stale_potentials = False
            if potentials or changed is None:
                await self.feed(PotentialsChanged(potentials))
        for human, update in updates:
            await self._apply_model(human, update)
        if self._grasps_changed():
            grasps = {
                leaf: round(score["grasp"], 2)
                for leaf, score in self.scores.items()
                if score.get("grasp") is not None
            }
            self._published_grasps = grasps
            await self.publish("scores", "node.grasp_scores", {"grasp": grasps}, retain=True)

    def _grasps_changed(self) -> bool:
        """Whether a leaf's rounded grasp score differs from the one last published,
        looking only at the leaves whose scores were written since the last look (the
        others cannot differ)."""
        written, self._scores_written = self._scores_written, set()
        published, scores = self._published_grasps, self.scores
        for leaf in written:
            grasp = scores.get(leaf, {}).get("grasp")
            if published.get(leaf) != (None if grasp is None else round(grasp, 2)):
                return True
        return False

    async def _check_body(self, obs: ObservationBody) -> None:
        """A behaviour the body no longer runs, whose end never reached us (its progress
        message was lost, e.g. across a broker restart), failed: give the node back."""
        c = self.controller
        if c is None:
            return
        if isinstance(obs.robot.busy, bool):
            return  # this driver does not say which command runs: nothing to compare
        busy = obs.robot.command_id
        for node in self._body_watch.observe(busy, set(c.mine), time.monotonic()):
            self.log.warning("behaviour.failed", node=node, reason="progress_lost")
            self.executed.append({"node": node, "ok": False, "reason": "progress_lost"})
            self._command_of.pop(node, None)
            await self.feed(BehaviourFinished(node, False))

    def _confirmed(self, obs: ObservationBody, changed: set[str] | None = None) -> list[str]:
        """Leaves not yet done whose object the world shows at its goal ("done means
        done": whoever put it there, e.g. a behaviour cancelled during its release).
        Only leaves without a ``goal`` parameter of their own: the world's ``at_goal``
        is about the object's configured goal. `changed`: the objects whose view
        changed (None: any may have). The arm's motion changes no object, so a working
        robot's observations look at the few leaves of objects that moved, and every
        leaf once per keyframe (at 500 leaves the scan of all of them on each of a
        working robot's observations was a sixth of the handler)."""
        c = self.controller
        if c is None:
            return []
        objects = obs.objects
        out = []
        done, own_goal = c.done, self._own_goal_leaves
        for leaf, name in self._leaf_pairs(changed):
            if name is None or leaf in done or leaf in own_goal:
                continue
            obj = objects.get(name)
            if obj is not None and obj.at_goal:
                out.append(leaf)
        return out

    def _evidence_leaves(self) -> frozenset[str]:
        """The leaves whose done the world can show, so a peer's word is not enough
        (``TaskController(evidence_leaves=...)``): those with an object and no goal of
        their own (as ``_confirmed`` reads them) that this robot's world shows with a
        goal. An object the world does not show (an AGV's load, carried outside the
        simulated world) or shows without a goal can only be reported done by a peer.
        Before the driver's first keyframe every leaf with an object is one: a done
        (or a retained all-done snapshot) that a peer's name carries then would
        otherwise be believed for good; the keyframe frees the rest."""
        objects = self._world_objects
        return frozenset(
            leaf
            for leaf, name in self._leaf_objects
            if name is not None
            and leaf not in self._own_goal_leaves
            and (objects is None or (name in objects and objects[name].goal is not None))
        )

    def _undone(self, obs: ObservationBody, changed: set[str] | None = None) -> list[str]:
        """Done leaves whose object this robot saw at its goal and now sees away from it
        ("undone means undone": whoever moved it, the leaf is open again). `changed` as
        in ``_confirmed``. Only a move away after an observation at the goal counts, so
        an observation older than this robot's own ``behaviour.finished`` re-opens
        nothing."""
        c = self.controller
        if c is None:
            return []
        objects, placed = obs.objects, self._placed
        out = []
        for name in objects if changed is None else changed:
            obj = objects.get(name)
            if obj is None:
                continue
            if obj.at_goal:
                placed.add(name)
            elif name in placed:
                placed.discard(name)
                out += [
                    leaf
                    for leaf, _ in self._leaves_of.get(name, ())
                    if leaf in c.done and leaf not in self._own_goal_leaves
                ]
        return out

    def _absorb_observation(
        self, obs: ObservationBody, names: Iterable[str] | None = None
    ) -> tuple[set[str], bool]:
        """Take the robot's pose and the objects' shapes from `obs` (only objects in
        `names`, those a delta carried, when given). Returns the objects whose view
        changed, and whether any leaf's potential may have changed besides theirs
        (the arm or base moved, or a keyframe)."""
        robot = obs.robot
        self._body_name = robot.name
        moved = names is None or robot.arm != self.arm_position
        self.arm_position = robot.arm
        base = (*(robot.arm if robot.base is None else robot.base), robot.yaw)
        if self.arm is None or base != self._base:
            self._base = base
            self.arm = self._arm_model(base)
            moved = True
        objects = obs.objects
        views = self._views
        changed: set[str] = set()
        if names is None:  # every object: also forget those no longer shown
            names = objects
            for name in [n for n in views if n not in objects]:
                del views[name]
                self._forget_object(name)
                changed.add(name)
        for name in names:
            obj = objects.get(name)
            if obj is None or views.get(name) == obj:
                continue  # most objects stand still: convert the rest
            views[name] = obj
            changed.add(name)
            if obj.at_goal or obj.held_by not in (None, self.id):
                self._forget_object(name)
                continue
            shape = ShapePrimitive(obj.shape, obj.dims, obj.position, obj.yaw)
            self._shapes[name] = (obj, shape, obj.goal)
            self.objects[name] = shape
            if obj.goal is not None:
                self.goals[name] = obj.goal
            else:
                self.goals.pop(name, None)
        return changed, moved

    def _forget_object(self, name: str) -> None:
        self._shapes.pop(name, None)
        self.objects.pop(name, None)
        self.goals.pop(name, None)

    def _leaf_pairs(self, changed: set[str] | None) -> Iterable[tuple[str, str | None]]:
        """(leaf, object) for every leaf, or only for leaves of the `changed` objects."""
        if changed is None:
            return self._leaf_objects
        return [pair for name in changed for pair in self._leaves_of.get(name, ())]

    def _arm_model(self, base: tuple[float, ...]) -> ArmModel:
        return arm_model(self.profile, base[:3], yaw=base[3])

    def _grasp(self, name: str, shape: ShapePrimitive) -> float:
        """Grasp score of `shape` for this arm (0-100; below `min_grasp` counts as 0),
        cached per object pose and arm base: it does not change as the arm moves."""
        assert self.arm is not None
        key = self._grasp_key(name, shape)
        if key not in self._grasp_cache:
            self._grasp_cache[key] = self.scorer.score(shape, self.arm, self._grasp_rng(key)).score
        grasp = self._grasp_cache[key]
        return 0.0 if grasp < self.min_grasp else grasp  # tables round; a chord is no grasp

    async def _score_grasp_later(self, node: str) -> None:
        """Score a started behaviour's grasp off the claims' path (GRASP_SCORE_DELAY_S)."""
        await asyncio.sleep(GRASP_SCORE_DELAY_S)
        await give_way_to_critical()
        self._score_owed_grasp(node)

    def _score_owed_grasp(self, node: str) -> None:
        """Score the grasp owed for `node` (its object as it was at the start), if any."""
        owed = self._grasp_owed.pop(node, None)
        if owed is None:
            return
        grasp = self._grasp(*owed)
        self.scores.setdefault(node, {})["grasp"] = grasp
        self._scores_written.add(node)
        self.log.info("behaviour.grasp_scored", node=node, grasp=round(grasp, 1))

    def _grasp_key(self, name: str, shape: ShapePrimitive) -> tuple[Any, ...]:
        assert self.arm is not None
        return (name, shape.position, shape.yaw, self.arm.base_position)

    async def on_stop(self) -> None:
        if self._snapshot_owed:  # stopped within an interval: the last state, not stale
            with contextlib.suppress(TeamtreeError):
                await self.publish_controller_snapshot()
        await super().on_stop()

    def _reachable(self, name: str, shape: ShapePrimitive) -> bool:
        """Whether the world would accept PLACE(name) from here (cached per pose)."""
        goal = self.goals.get(name)
        if goal is None or self._base is None:
            return True
        last = self._reach_last.get(name)  # the same objects as last time: no hashing
        if last is not None and last[0] is shape and last[1] is goal and last[2] is self._base:
            return last[3]
        key = (name, shape.position, goal, self._base)
        if key not in self._reach_cache:
            self._reach_cache[key] = can_place(
                self.body, self._base[:3], self._base[3], shape.position, goal
            )
        self._reach_last[name] = (shape, goal, self._base, self._reach_cache[key])
        return self._reach_cache[key]

    def _potentials(self, changed: set[str] | None = None) -> dict[str, float]:
        """Eq. 1 per leaf from the latest observation, for every leaf or (`changed`
        given) only the leaves of the objects whose view changed: an idle arm stands
        still, so the others keep theirs. Grasp scores are computed only under
        distance+grasp (they cost the most CPU); distance-only runs score the grasp of
        a behaviour after it starts, for the log (``GRASP_SCORE_DELAY_S``)."""
        if self.arm is None or self.arm_position is None:
            return {}
        pairs = self._leaf_pairs(changed)
        shapes = [None if name is None else self.objects.get(name) for _, name in pairs]
        found = [shape.position for shape in shapes if shape is not None]
        scores = iter(distance_scores(found, self.arm_position) if found else ())
        out: dict[str, float] = {}
        for (leaf, name), shape in zip(pairs, shapes, strict=True):
            if shape is None or name is None:
                out[leaf] = 0.0
                continue
            distance = next(scores)
            grasp = self._grasp(name, shape) if self.metric.use_grasp else None
            potential = self.metric.from_distance_score(distance, grasp or 0.0)
            if not self._reachable(name, shape):  # the world would answer "unreachable"
                potential = 0.0
            out[leaf] = potential
            self.scores[leaf] = {"potential": potential, "grasp": grasp, "distance": distance}
        self._scores_written.update(out)
        return out

    # -- humans: theory of mind and dialogs (seed 000 §2.3, Figs. 4-6) -------------

    def _observe_humans(self, obs: ObservationBody) -> list[tuple[str, ModelUpdate]]:
        """Feed each human model the hand track in one observation."""
        if not self.humans:
            return []
        out = []
        done = self.controller.done if self.controller is not None else set()
        views = {name: msgspec.structs.asdict(o) for name, o in obs.objects.items()}
        for human, hand in self.humans.items():
            view = obs.hands.get(hand)
            if view is None:
                continue
            samples = [HandSample(r[0], (r[1], r[2], r[3])) for r in view.track]
            if not samples:
                samples = [HandSample(obs.t, view.position)]
            model = self.models[human]
            before = model.belief()
            update = model.observe(obs.t, samples, views, view.holding, done)
            if update or model.belief()["intent_object"] != before["intent_object"]:
                out.append((human, update))
        return out

    def _model_reply(self, claim: Claim, human: str) -> ClaimReply:
        """The simulated human controller's answer to our claim (Fig. 4/5 step 2)."""
        model = self.models[human]
        assert self.controller is not None
        reports = []
        others = sorted(self.controller.conflicts(claim.node) - {claim.node})
        for node in [claim.node, *others]:
            if node in model.done:
                reports.append(NodeReport(node, PeerState.DONE))
            elif node == model.active:
                stamp = self._human_stamp.get(human) or self._now()
                reports.append(NodeReport(node, PeerState.WORKING, agent=human, stamp=stamp))
            elif node == claim.node:
                reports.append(NodeReport(node, PeerState.NONE))
        return ClaimReply(
            claim.claim_id, claim.node, claim.claimant, human, tuple(reports), claim.round
        )

    async def _apply_model(self, human: str, update: ModelUpdate) -> None:
        """Log and publish the belief; carry the model's changes into the controller."""
        model = self.models[human]
        belief = model.belief()
        self.log.info("tom.belief", reason=update.reason or None, **belief)
        body = dialog_to_wire(BeliefWire(**belief))  # type: ignore[arg-type]
        await self.publish(BELIEF, "tom.belief", body, recipient=human, retain=True)
        if self.controller is None:
            return
        for node in update.done:
            await self.feed(Transition(node, human, NodeStatus.DONE, self._now()))
        await self._reconcile(human)

    async def _reconcile(self, human: str) -> None:
        """Make the controller's view of `human` match the model: release leaves the
        human left, mark the active one worked on, or open a dialog on a conflict."""
        c = self.controller
        if c is None:
            return
        active = self.models[human].active
        for node, (agent, _stamp) in list(c.working.items()):
            if agent == human and node != active:
                await self.feed(Transition(node, human, NodeStatus.INACTIVE, self._now()))
        if active is None or active in c.done:
            return
        if active == c.my_working:
            if active not in self._dialogs:
                self._dialogs[active] = self.spawn(self._dialog(human, active), "dialog")
            return
        if active in self._dialogs or c.working.get(active, ("",))[0] == human:
            return
        stamp = self._now()
        self._human_stamp[human] = stamp
        if c.pending_claim is not None and c.pending_claim.node == active:
            self.log.info("human.conflict_conceded", human=human, node=active)
        await self.feed(Transition(active, human, NodeStatus.WORKING, stamp))

    async def _dialog(self, human: str, node: str) -> None:
        """Ask `human` whether they continue with `node` (Figs. 5, 6): the robot pauses
        meanwhile; "continue" or no answer → the robot yields, "concede" → it resumes."""
        leaf = self.tree[node]
        obj = leaf.param_dict.get("object")
        dialog_id = f"{self.id}-{uuid.uuid4().hex[:10]}"
        ask = AskWire(
            dialog_id,
            self.id,
            human,
            node,
            leaf.label,
            obj,
            f"We both went for {leaf.label}. Do you want to continue with it?",
            list(ANSWERS),
            self.dialog_timeout_s,
        )
        body = dialog_to_wire(ask)
        try:
            await self._command("behaviour.pause", node)
            self.log.info("dialog.asked", human=human, node=node, label=leaf.label, id=dialog_id)
            start = time.monotonic()
            how = "answered"
            try:
                reply = await self.request(
                    DIALOG, "dialog.ask", body, to=human, timeout=self.dialog_timeout_s
                )
                try:
                    answer = decode_dialog(reply.body, AnswerWire).answer
                except DialogWireError as exc:
                    self._drop("malformed", DIALOG, reply.sender, str(exc))
                    answer = ""
                if answer not in ANSWERS:
                    answer, how = "continue", "invalid"
            except TeamtreeError:
                answer, how = "continue", "timeout"
            rtt_ms = round((time.monotonic() - start) * 1000, 1)
            robot_continues = answer == "concede"
            resolved = dialog_to_wire(
                ResolvedWire(
                    dialog_id, self.id, human, node, leaf.label, answer, how, rtt_ms,
                    robot_continues,
                )
            )  # fmt: skip
            self.dialog_log.append(resolved)
            self.log.info("dialog.resolved", **{k: v for k, v in resolved.items() if k != "robot"})
            await self.publish(DIALOG, "dialog.resolved", resolved)
            c = self.controller
            if c is None or c.my_working != node:
                return  # finished or taken meanwhile
            if robot_continues:
                self.models[human].concede(node)
                await self._command("behaviour.resume", node)
                await self._reconcile(human)
            else:
                await self._command("behaviour.cancel", node)
                await self.feed(BehaviourFinished(node, False))  # lowers its activation
                stamp = self._now()
                self._human_stamp[human] = stamp
                await self.feed(Transition(node, human, NodeStatus.WORKING, stamp))
                await self._reconcile(human)
        finally:
            self._dialogs.pop(node, None)

    # -- the mission -------------------------------------------------------------

    async def on_tick(self) -> None:
        if self.controller is not None and not self._mission_done.is_set():
            await self.feed(Tick())
            await self._release_failures(observed=False)
            await self._renew_leases()
            await self._check_driver()
            self._check_stall()

    async def main(self) -> None:
        await self.wait_connected()
        await self.wait_synced()  # on a cluster: the team's state before any claim
        await self.publish(
            MISSION,
            "mission.tree",
            mission_wire.mission_tree_body(self.tree),
            team=True,
            retain=True,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout_s
        await asyncio.sleep(0.3)  # retained presence and snapshots arrive first
        while not set(self.expect_peers) <= self.peer_rule_peers() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        await self._load_numpy()
        peers = self.peer_rule_peers()
        missing = sorted(set(self.expect_peers) - peers)
        if missing:
            self.log.warning("team.incomplete", missing=missing, online=sorted(peers))
        self.controller = TaskController(
            self.tree,
            self.id,
            online_peers=peers,
            await_snapshots=True,
            rule=self.rule,
            default_potential=0.0,
            takeover_ms=self.lease.takeover_ms,
            wait_clock=_monotonic_ms,  # a takeover wait no stamp from a skewed clock cuts
            avoid_contention=self.avoid_contention,
            declared_interest=self.declared_interest,
            interest_prefetch=self.interest_prefetch,
            resend_ticks=max(1, round(CLAIM_RESEND_S * self.runtime.tick_hz)),
            seed=f"{self.seed}:{self.id}",
            # a peer's word may be forged: a release waits for the holder's lease, and
            # done comes only from the world (the people's models are this robot's own)
            release_hold_ms=self.lease.takeover_ms,
            released_at_once=set(self.humans),
            evidence_leaves=self._evidence_leaves(),
        )
        if self.controller.avoider is not None:
            self.controller.avoider.silent = set(self.humans)  # they publish no potentials
        self.log.info("mission.started", peers=sorted(peers), metric=self.metric_name)
        await self._publish_snapshot(self.controller.snapshot(self._now()))
        await self.feed(PotentialsChanged(self._potentials()))
        backlog, self._backlog = self._backlog, []
        for _, event in backlog:
            await self.feed(event)
        for member in peers:
            await self.feed(PresenceChanged(member, True))
        for human in self.humans:  # peers whose replies the models give
            await self.feed(PresenceChanged(human, True))
            await self._reconcile(human)
        await self._mission_done.wait()
        await self._publish_snapshot(self.controller.snapshot(self._now()))
        done = [self.tree[e["node"]].label for e in self.executed if e["ok"]]
        c = self.controller
        self.log.info(
            "mission.done",
            executed=done,
            peer_done_unconfirmed=c.unconfirmed,
            future_stamps_refused=c.refused_future,
        )
        self.log.info(
            "tree.final", tree="\n" + render_unicode(self.tree, self.controller.statuses())
        )


def _monotonic_ms() -> int:
    """This process's monotonic clock in ms: what a takeover wait is measured on."""
    return int(time.monotonic() * 1000)
