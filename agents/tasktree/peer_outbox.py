"""What a task-tree robot's controller says to its peers, put on the wire: claims,
claim replies, declarations of interest and their acknowledgements, potentials and
each claim's decision (docs/protocol.md, "Task trees"). The human teammates are peers
whose answers the robot gives itself (``HumanTeammates``): nothing goes on the wire
to them.

- ``_/claims`` ``node.claim``: a claim to every peer (without declared interest);
  ``<me>/claims/<peer>``: to one peer (with declared interest, the default, to each
  peer whose declaration meets it; also a claim asked again)
- ``<me>/claim_reply/<claimant>`` ``node.claim_reply``
- ``_/interest`` (``<me>/interest/<peer>``) ``node.interest``,
  ``<me>/interest_ack/<declarer>`` ``node.interest_ack`` (planners/tasktree/interest.py),
  or, for a burst, ``<me>/interest_acks`` ``node.interest_acks`` (below)
- ``<me>/potentials`` ``node.potentials``: retained, QoS 0: eq. 1 of its best open
  leaves, for the team's contention avoidance (planners/tasktree/contention.py)
- ``<me>/events`` ``node.claim_decided``: each claim won or lost, why, and how long it
  took (``elapsed_ms``, from its first publish; absent if it was never published)

While an online peer has not declared yet (a mission's start, when every robot
declares at once), acknowledgements wait for it (at most ``ACK_HOLD_S``), and for the
declarations already queued (at most ``ACK_TURNS`` turns of the event loop), then go
out together as one ``node.interest_acks`` to the team that lists them all (one
``node.interest_ack`` if there is one). One message to each declarer made the start
cost (robots - 1) x robots messages; now each robot sends one or a few. A declarer
reads only its own entry of a batch. Later, a declaration is one robot's alone and is
acknowledged at once, as before: a batch to the team would be read by every robot for
the one it concerns. Waiting changes no decision of the peer rule: an acknowledgement
is still sent only after its declaration was recorded (I3 of interest.py), and a
declarer claims only once it has it (I1), so waiting delays claims and never lets one
through early. What it costs: a robot's first claim waits for the last robot's first
declaration (the declarations of a team started together fall within one tick period).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from msgspec import UNSET, UnsetType

from teamtree.agents.tasktree.human_teammates import HumanTeammates
from teamtree.agents.tasktree.robot_host import RobotHost
from teamtree.agents.treeprotocol.decided_wire import claim_decided_to_wire
from teamtree.agents.treeprotocol.peer_wire import (
    claim_to_wire,
    interest_ack_to_wire,
    interest_acks_to_wire,
    interest_to_wire,
    potentials_to_wire,
    reply_to_wire,
)
from teamtree.planners.tasktree import (
    ClaimDecided,
    InterestAck,
    PublishClaim,
    PublishInterest,
    PublishInterestAck,
    PublishPotentials,
    PublishReply,
)

__all__ = [
    "ACK_TURNS",
    "CLAIMS",
    "CLAIM_REPLY",
    "INTEREST",
    "INTEREST_ACK",
    "INTEREST_ACKS",
    "POTENTIALS",
    "PeerOutbox",
]

CLAIMS = "claims"
POTENTIALS = "potentials"
CLAIM_REPLY = "claim_reply"
INTEREST = "interest"
INTEREST_ACK = "interest_ack"
INTEREST_ACKS = "interest_acks"
ACK_TURNS = 32
"""Turns of the event loop the acknowledgements wait at most for the urgent messages
queued meanwhile to be read (each turn reads one or more)."""
ACK_HOLD_S = 0.1
"""How long acknowledgements wait at most for the online peers that have not declared
yet (a robot without declared interest never does)."""
ACK_POLL_S = 0.002


class PeerOutbox:
    """Publishes `host`'s peer-rule actions; `humans` answer from their models."""

    def __init__(self, host: RobotHost, humans: HumanTeammates):
        self.host = host
        self.humans = humans
        self._claim_clock: tuple[str, float] | None = None
        """The pending claim's id and when it was first published (``perf_counter``):
        its decision reports ``elapsed_ms`` to a fraction of a millisecond (stamps are
        whole milliseconds, and a claim takes 2-3 of them at 8 robots)."""
        self._acks: dict[str, InterestAck] = {}
        """Acknowledgements not yet sent, by declarer (the latest declaration's)."""
        self._acks_due: asyncio.Task[None] | None = None

    async def send(self, action: Any) -> bool:
        """Carry out `action` if it is one of the peer rule's messages; False if not."""
        host, humans = self.host, self.humans
        match action:
            case PublishClaim(claim=claim, to=to):
                if self._claim_clock is None or self._claim_clock[0] != claim.claim_id:
                    self._claim_clock = (claim.claim_id, time.perf_counter())
                if to is None:
                    await host.publish(CLAIMS, "node.claim", claim_to_wire(claim), team=True)
                elif to not in humans:  # only the peer that must answer receives it
                    body = claim_to_wire(claim)
                    await host.publish(CLAIMS, "node.claim", body, recipient=to, to=to)
                humans.claimed(claim, to)
            case PublishReply(reply=reply):
                await host.publish(
                    CLAIM_REPLY, "node.claim_reply", reply_to_wire(reply), recipient=reply.claimant
                )
            case PublishInterest(interest=interest, to=to):
                body = interest_to_wire(interest)
                if to is None:
                    await host.publish(INTEREST, "node.interest", body, team=True)
                elif to not in humans:
                    await host.publish(INTEREST, "node.interest", body, recipient=to, to=to)
                humans.declared(interest, to)
            case PublishInterestAck(ack=ack):
                if ack.declarer not in humans:
                    await self._acknowledge(ack)
            case PublishPotentials(potentials=potentials):
                body = potentials_to_wire(host.id, potentials, host.tree.leaves)
                await host.publish(POTENTIALS, "node.potentials", body, qos=0, retain=True)
            case ClaimDecided():
                await self._decided(action)
            case _:
                return False
        return True

    async def _acknowledge(self, ack: InterestAck) -> None:
        """Send `ack` now, or keep it for the start's batch (module docstring)."""
        if not self._acks and not self._peers_to_declare():
            await self.send_acks([ack])
            return
        held = self._acks.get(ack.declarer)
        if held is None or held.stamp <= ack.stamp:
            self._acks[ack.declarer] = ack
        if self._acks_due is None or self._acks_due.done():
            self._acks_due = self.host.spawn(self._acks_after_queue(), "interest_acks")

    async def _acks_after_queue(self) -> None:
        loop = asyncio.get_running_loop()
        while self._acks:  # those kept while the last ones went out go next
            starting = self._peers_to_declare()
            until = loop.time() + ACK_HOLD_S
            while self._peers_to_declare() and loop.time() < until:
                await asyncio.sleep(ACK_POLL_S)
            for _ in range(ACK_TURNS if starting else 0):  # the declarations queued
                if not self.host.connection.urgent_waiting():
                    break
                await asyncio.sleep(0)
            acks, self._acks = list(self._acks.values()), {}
            await self.send_acks(acks, batch=starting)

    def _peers_to_declare(self) -> bool:
        """Whether an online peer has not declared yet."""
        c = self.host.controller
        book = None if c is None else c.interest
        return book is not None and bool(book.undeclared(c.peers_online))

    async def send_acks(self, acks: list[InterestAck], *, batch: bool = False) -> None:
        """Send `acks`: with `batch` and several, as one batch to the team (the team's
        start), else one to each declarer."""
        host = self.host
        if batch and len(acks) >= 2:
            await host.publish(INTEREST_ACKS, "node.interest_acks", interest_acks_to_wire(acks))
            return
        for ack in acks:
            body = interest_ack_to_wire(ack)
            await host.publish(INTEREST_ACK, "node.interest_ack", body, recipient=ack.declarer)

    async def _decided(self, decided: ClaimDecided) -> None:
        """Log and publish a claim's decision, with how long it took."""
        claim, won, reason = decided.claim, decided.won, decided.reason
        elapsed_ms: float | UnsetType = UNSET
        clock, self._claim_clock = self._claim_clock, None
        if clock is not None and clock[0] == claim.claim_id:
            elapsed_ms = round((time.perf_counter() - clock[1]) * 1000, 3)
        self.host.log.info(
            "node.claim_won" if won else "node.claim_lost",
            node=claim.node,
            label=self.host.tree[claim.node].label,
            potential=round(claim.potential, 4),
            latency_ms=self.host._now()[0] - claim.stamp[0] if elapsed_ms is UNSET else elapsed_ms,
            reason=reason,
        )
        body = claim_decided_to_wire(claim.claim_id, claim.node, won, reason, elapsed_ms)
        await self.host.publish("events", "node.claim_decided", body)
