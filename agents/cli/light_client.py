"""A light client for one-shot commands: ask a team something and leave no trace.

``submit``, ``missions``, ``cancel`` and ``disturb`` send one request (or a few) and
wait for the answer. They are not team members: the client publishes no presence and
no factsheet, sets no Last Will and sends no heartbeat, so a team that served a
thousand calls lists only its agents. It reads the team's presence (retained) to know
who is online, publishes the request on ``<name>/<channel>`` (its own topic: under
access control the receiver knows the login) with ``reply_to`` and a correlation id,
and takes the first reply addressed to it on ``<responder>/reply/<name>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import uuid
from collections.abc import Container
from types import TracebackType
from typing import Any, Self

from teamtree.agents.runtime.own_presence import PRESENCE_CHANNEL
from teamtree.agents.runtime.request_reply import REPLY_CHANNEL
from teamtree.agents.runtime.team_view import TeamView
from teamtree.broker import RequestTimeoutError, WireError
from teamtree.broker.connection import Connection, Incoming, Outgoing
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import Envelope, decode, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.topics import build, parse, pattern, validate_id

__all__ = ["LightClient"]

_FACTSHEET = "factsheet"


class _Anyone:
    def __contains__(self, item: object) -> bool:
        return True


class LightClient:
    """One short session with the broker as `name`: requests and replies, nothing else."""

    def __init__(
        self,
        name: str,
        *,
        team: str,
        endpoint: Endpoint,
        username: str | None = None,
        password: str | None = None,
        tls_context: ssl.SSLContext | None = None,
    ):
        self.id = validate_id(name, "client name")
        self.team = validate_id(team, "team")
        self.endpoint = endpoint
        self.view = TeamView(self.id)  #: who is online, from their retained presence
        self._clock = HybridLogicalClock(self.id)
        self._hid = wall_ms()  # header ids grow across calls under one name
        self._sid = uuid.uuid4().hex[:16]  # two clients of one name are not duplicates
        self._waiting: dict[str, asyncio.Future[Envelope]] = {}
        self._from: dict[str, Container[str]] = {}  # corr -> who may answer it
        self.connection = Connection(
            endpoint,
            client_id=f"teamtree-{self.team}-{self.id}-{uuid.uuid4().hex[:6]}",
            on_message=self._receive,
            clean_session=True,
            username=username,
            password=password,
            tls_context=tls_context,
        )
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        for channel in (PRESENCE_CHANNEL, _FACTSHEET):
            await self.connection.subscribe(pattern(self.team, "+", channel))
        await self.connection.subscribe(pattern(self.team, "+", REPLY_CHANNEL, self.id))
        self._task = asyncio.create_task(self.connection.run(), name=f"teamtree[{self.id}]")
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.connection.close(), 3.0)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def wait_connected(self, timeout: float) -> None:
        """Wait for the connection; TimeoutError after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            await self.connection.connected.wait()

    async def _receive(self, message: Incoming) -> None:
        try:
            topic = parse(message.topic)
            env = decode(message.payload, topic=message.topic)
        except WireError:
            return  # not ours to judge: a bad message never stops the command
        if topic.agent is None or env.sender != topic.agent:
            return
        with contextlib.suppress(ValueError):
            if topic.channel == PRESENCE_CHANNEL:
                self.view.apply_presence(env.sender, env.body, env.ts)
            elif topic.channel == _FACTSHEET:
                self.view.apply_factsheet(env.sender, env.body)
        if topic.channel == REPLY_CHANNEL and topic.recipient == self.id:
            waiting = self._waiting.get(env.corr or "")
            if waiting is not None and not waiting.done() and env.sender in self._from[env.corr]:
                waiting.set_result(env)

    async def wait_online(self, kind: str, timeout: float) -> bool:
        """Whether an agent of `kind` is ONLINE within `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.view.online(kind):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def request(
        self,
        channel: str,
        kind: str,
        body: Any,
        *,
        timeout: float,
        to: str | None = None,
        team: bool = False,
    ) -> Envelope:
        """Publish `kind` on this client's own `channel` (with `team`, the team's) and
        return the first reply (from `to` when given: the request is addressed to it);
        RequestTimeoutError when none comes within `timeout` seconds."""
        corr = uuid.uuid4().hex
        waiting = self._waiting[corr] = asyncio.get_running_loop().create_future()
        self._from[corr] = _Anyone() if to is None else {to}
        self._hid += 1
        env = Envelope(
            kind=kind,
            sender=self.id,
            hid=self._hid,
            ts=wall_ms(),
            hlc=self._clock.now(),
            body=body,
            reply_to=self.id,
            corr=corr,
            to=to,
            sid=self._sid,
            deadline=wall_ms() + int(timeout * 1000),
        )
        try:
            topic = build(self.team, None if team else self.id, channel)
            # queued when the connection is down: sent after the reconnect, still in time
            await self.connection.publish(Outgoing(topic, encode(env), qos=1))
            async with asyncio.timeout(timeout):
                return await waiting
        except TimeoutError:
            said = f"no reply to {kind!r} within the deadline"
            raise RequestTimeoutError(said, kind=kind) from None
        finally:
            del self._waiting[corr], self._from[corr]
