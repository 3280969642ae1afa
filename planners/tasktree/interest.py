"""Declared interest: a claim asks only the peers that may claim what it conflicts with.

Under the peer rule (``peer.py``) a claim needs a reply from every online peer, so at
32 robots each claim costs 31 messages in and 31 out, and its latency grows with the
team (``benchmarks/bench_tasktree.py``). With declared interest
(``TaskController(declared_interest=True)``) each member declares the leaves it may
claim, and a claim needs replies only from the online peers whose declared interest
meets the claim's conflict set:

- I1. A member claims a leaf only if it is in its current declaration and every peer
  online in its view at decision time acknowledged that declaration.
- I2. A claim of leaf N is decided once every online peer whose known declaration
  meets N's conflict set replied (rule 4's re-asks included) and none beats it.
- I3. A declaration is acknowledged only after it is recorded, and the
  acknowledgement carries the acknowledger's own current declaration. A declaration
  (or acknowledgement) from a peer counts as that peer being online; a peer that comes
  online (again) must acknowledge the member's declaration anew, and a member that
  reconnects declares again, so its view of the others is fresh.
- I4. Declarations only grow (a member keeps every leaf it ever declared): the member
  that worked or finished a leaf is asked by every later claimant of it. Peers hold
  a member to it: they keep the union of its declarations, so one that would shrink
  it (forged, replayed, dated ahead) changes nothing.

Why two overlapping claims (a on N, b on M in N's conflict set, so N in M's) cannot
both win. b declared M and a acknowledged it (I1; a is online in b's view, or a's
own declaration, which b acknowledged, made b online in a's view by I3). If a
recorded b's declaration before a's decision, a needs b's reply (I2) and the base
rule's argument holds unchanged: each claimant hears the other's claim or its reply
reports it. Otherwise a decided before it received b's declaration, so before it
acknowledged it, so before b's claim; a's declaration of N was acknowledged by b
before a's claim (I1), so b knows it at its decision and needs a's reply, which a
makes after its decision: working or done, b loses. A declaration sent while a peer
was offline in the sender's view reaches it in the acknowledgement of the peer's next
declaration (I3), which it must make before it claims. ``tests/test_tasktree_
interest.py`` checks all this in the network simulation (delay, duplicates,
reordering, crashes, late joiners) and checks that a controller that skips I1's wait
runs a leaf twice in the same runs.

A member without declared interest in a team whose other members declare (a mixed
team; ``TaskController(declared_interest=False)``) declares nothing, asks every online
peer as the base rule does, and acknowledges each declaration with one of its own that
holds every leaf. A declaring member may decide only once every peer online in its view
acknowledged (I1), so it knows that declaration by then and asks such a member every
claim (I2), as the base rule would; such a member asks every online peer. Between the
two, each claim asks the other, and the base rule's argument holds for that pair.
Without that acknowledgement the declaring members would wait for it (I1) and never
claim; the property tests run mixed teams.

The cost moves: a declaration needs every online peer's acknowledgement, as a claim
did. A member declares the leaf it wants plus its ``prefetch`` next best ones, so one
declaration usually covers several claims; the latency of a claim that must first
declare is the declaration's round plus the claim's.

Pure: no I/O, no clocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from msgspec import Struct

__all__ = [
    "Interest",
    "InterestAck",
    "InterestBook",
    "PublishInterest",
    "PublishInterestAck",
]

Stamp = tuple[int, int, str]


class Interest(Struct, frozen=True):
    """``agent`` may claim only ``leaves``; declared at HLC ``stamp`` (newer replaces)."""

    agent: str
    stamp: Stamp
    leaves: tuple[str, ...]


class InterestAck(Struct, frozen=True):
    """``agent`` recorded ``declarer``'s declaration of ``stamp``; ``own`` is the
    acknowledger's current declaration (None before its first)."""

    agent: str
    declarer: str
    stamp: Stamp
    own: Interest | None = None


class PublishInterest(Struct, frozen=True):
    """Publish ``interest`` to every peer, or only to ``to`` (QoS 1)."""

    interest: Interest
    to: str | None = None


