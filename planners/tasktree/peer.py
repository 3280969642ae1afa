"""The peer rule as a pure state machine: one team member's copy of the task tree.

Seed 000 §2.2-2.3 (Figs. 7, 8) made safe as docs/protocol.md "Claiming a node" sketches it.
``TaskController.handle(event, now)`` consumes one event and returns the actions the
agent must carry out (publish, start, pause...); it does no I/O and reads no clock:
``now`` is the agent's hybrid-logical-clock reading as a plain ordered tuple
``(wall_ms, logical, agent_id)``.

Events: ``Tick``, ``Want``, ``Claim``, ``ClaimReply``, ``Transition``, ``Snapshot``,
``PresenceChanged``, ``PotentialsChanged``, ``BehaviourFinished``, ``ConnectionChanged``,
``EffectConfirmed`` / ``EffectUndone`` (the world shows a leaf's effect, or its loss).
Actions: ``PublishClaim``, ``PublishReply``, ``PublishTransition``, ``PublishSnapshot``,
``StartBehaviour``, ``PauseBehaviour``, ``ResumeBehaviour``, ``AbortBehaviour``,
``ClaimDecided`` (informational: for logs and claim-latency figures).

The rule, per claim of leaf N (its *conflict set* is N plus the leaves in the other
branches of every OR above N, since an OR may run only one child):

1. A claim carries node, claimant, stamp (and the claimant's potential).
2. Every peer answers with its own state for each node of the conflict set it knows
   something about: done, working (by whom), or its own pending claim with stamp.
3. Working or done on any node of the conflict set beats a claim. Among claims, the
   lower key wins: the stamp (rule ``"earliest"``, Fig. 8), or ``(-potential, stamp)``
   (rule ``"potential"``, an option: any total order over claims keeps the proof).
4. The claimant proceeds only with a reply from every peer online *at decision time*
   and none beating it. A pending claimant that *receives* a claim beating its own
   (from X) discards X's earlier reply and asks X again (the claim's ``round`` goes
   up; only a reply of that round counts), so X's answer reflects X's claim. Of two
   overlapping claims at most one proceeds whatever the message order and whatever
   the clocks; a stale claim that already lost costs a round trip, not the claim.
   (Giving up at once instead is also safe, but under long delays claims still in
   flight kill every newer claim: a livelock the property test found.) Replies are
   idempotent per claim id and round; duplicates change nothing.
5. The loser lowers its activation for N for ``inhibit_ticks`` ticks (Fig. 8 step 5).
6. A peer going offline (Last Will) releases the leaf it was working on; another
   member completes it. With ``takeover_ms`` (``LeaseTerms.takeover_ms``: lease plus
   margin) the leaf stays taken that long after the Will, until the holder's body
   must have stopped by itself (its lease lapsed): presence alone never hands a node
   over while a silent holder's body may still run it (docs/protocol.md, "Leases").
   The wait (and rule 8's) is measured on ``wait_clock`` (monotonic ms) when given,
   so a stamp that drags the hybrid clock forward cannot cut it short.
   A late joiner (``await_snapshots=True``) or a reconnecting member adopts every
   online peer's snapshot before it claims; a member that lost the broker pauses
   its behaviour and re-claims it before resuming (fencing).

Trust at the boundary (where the broker cannot tell who sent what):

7. Done is checked, not believed. For the ``evidence_leaves`` (a leaf whose object
   has a goal in the world) a peer's ``done`` (transition, snapshot or claim reply)
   is not believed: the leaf is done for this member only when its own observation
   of the world shows it (``EffectConfirmed``) or its own behaviour finished. A
   peer's done still makes a pending claim on it lose (losing is always safe), and an
   OR is done only by the evidence of one of its own branches. Undone means undone:
   ``EffectUndone`` opens a done leaf again, and the team works it again.
8. A release waits for the lease. With ``release_hold_ms`` (a robot passes its
   ``takeover_ms``), a holder's ``inactive``, a ``done`` not believed, or a snapshot
   without the leaf frees an evidence leaf (rule 7) only that long after it arrived:
   were it forged, the holder's body still runs until its lease must have lapsed
   (peers in ``released_at_once``, e.g. the people a robot models, are exempt).
   Later evidence that the holder works it cancels the release. Declarations of
   interest only grow (``interest.py`` I4), so a claim asks whoever may hold the leaf.
9. Stamps from the future buy nothing. A peer's transition or snapshot stamped more
   than ``max_skew_ms`` ahead of this member's clock is not recorded as that peer's
   latest word (``refused_future`` counts them), so it cannot make the peer's later
   genuine messages look stale.

Readings where the paper is silent: one claim at a time per member, none while it
works (§3.1); an unanswered claim is re-published every ``resend_ticks`` ticks; an
offline peer's messages are ignored except ``done``.

Beyond seed 000, for members that run several behaviours at once (seed 004's
multitasking robots): ``capacity`` leaves may be worked at once (still one *pending*
claim at a time, so rule 4 is unchanged), and with ``auto_select=False`` the member
claims only the leaves it asks for with ``Want`` (its own allocator chooses, not
activation spreading). A snapshot then lists every leaf the member works.

Events and actions are frozen msgspec Structs (cheaper to make than dataclasses, and
a robot makes several per message); copy one with ``msgspec.structs.replace``.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum

from msgspec import Struct, field
from msgspec.structs import force_setattr, replace

from teamtree.planners.tasktree.activation import (
    node_statuses,
)
from teamtree.planners.tasktree.contention import (
    ContentionAvoider,
    PeerPotentials,
    PublishPotentials,
)
from teamtree.planners.tasktree.incremental import ActivationView, IncrementalSpread
from teamtree.planners.tasktree.interest import (
    Interest,
    InterestAck,
    InterestBook,
    PublishInterest,
    PublishInterestAck,
)
from teamtree.planners.tasktree.status import NodeStatus
from teamtree.planners.tasktree.tree import NodeKind, TaskTree
from teamtree.planners.tasktree.versioned import VersionedDict, VersionedSet

DOUBT_LIMIT = 3
"""Keyframes a leaf may be held back through on peers' reports of its done that the
world did not bear out (``TaskController._doubt``); past them such reports hold it
back no more."""

__all__ = [
    "AbortBehaviour",
    "BehaviourFinished",
    "Claim",
    "ClaimDecided",
    "ClaimReply",
    "ClaimRule",
    "ConnectionChanged",
    "ControllerAction",
    "EffectConfirmed",
    "EffectUndone",
    "Event",
    "EvidenceChanged",
    "NodeReport",
    "PauseBehaviour",
    "PeerState",
    "PotentialsChanged",
    "PresenceChanged",
    "PublishClaim",
    "PublishReply",
    "PublishSnapshot",
    "PublishTransition",
    "ResumeBehaviour",
    "Snapshot",
    "Stamp",
    "StartBehaviour",
    "TaskController",
    "Tick",
    "Transition",
    "Want",
    "WorldShown",
    "conflict_set",
]

Stamp = tuple[int, int, str]
"""A hybrid-logical-clock reading ``(wall_ms, logical, agent_id)``; tuples order it."""


class ClaimRule(StrEnum):
    """How two competing claims are ordered (rule 3 above)."""

    EARLIEST = "earliest"
    """Earliest stamp wins, ties by agent id (seed 000 Fig. 8)."""
    POTENTIAL = "potential"
    """Higher activation potential wins, then earliest stamp (an option, not the paper)."""


class PeerState(StrEnum):
    """A replier's own state for one node, as carried in a ``NodeReport``."""

    NONE = "none"
    """Nothing known: not done, nobody working, no claim of the replier's."""
    CLAIMED = "claimed"
    """The replier has a pending claim on the node (``stamp``, ``potential`` set)."""
    WORKING = "working"
    """``agent`` (the replier or a peer it heard from) executes the node."""
    DONE = "done"
    """The node is done (by anyone the replier knows of)."""


