"""Claims and their replies: the heart of the peer rule (rules 1-5 of ``peer.py``).

``ClaimExchange`` owns this member's one pending claim and the claim ids it has
answered: it starts a claim, asks the peers whose reply it needs (again when they go
unanswered or when their own claim beats it), answers peers' claims with this
member's view of the conflict set, and decides once every reply is in.

It is a part of its ``TaskController``, not a stand-alone object: deciding a claim
reads and changes the team view the controller keeps (done, working, this member's
leaves, who is online), and that view has one home, so the exchange reads it through
the controller rather than holding copies to keep in step.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from teamtree.planners.tasktree.peer_messages import (
    Claim,
    ClaimDecided,
    ClaimReply,
    ClaimRule,
    ControllerAction,
    NodeReport,
    PeerState,
    PublishClaim,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    Stamp,
    StartBehaviour,
    Transition,
    Want,
)
from teamtree.planners.tasktree.peer_reports import NEVER
from teamtree.planners.tasktree.status import NodeStatus

if TYPE_CHECKING:
    from teamtree.planners.tasktree.peer import TaskController

__all__ = ["ClaimExchange", "PendingClaim"]


class PendingClaim(Struct):
    """A claim waiting for replies, and what its replies said so far."""

    claim: Claim
    replies: dict[str, int] = field(default_factory=dict)  # replier -> highest round
    need: dict[str, int] = field(default_factory=dict)  # replier -> round required
    lost: str | None = None
    age: int = 0
    reclaim: bool = False
    resends: int = 0
    resend_at: int = 0  # age of the next resend (with contention avoidance)


class ClaimExchange:
    """One member's claims: at most one pending at a time, and answers to peers' claims.

    ``rule`` orders competing claims (``ClaimRule``); ``dedup_window`` is how many
    answered (claim id, round) pairs are remembered, so a duplicate claim that beats
    the pending one does not ask its sender again.
    """

    def __init__(
        self, controller: TaskController, rule: ClaimRule | str, dedup_window: int
    ) -> None:
        self._c = controller
        self.rule = ClaimRule(rule)
        self.pending: PendingClaim | None = None
        """The claim waiting for replies, if any."""
        self._dedup_window = dedup_window
        self._seen_claims: OrderedDict[tuple[str, int], None] = OrderedDict()
        self._claims_made = 0

    def on_tick(self, now: Stamp, out: list[ControllerAction]) -> None:
        """A tick with a claim pending: it ages, unanswered peers may be asked again."""
        p = self.pending
        assert p is not None
        p.age += 1
        resend_ticks = self._c.resend_ticks
        if resend_ticks > 0 and self._resend_due(p):
            for q in sorted(self.needed(p)):
                if p.replies.get(q, -1) < p.need.get(q, 0):
                    out.append(PublishClaim(replace(p.claim, round=p.need.get(q, 0)), to=q))
        self.decide(now, out)

    def needed(self, p: PendingClaim) -> set[str]:
        """The online peers whose reply the pending claim needs (rule 4, I2)."""
        c = self._c
        book = c.interest
        if book is None:
            return c.peers_online
        conflicts = c.conflicts(p.claim.node)
        return {q for q in c.peers_online if q in p.need or book.interested(q, conflicts)}

    def _resend_due(self, p: PendingClaim) -> bool:
        """Whether a pending claim's unanswered peers are asked again on this tick:
        every ``resend_ticks``, or with contention avoidance after a jittered,
        doubling wait (``ContentionAvoider.resend_after``)."""
        c = self._c
        if c.avoider is None:
            return p.age % c.resend_ticks == 0
        if p.resend_at == 0:
            p.resend_at = c.avoider.resend_after(c.resend_ticks, 0)
        if p.age < p.resend_at:
            return False
        p.resends += 1
        p.resend_at = p.age + c.avoider.resend_after(c.resend_ticks, p.resends)
        return True

    def on_want(self, want: Want, now: Stamp, out: list[ControllerAction]) -> None:
        """Claim ``want.node`` now, or say at once why not (``ClaimDecided``)."""
        c = self._c
        reason = ""
        if want.node not in c.tree.nodes or not c.tree[want.node].is_leaf:
            reason = "not a leaf of this tree"
        elif not c.connected or not c.synced:
            reason = "not connected and synced"
        elif self.pending is not None:
            reason = "another claim is pending"
        elif c._paused:
            reason = "paused"
        elif want.node in c.mine:
            reason = "already working on it"
        elif len(c.mine) >= c.capacity:
            reason = "at capacity"
        elif not c.selection.allowed(want.node):
            reason = "not allowed by the tree or taken by a peer"
        elif not c.interest_exchange.declared(want.node, now, out):
            reason = "its declaration is not acknowledged yet; want it again"
        if reason:
            claim = Claim("", want.node, c.me, now, want.potential or 0.0)
            out.append(ClaimDecided(claim, False, reason))
            return
        self.start(want.node, now, out, potential=want.potential)

    def start(
        self,
        leaf: str,
        now: Stamp,
        out: list[ControllerAction],
        reclaim: bool = False,
        potential: float | None = None,
    ) -> None:
        """Claim ``leaf`` (``reclaim``: a paused leaf of this member's, before resuming)."""
        c = self._c
        self._claims_made += 1
        if potential is None:
            potential = float(c.potentials.get(leaf, c.default_potential))
        claim = Claim(
            claim_id=f"{c.me}@{now[0]}.{now[1]}#{self._claims_made}",
            node=leaf,
            claimant=c.me,
            stamp=now,
            potential=float(potential),
        )
        self.pending = p = PendingClaim(claim, reclaim=reclaim)
        if c.interest is None:
            out.append(PublishClaim(claim))
        else:  # only the peers whose declaration meets it (I2), each asked once
            for q in sorted(self.needed(p)):
                p.need[q] = 0
                out.append(PublishClaim(claim, to=q))
        self.decide(now, out)

    def _key(self, stamp: Stamp, potential: float) -> tuple:
        if self.rule is ClaimRule.POTENTIAL:
            return (-potential, stamp)
        return (stamp,)

    def decide(self, now: Stamp, out: list[ControllerAction]) -> None:
        """Decide the pending claim if it lost, or if every reply it needs is in."""
        p = self.pending
        if p is None:
            return
        c = self._c
        leaf = p.claim.node
        if p.lost is None and not c.selection.allowed(leaf):
            p.lost = "no longer allowed by the tree or taken by a peer"
        if p.lost is None and not c.connected:
            p.lost = "disconnected"
        if p.lost is not None:
            self.pending = None
            out.append(ClaimDecided(p.claim, False, p.lost))
            if p.reclaim:
                c._abort_mine(leaf, p.lost, now, out)
            elif c.avoider is not None:
                c._inhibited[leaf] = c.avoider.lost(c.inhibit_ticks)
                c._held_changed(added=True)
            else:
                c._inhibited[leaf] = c.inhibit_ticks
            return
        if any(p.replies.get(q, -1) < p.need.get(q, 0) for q in self.needed(p)):
            return
        if c.interest is not None and not c.interest.ready(c.peers_online):
            return  # a peer that came online has not acknowledged the declaration (I1)
        self.pending = None
        if c.avoider is not None:
            c.avoider.won()
        why = "every online peer" if c.interest is None else "every online peer it concerns"
        out.append(ClaimDecided(p.claim, True, f"{why} answered, none beats it"))
        c.mine[leaf] = None
        c.working[leaf] = (c.me, now)
        c.handover.releasing.pop(leaf, None)
        if c._inhibited.pop(leaf, None) is not None:
            c._held_changed()
        if p.reclaim:
            c._paused.discard(leaf)
            out.append(ResumeBehaviour(leaf))
        else:
            out.append(StartBehaviour(leaf))
        out.append(PublishTransition(Transition(leaf, c.me, NodeStatus.WORKING, now)))
        out.append(PublishSnapshot(c.snapshot(now)))

    def on_claim(self, claim: Claim, now: Stamp, out: list[ControllerAction]) -> None:
        """Answer a peer's claim; ask its sender again if its claim beats ours (rule 4)."""
        c = self._c
        if claim.claimant == c.me or claim.node not in c.tree.nodes:
            return
        if not c.tree[claim.node].is_leaf:
            return
        duplicate = (claim.claim_id, claim.round) in self._seen_claims
        if not duplicate:
            self._seen_claims[(claim.claim_id, claim.round)] = None
            if len(self._seen_claims) > self._dedup_window:
                self._seen_claims.popitem(last=False)
        conflicts = c.conflicts(claim.node)
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
                    c.me,
                    tuple(reports),
                    claim.round,
                )
            )
        )
        p = self.pending
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
        c = self._c
        if node in c.done:
            return NodeReport(node, PeerState.DONE)
        w = c.working.get(node)
        if w is not None:
            return NodeReport(node, PeerState.WORKING, agent=w[0], stamp=w[1])
        p = self.pending
        if p is not None and p.claim.node == node and p.lost is None:
            return NodeReport(
                node, PeerState.CLAIMED, c.me, p.claim.stamp, potential=p.claim.potential
            )
        return NodeReport(node, PeerState.NONE)

    def on_reply(self, reply: ClaimReply, now: Stamp, out: list[ControllerAction]) -> None:
        """Take a peer's reply: its reports update the team view, and one to the pending
        claim may make it lose (rule 3) or count towards deciding it (rule 4)."""
        c = self._c
        if reply.replier == c.me:
            return
        p = self.pending
        mine = p is not None and reply.claim_id == p.claim.claim_id
        reports = c.reports
        seen = reports.seen
        for r in reply.reports:
            if r.node not in c.tree.nodes:
                continue
            if r.state is PeerState.DONE:
                c._mark_done(r.node, now, out)
            elif (
                r.state is PeerState.WORKING
                and r.agent is not None
                and r.agent != c.me
                and r.stamp is not None
                and (r.agent in c.peers_online)
                and r.node not in c.done
                and seen.get((r.agent, r.node), NEVER) < r.stamp
                and not reports.future(r.stamp, now)
            ):
                seen[(r.agent, r.node)] = r.stamp
                c._set_working(r.node, r.agent, r.stamp)
            if not mine or p is None or p.lost is not None:
                continue
            if r.node not in c.conflicts(p.claim.node):
                continue
            if r.state is PeerState.DONE:
                p.lost = f"{reply.replier} reports {r.node} done"
            elif r.state is PeerState.WORKING and r.agent != c.me:
                p.lost = f"{reply.replier} reports {r.node} worked on by {r.agent}"
            elif (
                r.state is PeerState.CLAIMED
                and r.agent not in (None, c.me)
                and r.stamp is not None
                and self._key(r.stamp, r.potential) < self._key(p.claim.stamp, p.claim.potential)
            ):
                p.lost = f"{r.agent}'s claim on {r.node} is earlier"
        if mine and p is not None:
            p.replies[reply.replier] = max(p.replies.get(reply.replier, -1), reply.round)
        self.decide(now, out)

    def peer_online(self, peer: str, new: bool, out: list[ControllerAction]) -> None:
        """``peer`` announced itself online (``new``: it was not online before): the
        pending claim asks it, as it may not have seen the claim or its reply."""
        p = self.pending
        if p is None:
            return
        if new:  # it never saw our claim: ask it too
            out.append(PublishClaim(p.claim, to=peer))
        elif p.replies.get(peer, -1) < p.need.get(peer, 0):
            # it announced itself again (a reconnect, perhaps to another broker node):
            # our claim or its reply may have been lost with its old session, so ask
            # now rather than after the backoff
            again = replace(p.claim, round=p.need.get(peer, 0))
            out.append(PublishClaim(again, to=peer))

    def ask(self, peer: str, out: list[ControllerAction]) -> None:
        """A pending claim asks ``peer`` once its declaration meets the claim (I2)."""
        p = self.pending
        if p is None or p.lost is not None or peer in p.need or peer in p.replies:
            return
        c = self._c
        if c.interest is not None and c.interest.interested(peer, c.conflicts(p.claim.node)):
            p.need[peer] = 0
            out.append(PublishClaim(p.claim, to=peer))