class PublishInterestAck(Struct, frozen=True):
    """Send ``ack`` to its declarer (QoS 1)."""

    ack: InterestAck


_ZERO: Stamp = (-(2**63), 0, "")


class InterestBook:
    """One member's declarations: its own, who acknowledged it, and the peers' ones."""

    def __init__(self, me: str) -> None:
        self.me = me
        self.mine: Interest | None = None
        self.leaves: frozenset[str] = frozenset()
        self._acked: dict[str, Stamp] = {}
        self._of: dict[str, Interest] = {}
        self._sets: dict[str, frozenset[str]] = {}

    def declare(self, leaves: Iterable[str], now: Stamp) -> Interest:
        """A new declaration: the old leaves (I4) plus ``leaves``. Its stamp is later
        than the last one's even within one HLC reading, since peers keep a
        declaration per stamp and an acknowledgement names the stamp."""
        if self.mine is not None and now <= self.mine.stamp:
            last = self.mine.stamp
            now = (last[0], last[1] + 1, last[2])
        self.leaves = self.leaves | frozenset(leaves)
        self.mine = Interest(self.me, now, tuple(sorted(self.leaves)))
        return self.mine

    def ready(self, online: Iterable[str]) -> bool:
        """Every peer in ``online`` acknowledged the current declaration (I1)."""
        mine = self.mine
        if mine is None:
            return False
        acked = self._acked
        return all(acked.get(q, _ZERO) >= mine.stamp for q in online)

    def unacknowledged(self, online: Iterable[str]) -> list[str]:
        """The peers of ``online`` that have not acknowledged the current declaration."""
        mine = self.mine
        if mine is None:
            return []
        return sorted(q for q in online if self._acked.get(q, _ZERO) < mine.stamp)

    def forget_ack(self, peer: str) -> None:
        """``peer`` came online (again): it must acknowledge anew (I3)."""
        self._acked.pop(peer, None)

    def record(self, interest: Interest) -> bool:
        """Add a peer's declaration to what is known of it; True when that grew.

        Declarations only grow (I4), so the leaves known for a peer are the union of
        every declaration heard from it, whatever their stamps and order: a forged
        or replayed declaration (an empty one, or one dated far ahead) cannot stop a
        claim from asking a member that declared, and so may hold, a leaf."""
        old = self._of.get(interest.agent)
        known = self._sets.get(interest.agent, frozenset())
        grown = known | frozenset(interest.leaves)
        if old is None or interest.stamp > old.stamp:
            self._of[interest.agent] = interest
        if old is not None and grown == known:
            return False
        self._sets[interest.agent] = grown
        return True

    def acknowledged(self, ack: InterestAck) -> None:
        """``ack.agent`` recorded my declaration of ``ack.stamp``. An acknowledgement
        of a stamp later than my current declaration acknowledges nothing I declared
        (a forged declaration in my name, dated ahead): it counts for none."""
        mine = self.mine
        genuine = mine is None or ack.stamp <= mine.stamp
        if genuine and ack.stamp > self._acked.get(ack.agent, _ZERO):
            self._acked[ack.agent] = ack.stamp
        if ack.own is not None and ack.own.agent == ack.agent:
            self.record(ack.own)

    def ack_for(self, interest: Interest) -> InterestAck:
        """The acknowledgement of ``interest`` (recorded first)."""
        self.record(interest)
        return InterestAck(self.me, interest.agent, interest.stamp, self.mine)

    def interested(self, peer: str, leaves: Set[str]) -> bool:
        """Whether ``peer``'s known declaration meets ``leaves``."""
        s = self._sets.get(peer)
        return s is not None and not s.isdisjoint(leaves)

    def undeclared(self, online: Iterable[str]) -> list[str]:
        """The peers of ``online`` of which no declaration is known here."""
        return sorted(q for q in online if q not in self._sets)

    def of(self, peer: str) -> frozenset[str]:
        """``peer``'s declared leaves as known here."""
        return self._sets.get(peer, frozenset())
