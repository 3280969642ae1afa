"""The inbound queue between the MQTT client and an agent's handlers.

A handler that falls behind (a busy core, a big team) must not fall further behind on
stale data: an observation is the world's state *now*, and a newer one on the same
topic replaces it. So the queue keeps at most one message per *latest-only* topic
(e.g. a driver's ``observation``): a newer message replaces the queued one (counted,
not handled). It takes the older one's place in the line unless its sender queued
another message (of the normal lane) after the older one: then the older is dropped
and the newer joins the back, as a newer observation must not overtake what its
sender said between the two (a driver's "behaviour finished" followed by an
observation of the idle body would otherwise reach the robot in the wrong order, and
its body watch would call the behaviour lost). Other senders' messages have no order
with it (the broker orders each sender's messages only), so the newer overtakes them.
Always joining the back starved a busy agent: with more than one observation period
of other senders' messages always ahead of it, each observation was replaced before
it reached the front, and the agent never saw the world change again. A message
whose topic names no sender (a team channel) counts as every sender's.
Every other message (claims, replies, transitions, commands) is queued and delivered
in order, never shed: the peer rule's messages are never dropped here.

Messages on *urgent* channels (the peer rule's transitions, declarations and their
acknowledgements) wait in a lane of their own that is served before the other
messages, and messages on *critical* channels (claims and claim replies: what a
pending claim waits on) in one served before that: a claim waits for every online
peer's reply, so each peer's backlog of snapshots and observations was on its critical
path, and at 32 robots so were the transitions that every won claim sends to every
peer. This reorders messages of different channels only, which the peer rule allows
(its property tests deliver every message with its own random delay); each lane keeps
its order.

The lanes are per agent, but the agents of one process share its event loop: a
claim that reached one agent waited behind every other agent's snapshot or observation
handled in the same loop pass (with 32 robots and their drivers in two processes, many
times the broker's own delivery time).
So an agent whose next message is of a lower lane first waits, briefly, while any
agent of the process still has messages of a higher lane queued (``UrgentGate``): a
snapshot waits for the others' transitions and claims, a transition for their claims
and replies.

Used as aiomqtt's ``queue_type``; ``asyncio.Queue``'s ``_init``/``_put``/``_get`` are
its documented extension points (``PriorityQueue`` and ``LifoQueue`` use them).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Container
from typing import Any

__all__ = ["CRITICAL", "NORMAL", "URGENT", "CoalescingQueue", "UrgentGate", "channel_of",
           "give_way_to_critical", "on_channels", "sender_of", "urgent_gate"]  # fmt: skip

URGENT_GATE_MAX_S = 0.05
"""How long one agent's queued urgent messages may hold the process's other agents
back, from the moment they came (``UrgentGate``)."""

NORMAL, URGENT, CRITICAL = 0, 1, 2
"""A message's lane: handled after, before, or before even the urgent messages."""

_LANES = (CRITICAL, URGENT)  # the gated lanes, the highest first


def channel_of(topic: str) -> str | None:
    """The channel of `topic`, its fifth level
    (``teamtree/v1/<team>/<agent or _>/<channel>[/<to>]``), or None if it has none."""
    parts = topic.split("/", 5)
    return parts[4] if len(parts) > 4 else None


def on_channels(topic: str, channels: Container[str]) -> bool:
    """Whether `topic` is on one of `channels` (``channel_of``)."""
    return bool(channels) and channel_of(topic) in channels