# ------------------------------------------------------------------ messages (events)


class Claim(Struct, frozen=True):
    """A member's announcement that it is about to activate ``node`` (§2.3 step 1).

    ``round`` counts re-asks of the same claim (rule 4); the stamp never changes.
    """

    claim_id: str
    node: str
    claimant: str
    stamp: Stamp
    potential: float = 0.0
    round: int = 0


class NodeReport(Struct, frozen=True):
    """One node's state as a replier knows it (§2.3 step 2)."""

    node: str
    state: PeerState
    agent: str | None = None
    stamp: Stamp | None = None
    potential: float = 0.0


class ClaimReply(Struct, frozen=True):
    """A peer's answer to ``claim_id``: reports for the claimed node and its conflict set.

    The first report is always for the claimed node itself (``none`` if nothing known).
    """

    claim_id: str
    node: str
    claimant: str
    replier: str
    reports: tuple[NodeReport, ...]
    round: int = 0


class Transition(Struct, frozen=True):
    """``agent`` moved ``node`` to ``status``: working, done, or inactive (released)."""

    node: str
    agent: str
    status: NodeStatus
    stamp: Stamp


class Snapshot(Struct, frozen=True):
    """What a member knows, published retained so a late joiner can catch up.

    ``done``: leaves done by anyone it knows of; ``working``: the leaves it executes
    (a leaf id or None is read as a tuple of zero or one).
    """

    agent: str
    stamp: Stamp
    done: tuple[str, ...]
    working: tuple[str, ...] | str | None = ()

    def __post_init__(self) -> None:
        w = self.working
        if w is None:
            force_setattr(self, "working", ())
        elif isinstance(w, str):
            force_setattr(self, "working", (w,))
        else:
            force_setattr(self, "working", tuple(w))


class Tick(Struct, frozen=True):
    """One cycle of the update loop (§2.2): may start a claim."""


class Want(Struct, frozen=True):
    """Claim ``node`` now (members with ``auto_select=False``; works for any member).

    Answered by the same ``ClaimDecided`` as a claim from a tick: at once and lost when
    the claim cannot start (another pending, at capacity, not synced, not allowed).
    """

    node: str
    potential: float | None = None


class PresenceChanged(Struct, frozen=True):
    """Presence of ``agent`` changed (retained ONLINE, or OFFLINE / Last Will)."""

    agent: str
    online: bool


class PotentialsChanged(Struct, frozen=True):
    """World facts: new activation potentials (eq. 1) for some leaves."""

    potentials: Mapping[str, float]


class BehaviourFinished(Struct, frozen=True):
    """The driver reports the behaviour on ``node`` ended (``succeeded`` or not)."""

    node: str
    succeeded: bool = True


class ConnectionChanged(Struct, frozen=True):
    """This member lost (``connected=False``) or regained the broker.

    On regaining it, ``online_peers`` are the peers presence says are online; the
    controller waits for each one's snapshot before claiming again.
    """

    connected: bool
    online_peers: frozenset[str] = frozenset()


class EffectConfirmed(Struct, frozen=True):
    """The world (the driver's observation) shows ``node``'s effect, e.g. its object at
    its goal: the leaf is done whoever brought it there ("done means done")."""

    node: str


class EvidenceChanged(Struct, frozen=True):
    """The world's keyframe says which leaves it can show done (``evidence_leaves``,
    rule 7). A leaf that left the set is done on a peer's word again: the peer dones
    it was refused meanwhile are believed now."""

    leaves: frozenset[str]


class WorldShown(Struct, frozen=True):
    """A keyframe of this member's world was observed (every object), after the
    ``EffectConfirmed`` and ``EffectUndone`` it showed: the leaves held back on a
    peer's unconfirmed done (rule 7's doubt) may be claimed again."""


class EffectUndone(Struct, frozen=True):
    """The world shows ``node``'s effect gone after it was done, e.g. its object moved
    away from its goal: the leaf is open again ("undone means undone")."""

    node: str


Event = (
    Tick
    | Want
    | Claim
    | ClaimReply
    | Transition
    | Snapshot
    | PresenceChanged
    | PotentialsChanged
    | BehaviourFinished
    | ConnectionChanged
    | EffectConfirmed
    | EffectUndone
    | EvidenceChanged
    | WorldShown
    | PeerPotentials
    | Interest
    | InterestAck
)

# ------------------------------------------------------------------ actions


class PublishClaim(Struct, frozen=True):
    """Publish ``claim`` to every peer, or only to ``to`` when set (QoS 1)."""

    claim: Claim
    to: str | None = None


class PublishReply(Struct, frozen=True):
    """Send ``reply`` to the claimant (``reply.claimant``), QoS 1."""

    reply: ClaimReply


class PublishTransition(Struct, frozen=True):
    """Publish this member's node transition to every peer (QoS 1)."""

    transition: Transition


class PublishSnapshot(Struct, frozen=True):
    """Publish ``snapshot`` retained, replacing the previous one."""

    snapshot: Snapshot


class StartBehaviour(Struct, frozen=True):
    """Tell the driver to execute the behaviour of ``node``."""

    node: str


class PauseBehaviour(Struct, frozen=True):
    """Tell the driver to pause ``node`` (the broker is lost; fencing)."""

    node: str


class ResumeBehaviour(Struct, frozen=True):
    """Tell the driver to resume the paused ``node`` (its re-claim won)."""

    node: str


