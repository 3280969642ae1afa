"""Peers' word on the team's state: their transitions and snapshots merged into this
member's view, each peer's latest word per node, and rule 9 of ``peer.py`` (a stamp
from the future is not recorded).

``PeerReports`` owns the latest stamp heard per (peer, node), so an older or
duplicate message changes nothing, and the count of stamps refused as too far ahead.
It is a part of its ``TaskController``: merging writes the team view the controller
keeps (done, working, who is online) and may cost this member a paused leaf, so it
reads and changes that view through the controller, which keeps it in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamtree.planners.tasktree.peer_messages import (
    ControllerAction,
    Snapshot,
    Stamp,
    Transition,
)
from teamtree.planners.tasktree.status import NodeStatus

if TYPE_CHECKING:
    from teamtree.planners.tasktree.peer import TaskController

__all__ = ["NEVER", "PeerReports"]

NEVER: Stamp = (-(2**63), 0, "")
"""Older than every stamp: the latest word of a peer never heard from about a node."""


class PeerReports:
    """Merges peers' transitions and snapshots; ``max_skew_ms`` bounds how far ahead
    of this member's clock a peer's stamp may be and still be recorded (rule 9)."""

    def __init__(self, controller: TaskController, max_skew_ms: int) -> None:
        self._c = controller
        self.max_skew_ms = max_skew_ms
        self.refused_future = 0
        """Peer stamps more than ``max_skew_ms`` ahead, not recorded (rule 9)."""
        self.seen: dict[tuple[str, str], Stamp] = {}
        """(peer, node) -> the stamp of the latest word recorded from that peer on it."""

    def future(self, stamp: Stamp, now: Stamp) -> bool:
        """Whether a peer's ``stamp`` is more than ``max_skew_ms`` ahead (rule 9)."""
        if stamp[0] - now[0] > self.max_skew_ms:
            self.refused_future += 1
            return True
        return False

    def on_transition(self, t: Transition, now: Stamp, out: list[ControllerAction]) -> None:
        """A peer moved a node to working, done or inactive."""
        c = self._c
        if t.agent == c.me or t.node not in c.tree.nodes:
            return
        key = (t.agent, t.node)
        if self.seen.get(key, NEVER) >= t.stamp:
            return  # duplicate or older than what we know
        if self.future(t.stamp, now):
            return  # rule 9: it would make the peer's genuine later word look stale
        self.seen[key] = t.stamp
        if t.status is NodeStatus.DONE:
            c._mark_done(t.node, now, out)  # a done not believed is a release
        if t.status is NodeStatus.WORKING:
            if t.agent in c.peers_online and t.node not in c.done:
                c._set_working(t.node, t.agent, t.stamp)
                if t.node in c._paused:
                    c._abort_mine(t.node, f"taken by {t.agent}", now, out)
        elif c.working.get(t.node, ("",))[0] == t.agent:
            c.handover.release(t.node, t.agent, now, c.working, c.trust.evidence_leaves)
        c.claims.decide(now, out)

    def on_snapshot(self, s: Snapshot, now: Stamp, out: list[ControllerAction]) -> None:
        """A peer's snapshot: its done leaves and the leaves it works, as of its stamp."""
        c = self._c
        if s.agent == c.me:
            return
        # a snapshot lists every done leaf, so usually nothing new: one superset test
        # in C, not a call per leaf (a big team's robot reads thousands of long
        # snapshots a second); leaves already done change nothing in _mark_done
        if not c.done.issuperset(s.done):
            for node in s.done:
                if node in c.tree.nodes:
                    c._mark_done(node, now, out)
        if s.agent in c.peers_online and not self.future(s.stamp, now):
            seen = self.seen
            for node, (agent, _stamp) in list(c.working.items()):
                if (
                    agent == s.agent
                    and node not in s.working
                    and seen.get((agent, node), NEVER) < s.stamp
                ):
                    c.handover.release(node, agent, now, c.working, c.trust.evidence_leaves)
            for w in s.working:
                if (
                    w in c.tree.nodes
                    and w not in c.done
                    and seen.get((s.agent, w), NEVER) < s.stamp
                ):
                    seen[(s.agent, w)] = s.stamp
                    c._set_working(w, s.agent, s.stamp)
                    if w in c._paused:
                        c._abort_mine(w, f"taken by {s.agent}", now, out)
        c._awaiting.discard(s.agent)
        c.claims.decide(now, out)
