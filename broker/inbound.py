"""The inbound queue between the MQTT client and an agent's handlers.

A handler that falls behind (a busy core, a big team) must not fall further behind on
stale data: an observation is the world's state *now*, and a newer one on the same
topic replaces it. So the queue keeps at most one message per *latest-only* topic
(e.g. a driver's ``observation``): a newer message drops the queued one (counted, not
handled) and joins the back of the line. It never takes the older one's place: a
newer observation must not overtake what arrived between the two (a driver's
"behaviour finished" followed by an observation of the idle body would otherwise reach
the robot in the wrong order, and its body watch would call the behaviour lost).
Every other message (claims, replies, transitions, commands) is queued and delivered
in order, never shed: the peer rule's messages are never dropped here.

Messages on *urgent* channels (the peer rule's claims, replies and transitions) wait
in a lane of their own that is served first, in order: a claim waits for every online
peer's reply, so each peer's backlog of snapshots and observations was on its critical
path. This reorders messages of different channels only, which the peer rule allows
(its property tests deliver every message with its own random delay); each lane keeps
its order.

Used as aiomqtt's ``queue_type``; ``asyncio.Queue``'s ``_init``/``_put``/``_get`` are
its documented extension points (``PriorityQueue`` and ``LifoQueue`` use them).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Container
from typing import Any

__all__ = ["CoalescingQueue", "on_channels"]


def on_channels(topic: str, channels: Container[str]) -> bool:
    """Whether `topic` is on one of `channels` (its fifth level:
    ``teamtree/v1/<team>/<agent or _>/<channel>[/<to>]``)."""
    if not channels:
        return False
    parts = topic.split("/", 5)
    return len(parts) > 4 and parts[4] in channels


class _Slot:
    __slots__ = ("dead", "item", "topic")

    def __init__(self, topic: str | None, item: Any):
        self.topic = topic
        self.item = item
        self.dead = False


class CoalescingQueue(asyncio.Queue):  # type: ignore[type-arg]
    """An asyncio queue of received messages (``Incoming``, whose ``topic`` is a
    string) that keeps only the newest message of each topic in `latest` (a
    container of exact topic names, read at every put)."""

    def __init__(
        self,
        maxsize: int = 0,
        *,
        latest: Container[str] = frozenset(),
        urgent: Container[str] = frozenset(),
    ):
        self._latest = latest
        self._urgent_channels = urgent
        self.coalesced = 0
        """Messages replaced by a newer one on the same latest-only topic."""
        super().__init__(maxsize)

    def _init(self, maxsize: int) -> None:
        self._queue: deque[_Slot] = deque()
        self._queued: dict[str, _Slot] = {}
        self._dead = 0  # replaced slots still in the deque (skipped, not counted)
        self._urgent: deque[Any] = deque()

    def qsize(self) -> int:
        return len(self._queue) - self._dead + len(self._urgent)

    def empty(self) -> bool:
        return not self._queue and not self._urgent

    def _put(self, item: Any) -> None:
        topic = getattr(item, "topic", None)
        if topic is not None and on_channels(topic, self._urgent_channels):
            self._urgent.append(item)
            return
        if topic is not None and topic in self._latest:
            older = self._queued.get(topic)
            if older is not None:  # an older one still waits: drop it, queue the newer last
                older.dead = True
                older.item = None
                self._dead += 1
                self.coalesced += 1
            slot = self._queued[topic] = _Slot(topic, item)
        else:
            slot = _Slot(None, item)
        self._queue.append(slot)

    def _get(self) -> Any:
        if self._urgent:
            return self._urgent.popleft()
        slot = self._queue.popleft()
        while slot.dead:
            self._dead -= 1
            slot = self._queue.popleft()
        if slot.topic is not None:
            del self._queued[slot.topic]
        return slot.item
