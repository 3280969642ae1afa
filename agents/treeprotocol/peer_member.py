"""The peer rule's glue for agents that run a ``TaskController``, written once.

The seed 000 robot and the seed 004 multitask robot take claims, claim replies, node
transitions and snapshots from their peers the same way: decode the body, check that
the claimant, replier or agent named in it is the envelope's sender (one robot cannot
speak for another), drop and log anything else, and hand the event to ``feed``.

Only the mission's roster speaks for the tree: with ``roster`` set (the config's
members and humans), claims, replies, transitions and snapshots from anyone else
(observers, strangers, made-up ids) are dropped and counted as ``not_member``.

A claim or a declaration of interest is answered (a claim reply, an acknowledgement),
so a flood of them in a member's name made every peer answer each one. Each sender's
claims and declarations pass a token bucket first (``claim_limits``), sized far
above what the peer rule lets an honest member send; the rest are dropped and counted
as ``rate_limited`` (logged once per sender and interval, as every drop).

Declarations and their acknowledgements count only from agents of this kind, read
from the sender's presence. A member that joins a running team receives a running
peer's retained presence together with the declaration that peer addressed to it on
seeing it come online, and the declaration's urgent lane passes the presence: so one
from a roster member whose presence has not been read yet is held (the latest per
member and message kind) and taken when its presence comes, with its kind checked
then. Dropped, the declaration would stay unacknowledged, and the running peer could
claim nothing until its next timed resend (I1 of ``interest.py``).

They also tell their controller about the team the same way: the peers are the
ONLINE agents of the same kind (``peer_rule_peers``); a peer's presence change is a
``PresenceChanged``; losing the broker is ``ConnectionChanged(False)``; regaining it is
``ConnectionChanged(True, peers)`` followed by a fresh snapshot.
"""

from __future__ import annotations

import time
from typing import Any

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.agent_state import AgentState
from teamtree.agents.runtime.rate_limit import SenderBuckets
from teamtree.agents.runtime.routes import Handler
from teamtree.agents.runtime.team_view import Presence
from teamtree.agents.treeprotocol.peer_wire import (
    claim_from_wire,
    interest_ack_from_wire,
    interest_acks_from_wire,
    interest_from_wire,
    potentials_from_wire,
    reply_from_wire,
    snapshot_from_wire,
    transition_from_wire,
)
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.tasktree import ConnectionChanged, PresenceChanged, TaskController

__all__ = ["CLAIMS_PER_TICK", "CLAIM_BURST_MIN", "PeerRuleMember", "claim_limits"]

CLAIMS_PER_TICK = 4.0
"""Claims (and declarations) a sender may average per tick of ``[runtime] tick_hz``.
An honest member sends a peer at most two: it starts a claim only on a tick, one at
a time (the peer rule: one claim per attempt), and asks it again (a new round) at most
once per claim the peer sends it (rule 4) or per tick of its resend backoff; a
multitask robot's claims wait each for its decision and a lost unit waits a second.
Twice that leaves room for a peer's presence changes and a busy loop's catching up."""
CLAIM_BURST_MIN = 64.0
"""Claims a sender may send at once; a member whose tree has more leaves may send
twice its leaves (a multitask robot claims its plan's units one after the other)."""


def claim_limits(tick_hz: float, leaves: int) -> tuple[float, float]:
    """(claims a second, burst) a sender may send, for a team ticking at `tick_hz`
    with a tree of `leaves` leaves."""
    return max(1.0, CLAIMS_PER_TICK * tick_hz), max(CLAIM_BURST_MIN, 2.0 * leaves)


