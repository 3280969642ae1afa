"""The peer rule as a pure state machine: one team member's copy of the task tree.

Seed 000 §2.2-2.3 (Figs. 7, 8) made safe as docs/protocol.md "Claiming a node" sketches it.
``TaskController.handle(event, now)`` consumes one event and returns the actions the
agent must carry out (publish, start, pause...); it does no I/O and reads no clock:
``now`` is the agent's hybrid-logical-clock reading as a plain ordered tuple
``(wall_ms, logical, agent_id)``.

The events it consumes and the actions it returns are in ``peer_messages``.

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

The controller keeps the team view every rule reads (done leaves, who works on what,
this member's leaves, who is online) and hands each responsibility to a part it owns:
claims and their replies (``claims``), peers' transitions and snapshots
(``peer_reports``), declared interest (``interest_exchange``), which leaf to claim next
(``selection``), peer dones checked against the world (``done_trust``) and when an
offline or releasing holder's leaf is free (``handover``). Parts that drive the protocol
read the view through their controller instead of holding copies of it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping

from teamtree.planners.tasktree.activation import (
    node_statuses,
)
from teamtree.planners.tasktree.claims import ClaimExchange
from teamtree.planners.tasktree.contention import ContentionAvoider, PeerPotentials
from teamtree.planners.tasktree.done_trust import DoneTrust
from teamtree.planners.tasktree.handover import Handover
from teamtree.planners.tasktree.incremental import ActivationView
from teamtree.planners.tasktree.interest import Interest, InterestAck, InterestBook
from teamtree.planners.tasktree.interest_exchange import InterestExchange
from teamtree.planners.tasktree.peer_messages import (
    AbortBehaviour,
    BehaviourFinished,
    Claim,
    ClaimDecided,
    ClaimReply,
    ClaimRule,
    ConnectionChanged,
    ControllerAction,
    EffectConfirmed,
    EffectUndone,
    Event,
    EvidenceChanged,
    PauseBehaviour,
    PotentialsChanged,
    PresenceChanged,
    PublishSnapshot,
    PublishTransition,
    Snapshot,
    Stamp,
    Tick,
    Transition,
    Want,
    WorldShown,
)
from teamtree.planners.tasktree.peer_reports import PeerReports
from teamtree.planners.tasktree.selection import LeafSelection
from teamtree.planners.tasktree.status import NodeStatus
from teamtree.planners.tasktree.tree import NodeKind, TaskTree
from teamtree.planners.tasktree.versioned import VersionedDict, VersionedSet

__all__ = ["TaskController", "conflict_set"]


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

    Its parts: ``claims`` (``ClaimExchange``), ``reports`` (``PeerReports``),
    ``interest_exchange`` (``InterestExchange``), ``selection`` (``LeafSelection``),
    ``trust`` (``DoneTrust``) and ``handover`` (``Handover``).

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
        self.handover = Handover(
            takeover_ms=takeover_ms,
            release_hold_ms=release_hold_ms,
            released_at_once=released_at_once,
            wait_clock=wait_clock,
        )
        """When offline and releasing holders' leaves are free (rules 6, 8)."""
        self.trust = DoneTrust(evidence_leaves)
        """Peers' dones of evidence leaves, checked against the world (rule 7)."""
        self.me = me
        self.default_potential = default_potential
        self.inhibit_ticks = inhibit_ticks
        self.inhibit_factor = inhibit_factor
        self.resend_ticks = resend_ticks
        self.potentials: dict[str, float] = VersionedDict(potentials or {})
        self.peers_online: set[str] = set(online_peers) - {me}
        self.done: set[str] = VersionedSet()
        self.working: dict[str, tuple[str, Stamp]] = VersionedDict()
        self.mine: dict[str, None] = {}
        """The leaves this member works on, in the order it won them."""
        self._paused: set[str] = set()
        self.connected = True
        self._awaiting: set[str] = set(self.peers_online) if await_snapshots else set()
        self._inhibited: dict[str, int] = {}
        self._conflicts: dict[str, frozenset[str]] = {}
        self._last_stamp: Stamp | None = None
        self.claims = ClaimExchange(self, rule, dedup_window)
        """This member's pending claim and its answers to peers' claims (rules 1-5)."""
        self.reports = PeerReports(self, max_skew_ms)
        """Peers' transitions and snapshots merged into this view (rule 9)."""
        self.selection = LeafSelection(self, tree)
        """Activation spreading over this view, and the leaf to claim next."""
        self.avoider: ContentionAvoider | None = None
        """With ``avoid_contention``: peers' potentials, patience, backoff
        (``contention.py``); the claim rule itself is unchanged."""
        if avoid_contention:
            self.avoider = ContentionAvoider(me, random.Random(me if seed is None else seed))
        self.interest: InterestBook | None = InterestBook(me) if declared_interest else None
        """With ``declared_interest``: this member's and its peers' declarations
        (``interest.py``); a claim then asks only the peers whose declaration meets it."""
        self.interest_exchange = InterestExchange(self, interest_prefetch)
        """Declares this member's interest and acknowledges peers' (``interest``)."""

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
        p = self.claims.pending
        return p.claim if p else None

    @property
    def mission_done(self) -> bool:
        """True when the root's constraint is satisfied in this copy. That depends on
        the done leaves only, so it is recomputed when they change: the agent asks
        after every event, and most change only who works on what."""
        return self.selection.root_satisfied()

    def activations(self) -> ActivationView:
        """Activation level and potential of every node now (§2.2), as a mapping,
        cached on what spreading reads (``LeafSelection.activations``). Read-only."""
        return self.selection.activations()

    def statuses(self) -> dict[str, NodeStatus]:
        """Every node's status in this copy (see ``NodeStatus``)."""
        return node_statuses(self.tree, self.selection.activations(), list(self.mine))

    def snapshot(self, now: Stamp) -> Snapshot:
        """This member's retained snapshot."""
        return Snapshot(self.me, now, tuple(sorted(self.done)), tuple(self.mine))

    def allowed(self, leaf: str) -> bool:
        """True when this member may work on ``leaf`` now: not done, not worked by a
        peer, activated by the tree, no OR alternative committed elsewhere."""
        return self.selection.allowed(leaf)

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
                self.claims.on_want(event, now, out)
            case Claim():
                self.claims.on_claim(event, now, out)
            case ClaimReply():
                self.claims.on_reply(event, now, out)
            case Transition():
                self.reports.on_transition(event, now, out)
            case Snapshot():
                self.reports.on_snapshot(event, now, out)
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
                self.trust.world_shown(self.done)
            case Interest():
                self.interest_exchange.on_interest(event, now, out)
            case InterestAck():
                self.interest_exchange.on_ack(event, now, out)
            case _:
                raise TypeError(f"TaskController cannot handle {type(event).__name__}")
        return out

    # ----------------------------------------------------------- handlers

    def _on_tick(self, now: Stamp, out: list[ControllerAction]) -> None:
        handover = self.handover
        if handover.lapsing:
            handover.release_lapsed(now, self.working, self.peers_online)
        if handover.releasing:
            handover.release_held(now, self.working)
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
                self.selection.open_leaves,
                len(self.peers_online) + 1,
                held=self._inhibited,
            )
            if pub is not None:
                out.append(pub)
        if self.interest is not None and self.interest_exchange.on_tick(now, out):
            return
        if self.claims.pending is not None:
            self.claims.on_tick(now, out)
            return
        if self._paused:  # reconnected and synced: re-claim before resuming
            leaf = next(n for n in self.mine if n in self._paused)
            if self.interest_exchange.declared(leaf, now, out):
                self.claims.start(leaf, now, out, reclaim=True)
            return
        if not self.auto_select or len(self.mine) >= self.capacity:
            return
        leaf = self.selection.select()
        if leaf is not None and self.interest_exchange.declared(leaf, now, out):
            self.claims.start(leaf, now, out)

    def _abort_mine(self, leaf: str, reason: str, now: Stamp, out: list[ControllerAction]) -> None:
        self.mine.pop(leaf, None)
        self._paused.discard(leaf)
        if self.working.get(leaf, ("",))[0] == self.me:
            del self.working[leaf]
        out.append(AbortBehaviour(leaf, reason))
        out.append(PublishTransition(Transition(leaf, self.me, NodeStatus.INACTIVE, now)))
        out.append(PublishSnapshot(self.snapshot(now)))

    def _mark_done(self, node: str, now: Stamp, out: list[ControllerAction]) -> None:
        """A peer says ``node`` is done. Not believed for a leaf this member works on:
        its own body (``BehaviourFinished``) or the world (``EffectConfirmed``) decides
        that ("done means done"; a forged or mistaken report aborts nothing). A paused
        leaf (this member lost the broker meanwhile) is the exception: a peer may have
        taken it over and finished it, so it is aborted rather than resumed."""
        if node in self.done or (node in self.mine and node not in self._paused):
            return
        trust = self.trust
        if node in trust.evidence_leaves:  # rule 7: the world says, not a peer
            trust.refuse(node)
            return
        self._set_done(node)
        if node in self.mine:
            del self.mine[node]
            self._paused.discard(node)
            out.append(AbortBehaviour(node, "done by a peer"))

    def _set_done(self, node: str) -> None:
        self.done.add(node)
        self.working.pop(node, None)
        self.handover.releasing.pop(node, None)
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

    def _set_working(self, node: str, agent: str, stamp: Stamp) -> None:
        """``agent`` works on ``node``: evidence that cancels any release of it."""
        self.working[node] = (agent, stamp)
        self.handover.releasing.pop(node, None)

    def _on_presence(self, ev: PresenceChanged, now: Stamp, out: list[ControllerAction]) -> None:
        if ev.agent == self.me:
            return
        if ev.online:
            self.handover.lapsing.pop(ev.agent, None)
            self.interest_exchange.peer_online(ev.agent, out)
            new = ev.agent not in self.peers_online
            if new:
                self.peers_online.add(ev.agent)
            self.claims.peer_online(ev.agent, new, out)
            return
        self.peers_online.discard(ev.agent)
        self._awaiting.discard(ev.agent)
        if self.avoider is not None:
            self.avoider.forget(ev.agent)
        # Last Will: release its work so another completes it, once its lease lapsed
        self.handover.holder_gone(ev.agent, now)
        self.handover.release_lapsed(now, self.working, self.peers_online)
        self.claims.decide(now, out)

    def _on_effect(self, ev: EffectConfirmed, now: Stamp, out: list[ControllerAction]) -> None:
        if ev.node not in self.tree.nodes or ev.node in self.done:
            return
        self.trust.world_confirmed(ev.node)  # the world bore a report out: doubt anew
        if ev.node in self.mine:  # done while ours runs: stop the body, count it done
            self._on_finished(BehaviourFinished(ev.node, True), now, out)
            out.append(AbortBehaviour(ev.node, "the world shows it done"))
            return
        self._set_done(ev.node)  # no transition: this member did not do it
        out.append(PublishSnapshot(self.snapshot(now)))
        self.claims.decide(now, out)

    def _on_evidence(self, ev: EvidenceChanged, now: Stamp, out: list[ControllerAction]) -> None:
        """New evidence leaves; the refused peer dones of those that left the set count
        now (e.g. an AGV's load the world turned out not to show)."""
        freed = self.trust.set_leaves(ev.leaves)
        if not freed:
            return
        before = len(self.done)
        for node in sorted(freed):
            self._mark_done(node, now, out)
        if len(self.done) != before:
            out.append(PublishSnapshot(self.snapshot(now)))
            self.claims.decide(now, out)

    def _on_undone(self, ev: EffectUndone, now: Stamp, out: list[ControllerAction]) -> None:
        """The world shows a done leaf's effect gone: open it again (rule 7)."""
        if ev.node not in self.done:
            return
        self.done.discard(ev.node)
        out.append(PublishSnapshot(self.snapshot(now)))
        self.claims.decide(now, out)

    def _on_finished(self, ev: BehaviourFinished, now: Stamp, out: list[ControllerAction]) -> None:
        if ev.node not in self.mine:
            return
        del self.mine[ev.node]
        self._paused.discard(ev.node)
        p = self.claims.pending
        if p is not None and p.reclaim and p.claim.node == ev.node:
            self.claims.pending = None  # finished while paused: nothing left to re-claim
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
            p = self.claims.pending
            if p is not None:
                self.claims.pending = None
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
            # fresh acknowledgements (I3)
            self.interest_exchange.declare(self.interest.leaves, now, out)
        for agent, _s in list(self.working.values()):
            if agent != self.me and agent not in self.peers_online:
                self.handover.holder_gone(agent, now)
        self.handover.release_lapsed(now, self.working, self.peers_online)
