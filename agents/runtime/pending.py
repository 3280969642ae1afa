"""Requests waiting for replies, matched by correlation id."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from teamtree.broker.envelope import Envelope


@dataclass(slots=True)
class PendingRequest:
    """One open request. `done` resolves when `expect` is covered, or at the first
    reply when `expect` is None and `first_only` is set."""

    corr: str
    kind: str
    expect: frozenset[str] | None
    first_only: bool
    done: asyncio.Future[None]
    replies: dict[str, Envelope] = field(default_factory=dict)

    def add(self, reply: Envelope) -> None:
        if self.done.done() or reply.sender in self.replies:
            return  # late or duplicate
        if self.expect is not None and reply.sender not in self.expect:
            return
        self.replies[reply.sender] = reply
        if self.first_only or (self.expect is not None and self.expect <= set(self.replies)):
            self.done.set_result(None)


class PendingRequests:
    """The registry of open requests of one agent."""

    def __init__(self) -> None:
        self._open: dict[str, PendingRequest] = {}
        self.unmatched = 0

    def open(
        self, corr: str, kind: str, *, expect: frozenset[str] | None, first_only: bool
    ) -> PendingRequest:
        request = PendingRequest(
            corr, kind, expect, first_only, asyncio.get_running_loop().create_future()
        )
        if expect is not None and not expect:
            request.done.set_result(None)
        self._open[corr] = request
        return request

    def close(self, corr: str) -> None:
        self._open.pop(corr, None)

    def resolve(self, reply: Envelope) -> bool:
        """Attach a reply to its request; False when no open request matches."""
        request = self._open.get(reply.corr or "")
        if request is None:
            self.unmatched += 1
            return False
        request.add(reply)
        return True

    def fail_all(self, error: BaseException) -> None:
        """Fail every open request (connection lost, agent stopping)."""
        for request in self._open.values():
            if not request.done.done():
                request.done.set_exception(error)
                request.done.exception()  # mark retrieved: the waiter re-raises it
        self._open.clear()

    def __len__(self) -> int:
        return len(self._open)
