"""Declared interest on the wire: this member declares the leaves it may claim,
re-publishes the declaration to peers that have not acknowledged it, and acknowledges
peers' declarations (the rules I1-I4 of ``interest.py``).

``InterestExchange`` drives the ``InterestBook`` its ``TaskController`` keeps as
``interest`` (None without declared interest; agents read that book too). It is a
part of the controller: a declaration depends on this member's view (done leaves,
activations, who is online), and a new acknowledgement may let the pending claim ask
one more peer, so it reads both through the controller instead of copying them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from teamtree.planners.tasktree.interest import (
    Interest,
    InterestAck,
    PublishInterest,
    PublishInterestAck,
)
from teamtree.planners.tasktree.peer_messages import ControllerAction, PresenceChanged, Stamp

if TYPE_CHECKING:
    from teamtree.planners.tasktree.peer import TaskController

__all__ = ["InterestExchange"]


class InterestExchange:
    """Declares this member's interest and answers peers' (``prefetch``: how many next
    best leaves a declaration adds to the one this member is about to claim)."""

    def __init__(self, controller: TaskController, prefetch: int) -> None:
        self._c = controller
        self.prefetch = prefetch
        self._declared_age = 0

    def on_tick(self, now: Stamp, out: list[ControllerAction]) -> bool:
        """Declare for the first time, or re-publish the declaration to the online
        peers that have not acknowledged it. True: the first declaration went out,
        nothing else happens on this tick."""
        c = self._c
        book = c.interest
        assert book is not None
        if book.mine is None and c.auto_select:
            # the first declaration: this member's best leaves by potential, selectable
            # or not yet, so most later claims find their leaf declared already
            pots = c.potentials
            best = sorted(
                (n for n in c.tree.leaves if n not in c.done),
                key=lambda n: (-pots.get(n, c.default_potential), n),
            )
            self.declare(best[: self.prefetch + 1], now, out)
            return True
        if book.mine is not None:
            self._declared_age += 1
            if c.resend_ticks > 0 and self._declared_age % c.resend_ticks == 0:
                for q in book.unacknowledged(c.peers_online):
                    out.append(PublishInterest(book.mine, to=q))
        return False

    def declared(self, leaf: str, now: Stamp, out: list[ControllerAction]) -> bool:
        """Whether ``leaf`` may be claimed now as far as declared interest goes (I1 of
        ``interest.py``): always without it; else when ``leaf`` is declared and every
        online peer acknowledged the declaration. An undeclared leaf is declared here,
        with this member's ``prefetch`` next best selectable leaves."""
        c = self._c
        book = c.interest
        if book is None:
            return True
        if leaf not in book.leaves or book.mine is None:
            acts = c.activations()
            others = sorted(
                (n for n in acts.selectable if n != leaf and n not in book.leaves),
                key=lambda n: (-acts.leaf_value(n), n),
            )
            self.declare([leaf, *others[: self.prefetch]], now, out)
            return False
        return book.ready(c.peers_online)

    def declare(self, leaves: Iterable[str], now: Stamp, out: list[ControllerAction]) -> None:
        """Publish a new declaration of ``leaves`` (peers acknowledge it anew, I3)."""
        book = self._c.interest
        assert book is not None
        out.append(PublishInterest(book.declare(leaves, now)))
        self._declared_age = 0

    def peer_online(self, agent: str, out: list[ControllerAction]) -> None:
        """``agent`` came online: it must acknowledge the declaration anew (I3)."""
        book = self._c.interest
        if book is not None:
            book.forget_ack(agent)
            if book.mine is not None:
                out.append(PublishInterest(book.mine, to=agent))

    def on_interest(self, ev: Interest, now: Stamp, out: list[ControllerAction]) -> None:
        """A peer's declaration: acknowledge it; the pending claim may now ask it."""
        c = self._c
        book = c.interest
        if ev.agent == c.me:
            return
        if book is None:
            # a member without declared interest in a team whose peers declare theirs
            # (a mixed team, an attached robot with its own settings): it acknowledges
            # as a member that may claim every leaf, so every claim that declarer makes
            # asks it (I2), and it asks every online peer itself (the base rule)
            own = Interest(c.me, now, tuple(c.tree.leaves))
            out.append(PublishInterestAck(InterestAck(c.me, ev.agent, ev.stamp, own)))
            return
        if ev.agent not in c.peers_online:  # it is online: it just spoke (I3)
            c._on_presence(PresenceChanged(ev.agent, True), now, out)
        out.append(PublishInterestAck(book.ack_for(ev)))
        c.claims.ask(ev.agent, out)
        c.claims.decide(now, out)

    def on_ack(self, ev: InterestAck, now: Stamp, out: list[ControllerAction]) -> None:
        """A peer acknowledged this member's declaration."""
        c = self._c
        book = c.interest
        if book is None or ev.declarer != c.me or ev.agent == c.me:
            return
        if ev.agent not in c.peers_online:
            c._on_presence(PresenceChanged(ev.agent, True), now, out)
        book.acknowledged(ev)
        c.claims.ask(ev.agent, out)
        c.claims.decide(now, out)