class _Waiter:
    """One handler waiting at the gate: for `own`'s message of `lane` (``own`` None:
    work outside any queue), until its future is set."""

    __slots__ = ("future", "lane", "own", "timer", "until")

    def __init__(
        self, own: CoalescingQueue | None, lane: int, future: asyncio.Future[None]
    ) -> None:
        self.own = own
        self.lane = lane
        self.future = future
        self.until = 0.0  # monotonic seconds the timer is set for
        self.timer: asyncio.TimerHandle | None = None

    def wake(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class _Holders:
    """The queues that hold one lane's messages back from the others, with when each
    filled it. Held weakly: a queue dropped without ``release`` stops holding. A plain
    dict of weak references: the gate reads it on every message an agent takes, and a
    ``WeakKeyDictionary``'s guarded length and iteration cost a busy robot worker
    about a twentieth of its CPU."""

    __slots__ = ("_since",)

    def __init__(self) -> None:
        self._since: dict[weakref.ref[CoalescingQueue], float] = {}

    def __bool__(self) -> bool:
        return bool(self._since)

    def __contains__(self, queue: CoalescingQueue) -> bool:
        return weakref.ref(queue) in self._since

    def add(self, queue: CoalescingQueue, since: float) -> None:
        self._since[weakref.ref(queue, self._gone)] = since

    def pop(self, queue: CoalescingQueue) -> float | None:
        return self._since.pop(weakref.ref(queue), None)

    def items(self) -> list[tuple[CoalescingQueue, float]]:
        """The live queues and their times (a copy: a queue may die meanwhile)."""
        out = []
        for ref, since in list(self._since.items()):
            queue = ref()
            if queue is not None:
                out.append((queue, since))
        return out

    def _gone(self, ref: weakref.ref[CoalescingQueue]) -> None:
        self._since.pop(ref, None)


class UrgentGate:
    """The urgent and critical messages queued in one event loop, over every agent's
    queue.

    A queue reports when one of its lanes fills and when it empties (or is dropped at
    the end of a session); ``wait_clear`` lets a handler give way while another
    agent's queue holds a message of a higher lane. A queue holds the others back for
    at most `URGENT_GATE_MAX_S` from the moment its lane filled: an agent stuck in a
    slow handler, or one fed a steady stream of claims, must not slow every other
    agent's messages by that much each.

    A waiter is woken only when its own wait may be over: its own queue filled a
    higher lane (it must serve that), the lanes above its own emptied, or its time
    is up. Waking every waiter on every change put a task wake-up per waiting agent
    on the loop's ready queue each time any agent's lane filled or emptied: with 16
    robots a process, a claim that came found dozens of callbacks ready ahead of its
    reader's."""

    def __init__(self) -> None:
        self._busy: dict[int, _Holders] = {lane: _Holders() for lane in _LANES}
        self._waiters: list[_Waiter] = []
        self.waits = 0
        """Messages that gave way."""
        self.rewaits = 0
        """Waits woken while still held back (a timer that fired as another queue's
        lane filled): each one a loop turn spent for nothing."""

    @property
    def busy(self) -> bool:
        """Whether some queue holds an urgent or critical message."""
        return any(self._busy.values())

    def filled(self, queue: CoalescingQueue, lane: int = URGENT) -> None:
        busy = self._busy[lane]
        if queue in busy:
            return
        busy.add(queue, time.monotonic())
        for waiter in self._waiters:  # only its own agent's wait ends (it serves it)
            if waiter.own is queue and waiter.lane < lane:
                waiter.wake()

    def emptied(self, queue: CoalescingQueue, lane: int = URGENT) -> None:
        if self._busy[lane].pop(queue) is None or not self._waiters:
            return
        for waiter in self._waiters:
            if waiter.lane >= lane or waiter.future.done():
                continue
            until = self._held_until(waiter.own, waiter.lane)
            if until is None:
                waiter.wake()
            elif until < waiter.until:  # the queue that held it longest let go
                self._arm(waiter, until)

    def _arm(self, waiter: _Waiter, until: float) -> None:
        """(Re)set `waiter`'s timer to wake it at `until` (monotonic seconds)."""
        if waiter.timer is not None:
            waiter.timer.cancel()
        loop = waiter.future.get_loop()
        waiter.until = until
        waiter.timer = loop.call_later(max(0.0, until - time.monotonic()), waiter.wake)

    def _held_until(self, own: CoalescingQueue | None, lane: int) -> float | None:
        """Until when another queue's messages of a lane above `lane` hold `own`'s back
        (monotonic seconds), or None: none does, or `own` holds such messages (its
        agent must serve them, the others may be waiting on it). `own` None: work
        outside any queue (``give_way_to_critical``), held by every queue alike."""
        now: float | None = None
        until: float | None = None
        for higher in _LANES:
            if higher <= lane:
                break
            busy = self._busy[higher]
            if not busy:
                continue
            if now is None:
                now = time.monotonic()
            for queue, since in busy.items():
                if queue is own:
                    return None
                end = since + URGENT_GATE_MAX_S
                if end > now and (until is None or end > until):
                    until = end
        return until

    async def wait_clear(
        self, own: CoalescingQueue | None, lane: int = NORMAL, *, at_most: float | None = None
    ) -> None:
        """Return once no other queue of this loop holds `own`'s message of `lane`
        back (``_held_until``), or after `at_most` seconds in all."""
        until = self._held_until(own, lane)
        if until is None:
            return
        self.waits += 1
        loop = asyncio.get_running_loop()
        give_up = None if at_most is None else time.monotonic() + at_most
        while until is not None:
            if give_up is not None:
                if time.monotonic() >= give_up:
                    return
                until = min(until, give_up)
            waiter = _Waiter(own, lane, loop.create_future())
            self._arm(waiter, until)
            self._waiters.append(waiter)
            try:
                await waiter.future
            finally:
                self._waiters.remove(waiter)
                if waiter.timer is not None:
                    waiter.timer.cancel()
            until = self._held_until(own, lane)
            if until is not None:
                self.rewaits += 1


_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, UrgentGate] = (
    weakref.WeakKeyDictionary()
)


