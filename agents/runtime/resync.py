"""State re-sync on join, for brokers whose retained messages do not reach everyone.

Teamtree keeps its shared state (presence, factsheets, snapshots, the mission tree,
the world's state) in retained messages and reads it through wildcard subscriptions.
On mosquitto a joining agent receives all of it when it subscribes. A RabbitMQ
cluster stores retained messages per node and never sends them to a wildcard
subscription, so a joiner would see nothing of the team's past.

The re-sync replaces that: after every connect a clustered agent sends
``sync.request`` on the team channel ``_/sync``; every teammate that hears it publishes
again the last retained message of each of its topics (byte for byte, so receivers
that already hold it drop it as a duplicate) and then replies ``sync.done``. A
teammate's own messages arrive in order, so its reply comes after its state. The
joiner collects replies for ``resync_wait_s`` (who is out there is part of what it is
learning, so it cannot know whom to wait for), asks once more (``ROUNDS``), and is
then ``synced``. Requests that arrive together are answered with one re-publication.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body
from teamtree.broker import TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

if TYPE_CHECKING:
    from teamtree.agents.runtime.agent import Agent

SYNC_CHANNEL = "sync"
SYNC_REQUEST = "sync.request"
SYNC_DONE = "sync.done"
COALESCE_S = 0.02
"""Requests within this window share one re-publication."""
ROUNDS = 2
"""Requests per (re)connect. On a RabbitMQ 3.10 cluster, messages from a node other
than the joiner's were seen lost for a short time after its subscriptions were
acknowledged (a driver's re-published presence and its reply, once in about ten tea
parties), so the joiner asks again one wait later; what it already holds is dropped as
a duplicate."""


class SyncWireError(ValueError):
    """A ``sync.request`` or ``sync.done`` body that does not match its declared type."""


class SyncRequestBody(Struct, frozen=True):
    """``sync.request``: ``{}`` (who asks and where to answer is in the envelope)."""


class SyncDoneBody(Struct, frozen=True):
    """``sync.done``: ``{kept}``, how many retained topics the teammate published again."""

    kept: int


def decode_sync_request(body: Any) -> SyncRequestBody:
    """A ``sync.request`` body; raises SyncWireError naming the field."""
    return decode_body(body, SyncRequestBody, SyncWireError, SYNC_REQUEST)


def decode_sync_done(body: Any) -> SyncDoneBody:
    """A ``sync.done`` body; raises SyncWireError naming the field."""
    return decode_body(body, SyncDoneBody, SyncWireError, SYNC_DONE)


def sync_request_body() -> dict[str, Any]:
    """The ``sync.request`` body as it goes on the wire."""
    return msgspec.to_builtins(SyncRequestBody())


def sync_done_body(kept: int) -> dict[str, Any]:
    """The ``sync.done`` body as it goes on the wire."""
    return msgspec.to_builtins(SyncDoneBody(kept))


class Resync:
    """One agent's side of the re-sync: asking after a connect, answering teammates."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self.synced = asyncio.Event()
        self.answered = 0  #: sync requests answered
        self.republished = 0  #: retained messages published again
        self.last_heard: set[str] = set()  #: who answered this agent's last request
        self._batch: asyncio.Future[None] | None = None  #: not yet publishing

    def register(self) -> None:
        """Subscribe to teammates' requests (before the first connect)."""
        self.agent.on_team(SYNC_CHANNEL, self._on_request, kind=SYNC_REQUEST)

    async def ask(self) -> set[str]:
        """Ask the team for its state, in ``ROUNDS`` rounds of ``resync_wait_s``;
        returns who answered and sets ``synced``. When the connection drops meanwhile,
        ``synced`` stays as it was and the next connect asks again."""
        heard: set[str] = set()
        for _ in range(ROUNDS):
            answered = await self._round()
            if answered is None:
                return set()
            heard |= answered
        self.last_heard = heard
        self.agent.log.info("sync.done", answered=sorted(heard))
        self.synced.set()
        return heard

    async def _round(self) -> set[str] | None:
        """One request, waiting ``resync_wait_s``: who answered (None: connection lost).

        The request carries no deadline: a teammate that hears it late (a busy machine,
        a slow node) still publishes its state, which is applied whenever it arrives;
        only its ``sync.done`` then comes after the wait and is not counted."""
        agent = self.agent
        corr = uuid.uuid4().hex
        pending = agent.request_reply.pending.open(
            corr, SYNC_REQUEST, expect=None, first_only=False
        )
        try:
            await agent.publish(
                SYNC_CHANNEL,
                SYNC_REQUEST,
                sync_request_body(),
                team=True,
                corr=corr,
                reply_to=agent.id,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pending.done), agent.runtime.resync_wait_s)
            if pending.done.done() and pending.done.exception() is not None:
                raise pending.done.exception()  # type: ignore[misc]
            replies = dict(pending.replies)
        except TeamtreeError as exc:  # lost the connection: the next connect asks again
            agent.log.warning("sync.failed", error=str(exc))
            return None
        finally:
            agent.request_reply.pending.close(corr)
        answered = set()
        for sender, reply in replies.items():
            try:
                decode_sync_done(reply.body)
            except SyncWireError as exc:
                agent._drop("malformed", SYNC_DONE, sender, str(exc))
                continue
            answered.add(sender)
        return answered

    async def _on_request(self, env: Envelope, topic: Topic) -> None:
        try:
            decode_sync_request(env.body)
        except SyncWireError as exc:
            self.agent._drop("malformed", str(topic), env.sender, str(exc))
            return
        self.agent.spawn(self._answer(env), "sync.answer", optional=True)

    async def _answer(self, env: Envelope) -> None:
        # join a batch only before it starts publishing: what it already sent may have
        # been routed before this requester's subscriptions existed
        if self._batch is None:
            self._batch = asyncio.ensure_future(self._republish())
        batch = self._batch
        try:
            await asyncio.shield(batch)
        except TeamtreeError as exc:
            self.agent.log.warning("sync.republish_failed", error=str(exc))
            return
        try:
            kept = len(self.agent.connection.retained)
            await self.agent.reply(env, SYNC_DONE, sync_done_body(kept))
        except TeamtreeError as exc:
            self.agent.log.warning("sync.reply_failed", to=env.sender, error=str(exc))
            return
        self.answered += 1
        self.agent.log.debug("sync.answered", to=env.sender, republished=self.republished)

    async def _republish(self) -> None:
        await asyncio.sleep(COALESCE_S)
        self._batch = None
        connection = self.agent.connection
        for message in list(connection.retained.values()):
            await connection.publish(message, wait=False)
            self.republished += 1
