"""The re-sync, asked by a passive client (monitor, ``tree --live``, recorder, web view).

Readers that are not team members (they announce no presence) read the team's state
from retained messages through a wildcard subscription. A RabbitMQ cluster never
delivers retained messages to such a subscription, so after every connect a reader
also asks the team for its state, as a joining member does (``Resync``): it sends
``sync.request`` on ``_/sync`` with its own requester id as ``reply_to``; every member
running in cluster mode publishes again its retained messages (byte for byte) and
replies ``sync.done`` on ``<member>/reply/<requester>``. The reader merges what comes:
its own duplicate filter (topic, header id) drops what it already had from the broker.
On mosquitto nobody answers (members re-sync only in cluster mode) and the retained
messages arrive as always; the request is one message per round.

A re-published message arrives without the retain flag, yet it is kept state, not
news: readers that count only live messages (``record --until-done``, ``attach``'s
"is the team live") must not take an old snapshot for progress. ``kept`` calls a
message kept when the broker says so, or when it arrives during this connection's
re-sync and was stamped (``ts``, the publisher's wall clock) before the connect.
Choice: that rule trusts the publishers' clocks to within the re-sync's age; a live
message from a machine whose clock lags by more is also called kept. Messages queued
in a member's outbox while it was away and sent during our re-sync are called kept too.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable

from teamtree.agents.runtime.resync import (
    ROUNDS,
    SYNC_CHANNEL,
    SYNC_DONE,
    SYNC_REQUEST,
    SyncWireError,
    decode_sync_done,
    sync_request_body,
)
from teamtree.broker import TeamtreeError
from teamtree.broker.connection import Incoming, Outgoing
from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.topics import Topic, build, validate_id

__all__ = ["SYNC_GRACE_S", "SYNC_WAIT_S", "SyncAsker"]

SYNC_WAIT_S = 1.0
"""How long each round collects answers (the members' ``resync_wait_s`` default)."""
SYNC_GRACE_S = SYNC_WAIT_S * (ROUNDS + 1)
"""Longest a one-shot reader waits, after its own wait, for its re-sync to end."""
_REPLY = "reply"


class SyncAsker:
    """One passive client's re-sync: ``connected()`` after every connect (from the
    connection's ``on_connect``), ``on_message`` with every decoded team message,
    ``kept`` to tell re-published state from live news."""

    def __init__(
        self,
        team: str,
        publish: Callable[[Outgoing], Awaitable[bool]],
        *,
        prefix: str = "observer",
        wait_s: float = SYNC_WAIT_S,
        rounds: int = ROUNDS,
    ):
        self.team = validate_id(team, "team")
        self.requester = validate_id(f"{prefix}-{uuid.uuid4().hex[:8]}", "requester")
        self.wait_s = wait_s
        self.rounds = rounds
        self.synced = asyncio.Event()  #: set once this connection's rounds are over
        self.answered: set[str] = set()  #: who answered since the last connect
        self.asked = 0  #: requests sent
        self._publish = publish
        self._clock = HybridLogicalClock(self.requester)
        self._hid = wall_ms()  # header ids grow across restarts of the reader
        self._corrs: set[str] = set()
        self._since_ms = 0  #: wall clock at the last connect
        self._window_ends = 0.0  #: loop time after which nothing counts as re-synced
        self._task: asyncio.Task[None] | None = None

    def connected(self) -> None:
        """Start this connection's re-sync (restarting one a lost connection cut)."""
        loop = asyncio.get_running_loop()
        self._since_ms = wall_ms()
        self._corrs = set()
        self._window_ends = loop.time() + self.wait_s * (self.rounds + 1)
        self.synced.clear()
        self.answered = set()
        if self._task is not None:
            self._task.cancel()
        self._task = loop.create_task(self._ask(), name=f"teamtree[{self.requester}].sync")

    async def _ask(self) -> None:
        for _ in range(self.rounds):
            corr = uuid.uuid4().hex
            self._corrs.add(corr)
            self._hid += 1
            env = Envelope(
                kind=SYNC_REQUEST,
                sender=self.requester,
                hid=self._hid,
                ts=wall_ms(),
                hlc=self._clock.now(),
                body=sync_request_body(),
                reply_to=self.requester,
                corr=corr,
            )
            topic = build(self.team, None, SYNC_CHANNEL)
            try:
                await self._publish(Outgoing(topic, encode(env), qos=1))
            except TeamtreeError:  # lost the connection: the next connect asks again
                return
            self.asked += 1
            await asyncio.sleep(self.wait_s)
        self._window_ends = asyncio.get_running_loop().time() + self.wait_s
        self.synced.set()

    def on_message(self, env: Envelope, topic: Topic) -> None:
        """Note a ``sync.done`` addressed to this reader (a malformed one is not an
        answer)."""
        if (
            env.kind == SYNC_DONE
            and topic.channel == _REPLY
            and topic.recipient == self.requester
            and env.corr in self._corrs
        ):
            with contextlib.suppress(SyncWireError):
                decode_sync_done(env.body)
                self.answered.add(env.sender)

    def kept(self, env: Envelope, message: Incoming) -> bool:
        """Whether `message` is kept state (retained, or re-published for our re-sync)."""
        if message.retain:
            return True
        if asyncio.get_running_loop().time() > self._window_ends:
            return False
        return env.ts < self._since_ms

    async def wait_synced(self, timeout: float) -> bool:
        """Wait for this connection's re-sync to end; False after `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.synced.wait()
        return self.synced.is_set()

    async def close(self) -> None:
        """Stop asking."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