class AbortBehaviour(Struct, frozen=True):
    """Tell the driver to cancel ``node``: someone else took or finished it."""

    node: str
    reason: str


class ClaimDecided(Struct, frozen=True):
    """Informational: ``claim`` was won or lost, and why."""

    claim: Claim
    won: bool
    reason: str


ControllerAction = (
    PublishClaim
    | PublishReply
    | PublishTransition
    | PublishSnapshot
    | StartBehaviour
    | PauseBehaviour
    | ResumeBehaviour
    | AbortBehaviour
    | ClaimDecided
    | PublishPotentials
    | PublishInterest
    | PublishInterestAck
)
"""What a ``TaskController`` asks its agent to do: publish, drive a behaviour, or
report how a claim was decided."""


def conflict_set(tree: TaskTree, leaf: str) -> frozenset[str]:
    """``leaf`` plus every leaf in another branch of an OR above it (rule 1 above)."""
    out = {leaf}
    child = leaf
    for anc in tree.ancestors(leaf):
        node = tree[anc]
        if node.kind is NodeKind.OR:
            for c in node.children:
                if c.id != child:
                    out.update(tree.leaf_ids(c.id))
        child = anc
    return frozenset(out)


class _Pending(Struct):
    claim: Claim
    replies: dict[str, int] = field(default_factory=dict)  # replier -> highest round
    need: dict[str, int] = field(default_factory=dict)  # replier -> round required
    lost: str | None = None
    age: int = 0
    reclaim: bool = False
    resends: int = 0
    resend_at: int = 0  # age of the next resend (with contention avoidance)


