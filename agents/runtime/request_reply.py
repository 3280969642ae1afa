"""Request/reply over the team's topics: requests out, replies matched back.

A request carries a fresh correlation id, ``reply_to`` (the requester) and a deadline;
replies come on ``<replier>/reply/<requester>`` with the request's correlation id and
resolve the pending request (``pending.PendingRequests``) that waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from teamtree.agents.runtime.pending import PendingRequests
from teamtree.broker import RequestTimeoutError
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms

if TYPE_CHECKING:
    from teamtree.agents.runtime.agent import Agent

REPLY_CHANNEL = "reply"


class RequestReply:
    """One agent's requests in flight and its replies to others' requests."""

    def __init__(self, agent: Agent):
        self._agent = agent
        self.pending = PendingRequests()

    async def reply(self, request: Envelope, kind: str, body: Any = None) -> None:
        """Answer `request` on ``<self>/reply/<requester>`` with its correlation id."""
        if request.reply_to is None or request.corr is None:
            self._agent.log.warning("reply.no_address", kind=request.kind, sender=request.sender)
            return
        await self._agent.publish(
            REPLY_CHANNEL, kind, body, recipient=request.reply_to, corr=request.corr
        )

    async def request(
        self,
        channel: str,
        kind: str,
        body: Any = None,
        *,
        to: str | None = None,
        timeout: float | None = None,
        own: bool = False,
    ) -> Envelope:
        """Send a request on the team channel and return the first reply (from `to`
        when given). With `own`, on this agent's own `channel` instead: the topic names
        the sender, so under access control the receiver knows the request comes from
        this login. Raises RequestTimeoutError at the deadline ("not granted") and
        ConnectionLostError if the connection drops meanwhile."""
        replies = await self._exchange(
            channel,
            kind,
            body,
            to=to,
            expect=None if to is None else [to],
            first_only=True,
            timeout=timeout,
            team=not own,
        )
        if not replies:
            raise RequestTimeoutError(
                f"no reply to {kind!r}{f' from {to!r}' if to else ''} within the deadline",
                kind=kind,
            )
        return next(iter(replies.values()))

    async def gather(
        self,
        channel: str,
        kind: str,
        body: Any = None,
        *,
        expect: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Envelope]:
        """Send a request on the team channel and collect replies until every agent in
        `expect` has answered or the deadline passes; returns what arrived (by sender).
        Raises ConnectionLostError if the connection drops meanwhile."""
        return await self._exchange(
            channel, kind, body, to=None, expect=expect, first_only=False, timeout=timeout
        )

    async def _exchange(
        self,
        channel: str,
        kind: str,
        body: Any,
        *,
        to: str | None,
        expect: Iterable[str] | None,
        first_only: bool,
        timeout: float | None,
        team: bool = True,
    ) -> dict[str, Envelope]:
        agent = self._agent
        timeout = agent.runtime.request_timeout_s if timeout is None else timeout
        corr = uuid.uuid4().hex
        pending = self.pending.open(
            corr, kind, expect=None if expect is None else frozenset(expect), first_only=first_only
        )
        try:
            await agent.publish(
                channel,
                kind,
                body,
                team=team,
                to=to,
                corr=corr,
                reply_to=agent.id,
                deadline=wall_ms() + int(timeout * 1000),
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pending.done), timeout)
            if pending.done.done() and pending.done.exception() is not None:
                raise pending.done.exception()  # type: ignore[misc]
            return dict(pending.replies)
        finally:
            self.pending.close(corr)