class PeerRuleMember(Agent):
    """An Agent whose ``feed(event)`` takes the peer rule's events (see module docstring).

    ``subscribe_peer_rule`` registers the four handlers on the given channels. Until a
    subclass sets ``controller``, presence and connection changes are not fed.
    ``roster``: the ids whose peer-rule messages count (None: anyone's, for tests).
    """

    controller: TaskController | None = None
    roster: frozenset[str] | None = None
    _potential_leaves: tuple[str, ...] = ()
    _limits: dict[str, SenderBuckets] | None = None
    _held: dict[tuple[str, str], tuple[Envelope, Topic, Handler]] | None = None
    """Declarations and acknowledgements from roster members whose presence was not
    read yet, per (member, what): the latest, taken when its presence comes."""

    def in_roster(self, agent_id: str) -> bool:
        """Whether `agent_id` may speak for the tree (always, without a roster)."""
        return self.roster is None or agent_id in self.roster

    async def feed(self, event: Any) -> None:
        """Hand one event to the controller and carry out its actions (subclasses)."""
        raise TypeError(f"{type(self).__name__} must define feed()")

    async def publish_controller_snapshot(self) -> None:
        """Publish the controller's snapshot (subclasses; sent after a reconnect)."""
        raise TypeError(f"{type(self).__name__} must define publish_controller_snapshot()")

    def peer_rule_peers(self) -> set[str]:
        """Agents of this kind ONLINE now, other than this one: the peers whose replies
        a claim waits for."""
        return {a for a in self.team_view.online(kind=self.kind) - {self.id} if self.in_roster(a)}

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        member = self.team_view.get(agent_id)
        peer = member is not None and member.kind == self.kind and agent_id != self.id
        if peer and self.in_roster(agent_id):
            await self.feed(PresenceChanged(agent_id, new is Presence.ONLINE))
        await self._take_held(agent_id)

    async def _take_held(self, agent_id: str) -> None:
        """Handle what `agent_id` declared or acknowledged before its presence was
        read (``_held``), now that its kind is known: after the presence change, so a
        peer that comes online acknowledges anew before its held word counts."""
        held = self._held
        if not held:
            return
        for key in [k for k in held if k[0] == agent_id]:
            env, topic, handler = held.pop(key)
            await handler(env, topic)

    async def on_connection_lost(self) -> None:
        if self.controller is not None and self.state is AgentState.RUNNING:
            await self.feed(ConnectionChanged(False))

    async def on_connection_regained(self) -> None:
        if self.controller is not None:
            await self.feed(ConnectionChanged(True, frozenset(self.peer_rule_peers())))
            await self.publish_controller_snapshot()

    def subscribe_peer_rule(
        self,
        *,
        claims: str,
        replies: str,
        transitions: str,
        snapshots: str,
        kinds: str = "node",
    ) -> None:
        """Take claims on the team channel ``claims``, replies addressed to this agent on
        ``replies``, and every agent's ``transitions`` and retained ``snapshots``, of
        message kinds ``<kinds>.claim``, ``.claim_reply``, ``.transition``, ``.snapshot``.
        A claim to one peer comes on the claimant's ``claims`` channel addressed to it.
        With a ``roster`` (set it before this call), transitions and snapshots come
        from its other members only, one subscription each.
        Claims and replies are critical, transitions urgent (``Agent.urgent``): every
        claim waits for the reply of every peer it asks, so claims and replies pass
        everything queued, in this agent and (``UrgentGate``) in the others of its
        process; transitions pass the snapshots and observations, so a robot that has
        just decided a claim picks its next leaf from a view that is not far behind
        the replies it read. At 32 robots every won claim sends a transition to every
        peer, and with transitions in the claims' lane a claim's replies waited behind
        them."""
        self.urgent(claims, replies, critical=True)
        self.urgent(transitions)
        self.on_team(claims, self._on_peer_claim, kind=f"{kinds}.claim")
        # a claim asked again of one peer comes on <claimant>/<claims>/<me>: only the
        # peer that must answer receives it (not every member, as on the team channel)
        self.on_agents(claims, self._on_peer_claim, kind=f"{kinds}.claim", addressed=True)
        self.on_agents(replies, self._on_peer_reply, kind=f"{kinds}.claim_reply", addressed=True)
        # with a roster, each other member's channels: the wildcard also brought
        # whatever else shares the channel's name, such as the world's whole state
        # (decoded by every robot, then dropped), and our own messages,
        # which the dispatcher drops once decoded (a robot never reads them)
        members = None if self.roster is None else self.roster - {self.id}
        self.on_agents(
            transitions, self._on_peer_transition, kind=f"{kinds}.transition", senders=members
        )
        # a snapshot supersedes the sender's last (every done leaf, what it works on):
        # no acknowledgement for each, and one still waiting gives way to a newer one
        self.on_agents(
            snapshots,
            self._on_peer_snapshot,
            kind=f"{kinds}.snapshot",
            senders=members,
            latest=True,
        )

    def _within_limit(self, env: Envelope, topic: Topic, what: str) -> bool:
        """Whether `env` (a message that gets an answer) is within its sender's
        bucket for `what`; dropped as ``rate_limited`` otherwise."""
        if self._limits is None:
            tree = self.controller.tree if self.controller is not None else None
            tree = tree or getattr(self, "tree", None) or getattr(self, "unit_tree", None)
            leaves = len(getattr(tree, "leaves", ()))
            rate, burst = claim_limits(self.runtime.tick_hz, leaves)
            self._limits = {k: SenderBuckets(rate, burst) for k in ("claim", "interest")}
        if self._limits[what].allow(env.sender, time.monotonic()):
            return True
        self._drop("rate_limited", str(topic), env.sender, f"{what}s over the sender's rate")
        return False

    async def _decoded(
        self, env: Envelope, topic: Topic, what: str, decode: Any, field: str
    ) -> None:
        if not self.in_roster(env.sender):
            self._drop("not_member", str(topic), env.sender, f"{what} from outside the roster")
            return
        if what in ("claim", "interest") and not self._within_limit(env, topic, what):
            return
        try:
            event = decode(env.body)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._drop("malformed", str(topic), env.sender, f"{what}: {exc}")
            return
        if event is None:  # a batch with nothing for this agent
            return
        if getattr(event, field) != env.sender:
            self._drop("sender_mismatch", str(topic), env.sender, f"{field} is not the sender")
            return
        await self.feed(event)

    def subscribe_interest(self, channel: str, acks: str, batched_acks: str) -> None:
        """Take peers' ``node.interest`` declarations on the team ``channel`` (and
        addressed to this agent on theirs, for a declaration sent to one peer), the
        ``node.interest_ack`` acknowledgements addressed to this agent on ``acks``,
        and each member's ``node.interest_acks`` batches on ``batched_acks`` (the one
        entry for this agent's declaration is fed; a batch without one is read and
        left). Urgent (behind claims and replies, which are critical): a claim waits
        for them."""
        self.urgent(channel, acks, batched_acks)
        self.on_team(channel, self._on_peer_interest, kind="node.interest")
        self.on_agents(channel, self._on_peer_interest, kind="node.interest", addressed=True)
        self.on_agents(acks, self._on_peer_interest_ack, kind="node.interest_ack", addressed=True)
        members = None if self.roster is None else self.roster - {self.id}
        self.on_agents(
            batched_acks,
            self._on_peer_interest_acks,
            kind="node.interest_acks",
            senders=members,
        )

    def _peer_of_my_kind(self, env: Envelope, topic: Topic, what: str, handler: Handler) -> bool:
        """Whether `env` comes from an agent of this kind, as its presence or factsheet
        says. A declaration makes its sender a peer whose acknowledgement every claim
        waits for (interest.py, I3), so another member of the roster must not send one.
        From a roster member whose presence was not read yet, `env` is held for
        `handler` until it is (``_take_held``); from anyone else, dropped."""
        member = self.team_view.get(env.sender)
        if member is not None and member.kind == self.kind:
            return True
        if member is None and self.roster is not None and self.in_roster(env.sender):
            if self._held is None:
                self._held = {}
            self._held[(env.sender, what)] = (env, topic, handler)  # one per member and what
            self.stats["held_for_presence"] += 1
            return False
        self._drop("not_peer", str(topic), env.sender, f"{what} from an agent not of this kind")
        return False

    async def _on_peer_interest(self, env: Envelope, topic: Topic) -> None:
        if self._peer_of_my_kind(env, topic, "interest", self._on_peer_interest):
            await self._decoded(env, topic, "interest", interest_from_wire, "agent")

    async def _on_peer_interest_ack(self, env: Envelope, topic: Topic) -> None:
        what = "interest acknowledgement"
        if self._peer_of_my_kind(env, topic, what, self._on_peer_interest_ack):
            await self._decoded(env, topic, what, interest_ack_from_wire, "agent")

    async def _on_peer_interest_acks(self, env: Envelope, topic: Topic) -> None:
        what = "interest acknowledgements"
        if self._peer_of_my_kind(env, topic, what, self._on_peer_interest_acks):
            me = self.id
            decode = lambda body: interest_acks_from_wire(body, me)  # noqa: E731
            await self._decoded(env, topic, what, decode, "agent")

    def subscribe_potentials(self, channel: str, leaves: tuple[str, ...]) -> None:
        """Take peers' ``node.potentials`` (contention avoidance) on their ``channel``,
        read in the order of `leaves` (the mission tree's). Each supersedes the
        sender's last (``on_agents(latest=True)``); with a roster, from its other
        members only."""
        self._potential_leaves = leaves
        members = None if self.roster is None else self.roster - {self.id}
        self.on_agents(
            channel,
            self._on_peer_potentials,
            kind="node.potentials",
            senders=members,
            latest=True,
        )

    async def _on_peer_potentials(self, env: Envelope, topic: Topic) -> None:
        leaves = self._potential_leaves
        await self._decoded(
            env, topic, "potentials", lambda b: potentials_from_wire(b, leaves), "agent"
        )

    async def _on_peer_claim(self, env: Envelope, topic: Topic) -> None:
        await self._decoded(env, topic, "claim", claim_from_wire, "claimant")

    async def _on_peer_reply(self, env: Envelope, topic: Topic) -> None:
        await self._decoded(env, topic, "claim reply", reply_from_wire, "replier")

    async def _on_peer_transition(self, env: Envelope, topic: Topic) -> None:
        await self._decoded(env, topic, "transition", transition_from_wire, "agent")

    async def _on_peer_snapshot(self, env: Envelope, topic: Topic) -> None:
        await self._decoded(env, topic, "snapshot", snapshot_from_wire, "agent")