class TaskController:
    """One member's copy of the task tree, with activation spreading and the peer rule.

    Parameters: the ``tree``; this member's id ``me``; ``online_peers`` known at start;
    ``await_snapshots`` (a late joiner: claim nothing before every online peer's
    snapshot arrived); ``potentials`` and ``default_potential`` (eq. 1 values per
    leaf); ``rule`` (``ClaimRule``); ``inhibit_ticks`` and ``inhibit_factor`` (how long
    and how much a lost claim lowers the leaf's activation); ``resend_ticks``;
    ``capacity`` (leaves worked at once, 1 for seed 000 robots); ``auto_select``
    (claim on ticks by activation spreading; False: only what ``Want`` asks for);
    ``evidence_leaves`` (leaves done only on the world's evidence, rule 7);
    ``release_hold_ms`` and ``released_at_once`` (how long a peer's release waits, and
    whose does not, rule 8); ``max_skew_ms`` (how far ahead a peer's stamp may be,
    rule 9); ``takeover_ms`` and ``wait_clock`` (rule 6: how long a Will's leaves stay
    taken, and the monotonic ms clock that wait is measured on; None: the stamps' wall
    part).

    ``handle`` never raises on odd input from peers (unknown nodes are ignored).
    """

    def __init__(
        self,
        tree: TaskTree,
        me: str,
        *,
        online_peers: Iterable[str] = (),
        await_snapshots: bool = False,
        potentials: Mapping[str, float] | None = None,
        default_potential: float = 1.0,
        rule: ClaimRule | str = ClaimRule.EARLIEST,
        inhibit_ticks: int = 10,
        inhibit_factor: float = 0.0,
        resend_ticks: int = 50,
        dedup_window: int = 4096,
        capacity: int = 1,
        auto_select: bool = True,
        takeover_ms: int = 0,
        wait_clock: Callable[[], int] | None = None,
        avoid_contention: bool = False,
        declared_interest: bool = False,
        interest_prefetch: int = 2,
        seed: int | str | None = None,
        evidence_leaves: Iterable[str] = (),
        release_hold_ms: int = 0,
        released_at_once: Iterable[str] = (),
        max_skew_ms: int = 5_000,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity {capacity}; expected 1 or more")
        if interest_prefetch < 0:
            raise ValueError(f"interest_prefetch {interest_prefetch}; expected 0 or more")
        self.tree = tree
        self.capacity = capacity
        self.auto_select = auto_select
        self.takeover_ms = takeover_ms
        self._wait_clock = wait_clock
        self._lapsing: dict[str, int] = {}
        """Offline holders -> when (``_wait_ms``) their leaves may be taken over."""
        self.evidence_leaves = frozenset(evidence_leaves)
        self.release_hold_ms = release_hold_ms
        self.released_at_once = frozenset(released_at_once)
        self._releasing: dict[str, tuple[str, int]] = {}
        """Leaves a peer said it released -> (that peer, when (``_wait_ms``) they are free)."""
        self.max_skew_ms = max_skew_ms
        self.refused_future = 0
        """Peer stamps more than ``max_skew_ms`` ahead, not recorded (rule 9)."""
        self.unconfirmed = 0
        """Peer reports of done that the world did not show (rule 7)."""
        self._refused_done: set[str] = set()
        """Evidence leaves a peer said were done, not believed (``EvidenceChanged``)."""
        self._doubted = VersionedSet()
        """Evidence leaves held back from selection until the next ``WorldShown``: a
        peer said they were done and this member's world has not shown it yet."""
        self._doubt_misses: dict[str, int] = {}
        """Per leaf: keyframes that came after a doubt and did not show it done."""
        self._keyframes = 0  # WorldShown events seen: none, no doubt (nothing frees it)
        self.me = me
        self.rule = ClaimRule(rule)
        self.default_potential = default_potential
        self.inhibit_ticks = inhibit_ticks
        self.inhibit_factor = inhibit_factor
        self.resend_ticks = resend_ticks
        self._dedup_window = dedup_window
        self.potentials: dict[str, float] = VersionedDict(potentials or {})
        self.peers_online: set[str] = set(online_peers) - {me}
        self.done: set[str] = VersionedSet()
        self.working: dict[str, tuple[str, Stamp]] = VersionedDict()
        self.mine: dict[str, None] = {}
        """The leaves this member works on, in the order it won them."""
        self._paused: set[str] = set()
        self.connected = True
        self._awaiting: set[str] = set(self.peers_online) if await_snapshots else set()
        self._pending: _Pending | None = None
        self._inhibited: dict[str, int] = {}
        self._seen: dict[tuple[str, str], Stamp] = {}
        self._seen_claims: OrderedDict[tuple[str, int], None] = OrderedDict()
        self._conflicts: dict[str, frozenset[str]] = {}
        self._claims_made = 0
        self._last_stamp: Stamp | None = None
        self._acts: ActivationView | None = None
        # the activation view _select last read, and this member's positive leaf values
        # in it: an idle member selects on every tick, and the view changes far less
        self._values: tuple[ActivationView | None, int, dict[str, float]] = (None, 0, {})
        self._spread = IncrementalSpread(tree)
        self._acts_key: tuple | None = None
        self._done_version: int | None = None  # mission_done's cache
        self._open: tuple[tuple[int, int] | None, frozenset[str]] = (None, frozenset())
        """``_open_leaves``' cache: (done and working versions, the open leaves)."""
        self._root_satisfied = False
        self.avoider: ContentionAvoider | None = None
        """With ``avoid_contention``: peers' potentials, patience, backoff
        (``contention.py``); the claim rule itself is unchanged."""
        if avoid_contention:
            self.avoider = ContentionAvoider(me, random.Random(me if seed is None else seed))
        self.interest: InterestBook | None = InterestBook(me) if declared_interest else None
        """With ``declared_interest``: this member's and its peers' declarations
        (``interest.py``); a claim then asks only the peers whose declaration meets it."""
        self.interest_prefetch = interest_prefetch
        self._declared_age = 0

    # ----------------------------------------------------------- read-only views

    @property
    def my_working(self) -> str | None:
        """The first leaf this member works on (the only one when ``capacity`` is 1)."""
        return next(iter(self.mine), None)

    @property
    def paused(self) -> bool:
        """True while this member's behaviours are paused (broker lost, not re-claimed)."""
        return bool(self._paused)

    @property
    def paused_leaves(self) -> frozenset[str]:
        """The leaves whose behaviours are paused (broker lost, not re-claimed)."""
        return frozenset(self._paused)

    @property
    def synced(self) -> bool:
        """True once every awaited peer snapshot arrived (always, if none awaited)."""
        return not self._awaiting

    @property
    def pending_claim(self) -> Claim | None:
        """The claim waiting for replies, if any."""
        return self._pending.claim if self._pending else None

    @property
    def mission_done(self) -> bool:
        """True when the root's constraint is satisfied in this copy. That depends on
        the done leaves only, so it is recomputed when they change: the agent asks
        after every event, and most change only who works on what."""
        version = self.done.version  # type: ignore[attr-defined]
        if version != self._done_version:
            self._done_version = version
            self._root_satisfied = self.activations().satisfied(self.tree.root.id)
        return self._root_satisfied

    def activations(self) -> ActivationView:
        """Activation level and potential of every node now (§2.2), as a mapping.

        Cached on what spreading reads (done, working, inhibited leaves, potentials):
        every event asks, and most change none of it. Done, working and the potentials
        count their changes (``versioned.py``), so the check costs no pass over the
        tree, and spreading is kept up to date leaf by leaf (``incremental.py``; the
        same results as ``spread_activation``). Read-only.
        """
        key = (
            self.done.version,  # type: ignore[attr-defined]
            self.working.version,  # type: ignore[attr-defined]
            frozenset(self._inhibited),
            self.potentials.version,  # type: ignore[attr-defined]
        )
        if key != self._acts_key or self._acts is None:
            if key[:2] != (self._acts_key or (None, None))[:2]:
                self._spread.apply(self.done, self.working.keys())
            inhib = {n: self.inhibit_factor for n in self._inhibited}
            self._acts = self._spread.view(
                self.potentials, default_potential=self.default_potential, inhibition=inhib
            )
            self._acts_key = key
        return self._acts

    def statuses(self) -> dict[str, NodeStatus]:
        """Every node's status in this copy (see ``NodeStatus``)."""
        return node_statuses(self.tree, self.activations(), list(self.mine))

    def snapshot(self, now: Stamp) -> Snapshot:
        """This member's retained snapshot."""
        return Snapshot(self.me, now, tuple(sorted(self.done)), tuple(self.mine))

    def conflicts(self, leaf: str) -> frozenset[str]:
        """Cached ``conflict_set(self.tree, leaf)``."""
        c = self._conflicts.get(leaf)
        if c is None:
            c = self._conflicts[leaf] = conflict_set(self.tree, leaf)
        return c

    # ----------------------------------------------------------- the one entry point

    def handle(self, event: Event, now: Stamp) -> list[ControllerAction]:
        """Consume one event at HLC reading ``now``; return the actions to carry out."""
        self._last_stamp = now
        out: list[ControllerAction] = []
        match event:
            case Tick():
                self._on_tick(now, out)
            case Want():
                self._on_want(event, now, out)
            case Claim():
                self._on_claim(event, now, out)
            case ClaimReply():
                self._on_reply(event, now, out)
            case Transition():
                self._on_transition(event, now, out)
            case Snapshot():
                self._on_snapshot(event, now, out)
            case PresenceChanged():
                self._on_presence(event, now, out)
            case PotentialsChanged():
                pots = self.potentials
                if any(pots.get(k) != v for k, v in event.potentials.items()):
                    pots.update(event.potentials)  # unchanged values: no new spreading
                if self.avoider is not None:
                    self.avoider.potentials_changed()
            case PeerPotentials():
                if self.avoider is not None and event.agent in self.peers_online:
                    self.avoider.on_peer(event)
            case BehaviourFinished():
                self._on_finished(event, now, out)
            case ConnectionChanged():
                self._on_connection(event, now, out)
            case EffectConfirmed():
                self._on_effect(event, now, out)
            case EffectUndone():
                self._on_undone(event, now, out)
            case EvidenceChanged():
                self._on_evidence(event, now, out)
            case WorldShown():
                self._on_world_shown()
            case Interest():
                self._on_interest(event, now, out)
            case InterestAck():
                self._on_interest_ack(event, now, out)
            case _:
                raise TypeError(f"TaskController cannot handle {type(event).__name__}")
        return out

    # ----------------------------------------------------------- handlers

    def _on_tick(self, now: Stamp, out: list[ControllerAction]) -> None:
        if self._lapsing:
            self._release_lapsed(now)
        if self._releasing:
            self._release_held(now)
        for node in list(self._inhibited):
            self._inhibited[node] -= 1
            if self._inhibited[node] <= 0:
                del self._inhibited[node]
                self._held_changed()
        if not self.connected or not self.synced:
            return
        if self.avoider is not None:
            pub = self.avoider.maybe_publish(
                self.potentials,
                len(self.mine) < self.capacity,
                self._open_leaves,
                len(self.peers_online) + 1,
                held=self._inhibited,
            )
            if pub is not None:
                out.append(pub)
        book = self.interest
        if book is not None and book.mine is None and self.auto_select:
            # the first declaration: this member's best leaves by potential, selectable
            # or not yet, so most later claims find their leaf declared already
            pots = self.potentials
            best = sorted(
                (n for n in self.tree.leaves if n not in self.done),
                key=lambda n: (-pots.get(n, self.default_potential), n),
            )
            self._declare(best[: self.interest_prefetch + 1], now, out)
            return
        if book is not None and book.mine is not None:
            self._declared_age += 1
            if self.resend_ticks > 0 and self._declared_age % self.resend_ticks == 0:
                for q in book.unacknowledged(self.peers_online):
                    out.append(PublishInterest(book.mine, to=q))
        if self._pending is not None:
            self._pending.age += 1
            p = self._pending
            if self.resend_ticks > 0 and self._resend_due(p):
                for q in sorted(self._needed(p)):
                    if p.replies.get(q, -1) < p.need.get(q, 0):
                        out.append(PublishClaim(replace(p.claim, round=p.need.get(q, 0)), to=q))
            self._decide(now, out)
            return
        if self._paused:  # reconnected and synced: re-claim before resuming
            leaf = next(n for n in self.mine if n in self._paused)
            if self._declared(leaf, now, out):
                self._start_claim(leaf, now, out, reclaim=True)
            return
        if not self.auto_select or len(self.mine) >= self.capacity:
            return
        leaf = self._select()
        if leaf is not None and self._declared(leaf, now, out):
            self._start_claim(leaf, now, out)

    def _declared(self, leaf: str, now: Stamp, out: list[ControllerAction]) -> bool:
        """Whether ``leaf`` may be claimed now as far as declared interest goes (I1 of
        ``interest.py``): always without it; else when ``leaf`` is declared and every
        online peer acknowledged the declaration. An undeclared leaf is declared here,
        with this member's ``interest_prefetch`` next best selectable leaves."""
        book = self.interest
        if book is None:
            return True
        if leaf not in book.leaves or book.mine is None:
            acts = self.activations()
            others = sorted(
                (n for n in acts.selectable if n != leaf and n not in book.leaves),
                key=lambda n: (-acts.leaf_value(n), n),
            )
            self._declare([leaf, *others[: self.interest_prefetch]], now, out)
            return False
        return book.ready(self.peers_online)

    def _declare(self, leaves: Iterable[str], now: Stamp, out: list[ControllerAction]) -> None:
        assert self.interest is not None
        out.append(PublishInterest(self.interest.declare(leaves, now)))
        self._declared_age = 0

    def _needed(self, p: _Pending) -> set[str]:
        """The online peers whose reply the pending claim needs (rule 4, I2)."""
        book = self.interest
        if book is None:
            return self.peers_online
        conflicts = self.conflicts(p.claim.node)
        return {q for q in self.peers_online if q in p.need or book.interested(q, conflicts)}

    def _resend_due(self, p: _Pending) -> bool:
        """Whether a pending claim's unanswered peers are asked again on this tick:
        every ``resend_ticks``, or with contention avoidance after a jittered,
        doubling wait (``ContentionAvoider.resend_after``)."""
        if self.avoider is None:
            return p.age % self.resend_ticks == 0
        if p.resend_at == 0:
            p.resend_at = self.avoider.resend_after(self.resend_ticks, 0)
        if p.age < p.resend_at:
            return False
        p.resends += 1
        p.resend_at = p.age + self.avoider.resend_after(self.resend_ticks, p.resends)
        return True

    def _open_leaves(self) -> frozenset[str]:
        """The leaves neither done nor worked on in this member's view: the ones whose
        potentials it publishes (the best of them), selectable now or once their
        predecessors are done, so peers know its values before their views agree.
        The same set object until a leaf is done or taken (asked every idle tick)."""
        done, working = self.done, self.working
        key = (done.version, working.version)  # type: ignore[attr-defined]
        if self._open[0] != key:
            leaves = self.tree.leaves
            self._open = (key, frozenset(n for n in leaves if n not in done and n not in working))
        return self._open[1]

    def _select(self) -> str | None:
        """The leaf to claim on this tick: the best by activation (§2.2), or with
        contention avoidance the one the team's matching gives this member (or None:
        wait for a better-placed idle peer to claim first)."""
        acts = self.activations()
        seen, doubt, mine = self._values
        doubted = self._doubted
        if seen is not acts or doubt != doubted.version:  # its values (read-only)
            values = ((leaf, acts.leaf_value(leaf)) for leaf in acts.selectable)
            mine = {leaf: v for leaf, v in values if v > 0.0 and leaf not in doubted}
            self._values = (acts, doubted.version, mine)
        if self.avoider is None:  # the highest, ties to the leftmost (select_behaviour)
            index = self._spread.index
            return max(mine, key=lambda leaf: (mine[leaf], -index[leaf]), default=None)
        busy = {agent for agent, _s in self.working.values()}
        return self.avoider.select(mine, self.peers_online, busy, id(acts))

    def _on_want(self, want: Want, now: Stamp, out: list[ControllerAction]) -> None:
        reason = ""
        if want.node not in self.tree.nodes or not self.tree[want.node].is_leaf:
            reason = "not a leaf of this tree"
        elif not self.connected or not self.synced:
            reason = "not connected and synced"
        elif self._pending is not None:
            reason = "another claim is pending"
        elif self._paused:
            reason = "paused"
        elif want.node in self.mine:
            reason = "already working on it"
        elif len(self.mine) >= self.capacity:
            reason = "at capacity"
        elif not self._allowed(want.node):
            reason = "not allowed by the tree or taken by a peer"
        elif not self._declared(want.node, now, out):
            reason = "its declaration is not acknowledged yet; want it again"
        if reason:
            claim = Claim("", want.node, self.me, now, want.potential or 0.0)
            out.append(ClaimDecided(claim, False, reason))
            return
        self._start_claim(want.node, now, out, potential=want.potential)

    def _start_claim(
        self,
        leaf: str,
        now: Stamp,
        out: list[ControllerAction],
        reclaim: bool = False,
        potential: float | None = None,
    ) -> None:
        self._claims_made += 1
        if potential is None:
            potential = float(self.potentials.get(leaf, self.default_potential))
        claim = Claim(
            claim_id=f"{self.me}@{now[0]}.{now[1]}#{self._claims_made}",
            node=leaf,
            claimant=self.me,
            stamp=now,
            potential=float(potential),
        )
        self._pending = p = _Pending(claim, reclaim=reclaim)
        if self.interest is None:
            out.append(PublishClaim(claim))
        else:  # only the peers whose declaration meets it (I2), each asked once
            for q in sorted(self._needed(p)):
                p.need[q] = 0
                out.append(PublishClaim(claim, to=q))
        self._decide(now, out)

    def _key(self, stamp: Stamp, potential: float) -> tuple:
        if self.rule is ClaimRule.POTENTIAL:
            return (-potential, stamp)
        return (stamp,)

    def allowed(self, leaf: str) -> bool:
        """True when this member may work on ``leaf`` now: not done, not worked by a
        peer, activated by the tree, no OR alternative committed elsewhere."""
        return self._allowed(leaf)

    def _allowed(self, leaf: str) -> bool:
        if leaf in self.done:
            return False
        w = self.working.get(leaf)
        if w is not None and w[0] != self.me:
            return False
        acts = self.activations()
        if acts.level(leaf) <= 0.0:
            return False
        # an OR branch committed elsewhere (working by another member) also forbids it
        return all(
            not (n in self.done or (n in self.working and self.working[n][0] != self.me))
            for n in self.conflicts(leaf)
            if n != leaf
        )

    def _decide(self, now: Stamp, out: list[ControllerAction]) -> None:
        p = self._pending
        if p is None:
            return
        leaf = p.claim.node
        if p.lost is None and not self._allowed(leaf):
            p.lost = "no longer allowed by the tree or taken by a peer"
        if p.lost is None and not self.connected:
            p.lost = "disconnected"
        if p.lost is not None:
            self._pending = None
            out.append(ClaimDecided(p.claim, False, p.lost))
            if p.reclaim:
                self._abort_mine(leaf, p.lost, now, out)
            elif self.avoider is not None:
                self._inhibited[leaf] = self.avoider.lost(self.inhibit_ticks)
                self._held_changed(added=True)
            else:
                self._inhibited[leaf] = self.inhibit_ticks
            return
        if any(p.replies.get(q, -1) < p.need.get(q, 0) for q in self._needed(p)):
            return
        if self.interest is not None and not self.interest.ready(self.peers_online):
            return  # a peer that came online has not acknowledged the declaration (I1)
        self._pending = None
        if self.avoider is not None:
            self.avoider.won()
        why = "every online peer" if self.interest is None else "every online peer it concerns"
        out.append(ClaimDecided(p.claim, True, f"{why} answered, none beats it"))
        self.mine[leaf] = None
        self.working[leaf] = (self.me, now)
        self._releasing.pop(leaf, None)
        if self._inhibited.pop(leaf, None) is not None:
            self._held_changed()
        if p.reclaim:
            self._paused.discard(leaf)
            out.append(ResumeBehaviour(leaf))
        else:
            out.append(StartBehaviour(leaf))
        out.append(PublishTransition(Transition(leaf, self.me, NodeStatus.WORKING, now)))
        out.append(PublishSnapshot(self.snapshot(now)))

    def _abort_mine(self, leaf: str, reason: str, now: Stamp, out: list[ControllerAction]) -> None:
        self.mine.pop(leaf, None)
        self._paused.discard(leaf)
        if self.working.get(leaf, ("",))[0] == self.me:
            del self.working[leaf]
        out.append(AbortBehaviour(leaf, reason))
        out.append(PublishTransition(Transition(leaf, self.me, NodeStatus.INACTIVE, now)))
        out.append(PublishSnapshot(self.snapshot(now)))

    def _on_claim(self, claim: Claim, now: Stamp, out: list[ControllerAction]) -> None:
        if claim.claimant == self.me or claim.node not in self.tree.nodes:
            return
        if not self.tree[claim.node].is_leaf:
            return
        duplicate = (claim.claim_id, claim.round) in self._seen_claims
        if not duplicate:
            self._seen_claims[(claim.claim_id, claim.round)] = None
            if len(self._seen_claims) > self._dedup_window:
                self._seen_claims.popitem(last=False)
        conflicts = self.conflicts(claim.node)
        reports = [self._report(claim.node)]
        for n in sorted(conflicts - {claim.node}):
            r = self._report(n)
            if r.state is not PeerState.NONE:
                reports.append(r)
        out.append(
            PublishReply(
                ClaimReply(
                    claim.claim_id,
                    claim.node,
                    claim.claimant,
                    self.me,
                    tuple(reports),
                    claim.round,
                )
            )
        )
        p = self._pending
        if (
            not duplicate
            and p is not None
            and p.lost is None
            and p.claim.node in conflicts
            and self._key(claim.stamp, claim.potential)
            < self._key(p.claim.stamp, p.claim.potential)
        ):
            # rule 4: the sender's earlier answer may predate its claim; ask again
            q = claim.claimant
            rnd = max(p.need.get(q, 0), p.replies.get(q, -1)) + 1
            p.need[q] = rnd
            out.append(PublishClaim(replace(p.claim, round=rnd), to=q))

    def _report(self, node: str) -> NodeReport:
        if node in self.done:
            return NodeReport(node, PeerState.DONE)
        w = self.working.get(node)
        if w is not None:
            return NodeReport(node, PeerState.WORKING, agent=w[0], stamp=w[1])
        p = self._pending
        if p is not None and p.claim.node == node and p.lost is None:
            return NodeReport(
                node, PeerState.CLAIMED, self.me, p.claim.stamp, potential=p.claim.potential
            )
        return NodeReport(node, PeerState.NONE)

    def _on_reply(self, reply: ClaimReply, now: Stamp, out: list[ControllerAction]) -> None:
        if reply.replier == self.me:
            return
        p = self._pending
        mine = p is not None and reply.claim_id == p.claim.claim_id
        for r in reply.reports:
            if r.node not in self.tree.nodes:
                continue
            if r.state is PeerState.DONE:
                self._mark_done(r.node, now, out)
            elif (
                r.state is PeerState.WORKING
                and r.agent is not None
                and r.agent != self.me
                and r.stamp is not None
                and (r.agent in self.peers_online)
                and r.node not in self.done
                and self._seen.get((r.agent, r.node), _ZERO) < r.stamp
                and not self._future(r.stamp, now)
            ):
                self._seen[(r.agent, r.node)] = r.stamp
                self._set_working(r.node, r.agent, r.stamp)
            if not mine or p is None or p.lost is not None:
                continue
            if r.node not in self.conflicts(p.claim.node):
                continue
            if r.state is PeerState.DONE:
                p.lost = f"{reply.replier} reports {r.node} done"
            elif r.state is PeerState.WORKING and r.agent != self.me:
                p.lost = f"{reply.replier} reports {r.node} worked on by {r.agent}"
            elif (
                r.state is PeerState.CLAIMED
                and r.agent not in (None, self.me)
                and r.stamp is not None
                and self._key(r.stamp, r.potential) < self._key(p.claim.stamp, p.claim.potential)
            ):
                p.lost = f"{r.agent}'s claim on {r.node} is earlier"
        if mine and p is not None:
            p.replies[reply.replier] = max(p.replies.get(reply.replier, -1), reply.round)
        self._decide(now, out)

    def _mark_done(self, node: str, now: Stamp, out: list[ControllerAction]) -> None:
        """A peer says ``node`` is done. Not believed for a leaf this member works on:
        its own body (``BehaviourFinished``) or the world (``EffectConfirmed``) decides
        that ("done means done"; a forged or mistaken report aborts nothing). A paused
        leaf (this member lost the broker meanwhile) is the exception: a peer may have
        taken it over and finished it, so it is aborted rather than resumed."""
        if node in self.done or (node in self.mine and node not in self._paused):
            return
        if node in self.evidence_leaves:  # rule 7: the world says, not a peer
            self.unconfirmed += 1
            self._refused_done.add(node)
            self._doubt(node)
            return
        self._set_done(node)
        if node in self.mine:
            del self.mine[node]
            self._paused.discard(node)
            out.append(AbortBehaviour(node, "done by a peer"))

    def _doubt(self, node: str) -> None:
        """Hold ``node`` back from selection until this member's next keyframe: a peer
        says it is done, which this member's world will show if it is (a claim on it
        now would only lose to that peer's report, and at 64 robots most claims did).
        At most ``DOUBT_LIMIT`` keyframes that did not show it done, so reports that
        the world never bears out (a forged or mistaken done) delay a leaf by a few
        keyframes, never for good. Only once keyframes come (``WorldShown``)."""
        if (
            not self._keyframes
            or node in self._doubted
            or self._doubt_misses.get(node, 0) >= DOUBT_LIMIT
        ):
            return
        self._doubted.add(node)

    def _on_world_shown(self) -> None:
        self._keyframes += 1
        if not self._doubted:
            return
        misses = self._doubt_misses
        for node in self._doubted:
            if node not in self.done:
                misses[node] = misses.get(node, 0) + 1
        self._doubted.clear()

    def _set_done(self, node: str) -> None:
        self.done.add(node)
        self.working.pop(node, None)
        self._releasing.pop(node, None)
        if self._inhibited.pop(node, None) is not None:
            self._held_changed()

    def _held_changed(self, *, added: bool = False) -> None:
        """The leaves this member holds back (``_inhibited``) changed: its published
        potentials leave them out (``ContentionAvoider.maybe_publish``), and a leaf
        newly held back is published at the next tick."""
        if self.avoider is not None:
            if added:
                self.avoider.held_back()
            else:
                self.avoider.potentials_changed()

    def _on_transition(self, t: Transition, now: Stamp, out: list[ControllerAction]) -> None:
        if t.agent == self.me or t.node not in self.tree.nodes:
            return
        key = (t.agent, t.node)
        if self._seen.get(key, _ZERO) >= t.stamp:
            return  # duplicate or older than what we know
        if self._future(t.stamp, now):
            return  # rule 9: it would make the peer's genuine later word look stale
        self._seen[key] = t.stamp
        if t.status is NodeStatus.DONE:
            self._mark_done(t.node, now, out)  # a done not believed is a release
        if t.status is NodeStatus.WORKING:
            if t.agent in self.peers_online and t.node not in self.done:
                self._set_working(t.node, t.agent, t.stamp)
                if t.node in self._paused:
                    self._abort_mine(t.node, f"taken by {t.agent}", now, out)
        elif self.working.get(t.node, ("",))[0] == t.agent:
            self._release(t.node, t.agent, now)
        self._decide(now, out)

    def _future(self, stamp: Stamp, now: Stamp) -> bool:
        """Whether a peer's ``stamp`` is more than ``max_skew_ms`` ahead (rule 9)."""
        if stamp[0] - now[0] > self.max_skew_ms:
            self.refused_future += 1
            return True
        return False

    def _set_working(self, node: str, agent: str, stamp: Stamp) -> None:
        """``agent`` works on ``node``: evidence that cancels any release of it."""
        self.working[node] = (agent, stamp)
        self._releasing.pop(node, None)

    def _release(self, node: str, agent: str, now: Stamp) -> None:
        """``agent`` says it no longer works on ``node``: free it once its lease must
        have lapsed (rule 8), at once without a hold."""
        if (
            self.release_hold_ms <= 0
            or agent in self.released_at_once
            or node not in self.evidence_leaves  # nothing in the world to double-run
        ):
            del self.working[node]
            return
        held = self._releasing.get(node)
        if held is None or held[0] != agent:
            self._releasing[node] = (agent, self._wait_ms(now) + self.release_hold_ms)

    def _release_held(self, now: Stamp) -> None:
        """Free the released leaves whose hold is over (rule 8)."""
        wait_now = self._wait_ms(now)
        for node, (agent, at) in list(self._releasing.items()):
            if at <= wait_now:
                del self._releasing[node]
                if self.working.get(node, ("",))[0] == agent:
                    del self.working[node]

    def _on_snapshot(self, s: Snapshot, now: Stamp, out: list[ControllerAction]) -> None:
        if s.agent == self.me:
            return
        # a snapshot lists every done leaf, so usually nothing new: one superset test
        # in C, not a call per leaf (a big team's robot reads thousands of long
        # snapshots a second); leaves already done change nothing in _mark_done
        if not self.done.issuperset(s.done):
            for node in s.done:
                if node in self.tree.nodes:
                    self._mark_done(node, now, out)
        if s.agent in self.peers_online and not self._future(s.stamp, now):
            for node, (agent, _stamp) in list(self.working.items()):
                if (
                    agent == s.agent
                    and node not in s.working
                    and self._seen.get((agent, node), _ZERO) < s.stamp
                ):
                    self._release(node, agent, now)
            for w in s.working:
                if (
                    w in self.tree.nodes
                    and w not in self.done
                    and self._seen.get((s.agent, w), _ZERO) < s.stamp
                ):
                    self._seen[(s.agent, w)] = s.stamp
                    self._set_working(w, s.agent, s.stamp)
                    if w in self._paused:
                        self._abort_mine(w, f"taken by {s.agent}", now, out)
        self._awaiting.discard(s.agent)
        self._decide(now, out)

    def _on_presence(self, ev: PresenceChanged, now: Stamp, out: list[ControllerAction]) -> None:
        if ev.agent == self.me:
            return
        if ev.online:
            self._lapsing.pop(ev.agent, None)
            book = self.interest
            if book is not None:  # it must acknowledge the declaration anew (I3)
                book.forget_ack(ev.agent)
                if book.mine is not None:
                    out.append(PublishInterest(book.mine, to=ev.agent))
            p = self._pending
            if ev.agent not in self.peers_online:
                self.peers_online.add(ev.agent)
                if p is not None:  # it never saw our claim: ask it too
                    out.append(PublishClaim(p.claim, to=ev.agent))
            elif p is not None and p.replies.get(ev.agent, -1) < p.need.get(ev.agent, 0):
                # it announced itself again (a reconnect, perhaps to another broker node):
                # our claim or its reply may have been lost with its old session, so ask
                # now rather than after the backoff
                again = replace(p.claim, round=p.need.get(ev.agent, 0))
                out.append(PublishClaim(again, to=ev.agent))
            return
        self.peers_online.discard(ev.agent)
        self._awaiting.discard(ev.agent)
        if self.avoider is not None:
            self.avoider.forget(ev.agent)
        # Last Will: release its work so another completes it, once its lease lapsed
        self._lapsing.setdefault(ev.agent, self._wait_ms(now) + self.takeover_ms)
        self._release_lapsed(now)
        self._decide(now, out)

    def _wait_ms(self, now: Stamp) -> int:
        """Now on the clock takeover waits are measured on (``wait_clock``)."""
        return now[0] if self._wait_clock is None else self._wait_clock()

    def _release_lapsed(self, now: Stamp) -> None:
        """Release the leaves of offline holders whose lease must have lapsed."""
        for agent, at in list(self._lapsing.items()):
            if agent in self.peers_online:
                del self._lapsing[agent]
            elif at <= self._wait_ms(now):
                del self._lapsing[agent]
                for node, (holder, _s) in list(self.working.items()):
                    if holder == agent:
                        del self.working[node]

    def _on_effect(self, ev: EffectConfirmed, now: Stamp, out: list[ControllerAction]) -> None:
        if ev.node not in self.tree.nodes or ev.node in self.done:
            return
        self._doubt_misses.pop(ev.node, None)  # the world bore a report out: doubt anew
        if ev.node in self.mine:  # done while ours runs: stop the body, count it done
            self._on_finished(BehaviourFinished(ev.node, True), now, out)
            out.append(AbortBehaviour(ev.node, "the world shows it done"))
            return
        self._set_done(ev.node)  # no transition: this member did not do it
        out.append(PublishSnapshot(self.snapshot(now)))
        self._decide(now, out)

    def _on_evidence(self, ev: EvidenceChanged, now: Stamp, out: list[ControllerAction]) -> None:
        """New evidence leaves; the refused peer dones of those that left the set count
        now (e.g. an AGV's load the world turned out not to show)."""
        self.evidence_leaves = frozenset(ev.leaves)
        freed = [n for n in self._refused_done if n not in self.evidence_leaves]
        if not freed:
            return
        self._refused_done.difference_update(freed)
        before = len(self.done)
        for node in sorted(freed):
            self._mark_done(node, now, out)
        if len(self.done) != before:
            out.append(PublishSnapshot(self.snapshot(now)))
            self._decide(now, out)

    def _on_undone(self, ev: EffectUndone, now: Stamp, out: list[ControllerAction]) -> None:
        """The world shows a done leaf's effect gone: open it again (rule 7)."""
        if ev.node not in self.done:
            return
        self.done.discard(ev.node)
        out.append(PublishSnapshot(self.snapshot(now)))
        self._decide(now, out)

    def _on_finished(self, ev: BehaviourFinished, now: Stamp, out: list[ControllerAction]) -> None:
        if ev.node not in self.mine:
            return
        del self.mine[ev.node]
        self._paused.discard(ev.node)
        p = self._pending
        if p is not None and p.reclaim and p.claim.node == ev.node:
            self._pending = None  # finished while paused: nothing left to re-claim
        if ev.succeeded:
            self.done.add(ev.node)
            self.working.pop(ev.node, None)
            status = NodeStatus.DONE
        else:
            self.working.pop(ev.node, None)
            self._inhibited[ev.node] = self.inhibit_ticks
            self._held_changed(added=True)
            status = NodeStatus.INACTIVE
        out.append(PublishTransition(Transition(ev.node, self.me, status, now)))
        out.append(PublishSnapshot(self.snapshot(now)))

    def _on_connection(
        self, ev: ConnectionChanged, now: Stamp, out: list[ControllerAction]
    ) -> None:
        if not ev.connected:
            self.connected = False
            p = self._pending
            if p is not None:
                self._pending = None
                out.append(ClaimDecided(p.claim, False, "disconnected"))
            for leaf in self.mine:
                if leaf not in self._paused:
                    self._paused.add(leaf)
                    out.append(PauseBehaviour(leaf))
            return
        self.connected = True
        self.peers_online = set(ev.online_peers) - {self.me}
        self._awaiting = set(self.peers_online)
        if self.interest is not None and self.interest.mine is not None:
            self._declare(self.interest.leaves, now, out)  # fresh acknowledgements (I3)
        for agent, _s in list(self.working.values()):
            if agent != self.me and agent not in self.peers_online:
                self._lapsing.setdefault(agent, self._wait_ms(now) + self.takeover_ms)
        self._release_lapsed(now)

    def _on_interest(self, ev: Interest, now: Stamp, out: list[ControllerAction]) -> None:
        book = self.interest
        if ev.agent == self.me:
            return
        if book is None:
            # a member without declared interest in a team whose peers declare theirs
            # (a mixed team, an attached robot with its own settings): it acknowledges
            # as a member that may claim every leaf, so every claim that declarer makes
            # asks it (I2), and it asks every online peer itself (the base rule)
            own = Interest(self.me, now, tuple(self.tree.leaves))
            out.append(PublishInterestAck(InterestAck(self.me, ev.agent, ev.stamp, own)))
            return
        if ev.agent not in self.peers_online:  # it is online: it just spoke (I3)
            self._on_presence(PresenceChanged(ev.agent, True), now, out)
        out.append(PublishInterestAck(book.ack_for(ev)))
        self._ask_if_interested(ev.agent, out)
        self._decide(now, out)

    def _on_interest_ack(self, ev: InterestAck, now: Stamp, out: list[ControllerAction]) -> None:
        book = self.interest
        if book is None or ev.declarer != self.me or ev.agent == self.me:
            return
        if ev.agent not in self.peers_online:
            self._on_presence(PresenceChanged(ev.agent, True), now, out)
        book.acknowledged(ev)
        self._ask_if_interested(ev.agent, out)
        self._decide(now, out)

    def _ask_if_interested(self, peer: str, out: list[ControllerAction]) -> None:
        """A pending claim asks ``peer`` once its declaration meets the claim (I2)."""
        p = self._pending
        if p is None or p.lost is not None or peer in p.need or peer in p.replies:
            return
        if self.interest is not None and self.interest.interested(
            peer, self.conflicts(p.claim.node)
        ):
            p.need[peer] = 0
            out.append(PublishClaim(p.claim, to=peer))


_ZERO: Stamp = (-(2**63), 0, "")