def urgent_gate() -> UrgentGate:
    """The running loop's gate (one per loop: tests run several loops in turn); a
    queue made outside a loop gets one of its own."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return UrgentGate()
    gate = _GATES.get(loop)
    if gate is None:
        gate = _GATES[loop] = UrgentGate()
    return gate


async def give_way_to_critical() -> None:
    """For an agent's work outside its message handlers (a tick, a driver's poll of
    its world): wait while an agent of this loop has claims or replies (critical
    messages) queued, and at most ``URGENT_GATE_MAX_S`` in all: however many claims
    come, a tick (a lease's renewal) or a poll is late by no more. Otherwise, with
    many robots and their drivers in one process, the ticks and polls run in the same
    loop turns as the readers that have a claim to answer."""
    await urgent_gate().wait_clear(None, URGENT, at_most=URGENT_GATE_MAX_S)


class _Slot:
    """A place in the normal lane. For a latest-only topic: its `sender` and whether
    that sender queued another normal message after it (`passed`: a newer message on
    the topic must then go to the back, behind that one)."""

    __slots__ = ("dead", "item", "passed", "sender", "topic")

    def __init__(self, topic: str | None, item: Any, sender: str | None = None):
        self.topic = topic
        self.item = item
        self.sender = sender
        self.dead = False
        self.passed = False


def sender_of(topic: str) -> str | None:
    """The agent `topic` belongs to, its fourth level
    (``teamtree/v1/<team>/<agent>/...``); None for a team channel (``_``) or a topic
    too short to name one."""
    parts = topic.split("/", 4)
    if len(parts) < 5 or parts[3] == "_":
        return None
    return parts[3]


class CoalescingQueue(asyncio.Queue):  # type: ignore[type-arg]
    """An asyncio queue of received messages (``Incoming``, whose ``topic`` is a
    string) that keeps only the newest message of each topic in `latest` (a
    container of exact topic names, read at every put), and serves messages on the
    `critical` channels first, then those on the `urgent` ones (a channel in both is
    critical), then the rest."""

    def __init__(
        self,
        maxsize: int = 0,
        *,
        latest: Container[str] = frozenset(),
        urgent: Container[str] = frozenset(),
        critical: Container[str] = frozenset(),
    ):
        self._latest = latest
        self._urgent_channels = urgent
        self._critical_channels = critical
        self.coalesced = 0
        """Messages replaced by a newer one on the same latest-only topic."""
        super().__init__(maxsize)

    def _init(self, maxsize: int) -> None:
        self._queue: deque[_Slot] = deque()
        self._queued: dict[str, _Slot] = {}
        # per sender, the latest-only slots it has waiting (see ``_Slot.passed``)
        self._waiting: dict[str | None, list[_Slot]] = {}
        self._dead = 0  # replaced slots still in the deque (skipped, not counted)
        self._critical: deque[Any] = deque()
        self._urgent: deque[Any] = deque()
        self.taken_lane = NORMAL
        """The lane of the message taken last (``lane_of``, without reading its topic
        again)."""
        self._gate = urgent_gate()

    def qsize(self) -> int:
        return len(self._queue) - self._dead + len(self._urgent) + len(self._critical)

    def empty(self) -> bool:
        return not self._queue and not self._urgent and not self._critical

    def lane_of(self, topic: str) -> int:
        """The lane a message on `topic` waits in: CRITICAL, URGENT or NORMAL."""
        channel = channel_of(topic)
        if channel is None:
            return NORMAL
        if channel in self._critical_channels:
            return CRITICAL
        return URGENT if channel in self._urgent_channels else NORMAL

    def _put(self, item: Any) -> None:
        topic = getattr(item, "topic", None)
        lane = NORMAL if topic is None else self.lane_of(topic)
        if lane == CRITICAL:
            self._critical.append(item)
            self._gate.filled(self, CRITICAL)
            return
        if lane == URGENT:
            self._urgent.append(item)
            self._gate.filled(self, URGENT)
            return
        if topic is None:
            self._pass(None)
            self._queue.append(_Slot(None, item))
            return
        sender = sender_of(topic)
        if topic not in self._latest:
            self._pass(sender)
            self._queue.append(_Slot(None, item))
            return
        older = self._queued.get(topic)
        if older is not None:
            self.coalesced += 1
            if not older.passed:  # nothing of its sender since: the newer takes its place
                older.item = item
                return
            older.dead = True  # the newer goes behind what its sender said since
            older.item = None
            self._dead += 1
            self._unwait(older)
        self._pass(sender)
        slot = self._queued[topic] = _Slot(topic, item, sender)
        self._waiting.setdefault(sender, []).append(slot)
        self._queue.append(slot)

    def _pass(self, sender: str | None) -> None:
        """A normal message of `sender` (None: of no one sender) was queued: the
        latest-only slots it passes may no longer be overtaken by a newer message."""
        waiting = self._waiting
        if not waiting:
            return
        if sender is None:
            for slots in waiting.values():
                for slot in slots:
                    slot.passed = True
            return
        for key in (sender, None):
            for slot in waiting.get(key, ()):
                slot.passed = True

    def _unwait(self, slot: _Slot) -> None:
        slots = self._waiting[slot.sender]
        slots.remove(slot)
        if not slots:
            del self._waiting[slot.sender]

    def _get(self) -> Any:
        if self._critical:
            item = self._critical.popleft()
            if not self._critical:
                self._gate.emptied(self, CRITICAL)
            self.taken_lane = CRITICAL
            return item
        if self._urgent:
            item = self._urgent.popleft()
            if not self._urgent:
                self._gate.emptied(self, URGENT)
            self.taken_lane = URGENT
            return item
        self.taken_lane = NORMAL
        slot = self._queue.popleft()
        while slot.dead:
            self._dead -= 1
            slot = self._queue.popleft()
        if slot.topic is not None:
            del self._queued[slot.topic]
            self._unwait(slot)
        return slot.item

    def urgent_waiting(self, above: int = NORMAL) -> bool:
        """Whether a message of a lane above `above` (any urgent or critical one, by
        default) is queued here."""
        if above >= CRITICAL:
            return False
        return bool(self._critical) or (above < URGENT and bool(self._urgent))

    async def give_way(self, lane: int = NORMAL) -> None:
        """Before a message of `lane` is handled: wait while another agent of this loop
        has messages of a higher lane queued (``UrgentGate.wait_clear``)."""
        await self._gate.wait_clear(self, lane)

    def release(self) -> None:
        """The session that filled this queue is over: its urgent and critical
        messages no longer hold the loop's other agents back."""
        for lane in _LANES:
            self._gate.emptied(self, lane)
