"""A broker connection that survives the broker: reconnect, re-subscribe, re-announce.

aiomqtt 2.x does not reconnect by itself, so every attempt uses a fresh ``Client``,
with exponential backoff and jitter between attempts. QoS 1 messages published while
disconnected (or whose acknowledgement was lost with the connection) wait in a bounded
outbox and are sent, in order, after the next connect; delivery is therefore
at-least-once and receivers de-duplicate by header id or idempotency key.

Publishes are pipelined: a QoS 1 message is written in call order and its PUBACK is
tracked in the background (``publish(..., wait=False)``), so a handler that answers a
message does not hold up the next one for a broker round trip. Messages whose PUBACK
has not come when the session ends go back to the front of the outbox, in order.
Tracking is a callback on the acknowledgement's future, and one watchdog task gives up
on those that did not come within the publish timeout (a task and a timer for each
publish would be a large share of its CPU cost).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import itertools
import random
import socket
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Container
from typing import TYPE_CHECKING

import aiomqtt
import structlog

from teamtree.broker.client_choice import session_client_class
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.errors import ConnectionLostError, LifecycleError, OutboxFullError
from teamtree.broker.failover import NodeRing
from teamtree.broker.inbound import CRITICAL, CoalescingQueue, on_channels
from teamtree.broker.messages import Incoming, Outgoing

if TYPE_CHECKING:  # imported by client_choice only where it may run
    from teamtree.broker.fast_client import FastClient

log = structlog.get_logger("teamtree.broker")

SUBSCRIBE_BATCH = 64
"""Topic filters sent in one SUBSCRIBE packet (a robot of a 32-robot mission subscribes
to each member's transitions and snapshots: ~70 filters)."""

MAX_INFLIGHT = 200
"""QoS 1 messages paho keeps unacknowledged on the wire before it queues (its default
is 20, which a burst of claim replies reaches)."""

RECONNECTABLE = (aiomqtt.MqttError, ConnectionLostError, OSError, TimeoutError)
"""Errors of the link to the broker: the session ends and the connection reconnects."""

#: Small request/reply messages must not wait for Nagle's algorithm (~40 ms each way).
NODELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


class ConnectionState(enum.Enum):
    """Lifecycle of a Connection."""

    UNSTARTED = "unstarted"  #: constructed, ``run`` not called yet
    CONNECTING = "connecting"  #: between attempts, or waiting for CONNACK
    CONNECTED = "connected"  #: subscribed, announced, outbox flushed
    CLOSING = "closing"  #: ``close`` called; final messages going out
    CLOSED = "closed"  #: disconnected for good


MessageHandler = Callable[[Incoming], Awaitable[None]]
ConnectHook = Callable[[], Awaitable[None]]
DisconnectHook = Callable[[], None]
WillFactory = Callable[[], Outgoing | None]


class Connection:
    """One agent's session with the broker.

    `on_message` is awaited for every message, in order; it must not wait for other
    messages (spawn a task for that). `on_connect` runs after every (re)connect, once
    subscriptions are back, and is where an agent re-announces its presence.
    `will` is called before each attempt so the Last Will carries fresh stamps.
    An endpoint with fallbacks (a broker cluster) is used one node at a time: the
    connection starts on a node picked by its client id and moves to the next when it
    loses or cannot reach it (``NodeRing``); ``endpoint`` is the node in use.
    `latest_topics`: topics whose messages only the newest counts (observations): a
    newer one replaces a queued older one (``CoalescingQueue``); read at every message,
    so the caller may add topics later. `urgent_channels`: channels whose messages are
    handled before any other waiting message (``CoalescingQueue``), also read live;
    `critical_channels`: channels whose messages are handled before even those, and
    whose own messages this connection writes within ``publish`` (with everything
    published before them), not on the next loop turn (the others a loop turn
    gathers go out in one system call).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        client_id: str,
        on_message: MessageHandler,
        on_connect: ConnectHook | None = None,
        on_disconnect: DisconnectHook | None = None,
        will: WillFactory | None = None,
        keepalive: int = 5,
        outbox_limit: int = 10_000,
        backoff_min: float = 0.05,
        backoff_max: float = 2.0,
        publish_timeout: float = 5.0,
        clean_session: bool = False,
        username: str | None = None,
        password: str | None = None,
        tls_context: ssl.SSLContext | None = None,
        latest_topics: Container[str] = frozenset(),
        urgent_channels: Container[str] = frozenset(),
        critical_channels: Container[str] = frozenset(),
    ):
        self.nodes = NodeRing(endpoint, client_id)
        self.endpoint = self.nodes.current
        self._latest_topics = latest_topics
        self._urgent_channels = urgent_channels
        self._critical_channels = critical_channels
        self._coalesced_before = 0
        self._inbound: CoalescingQueue | None = None
        self._unhandled: CoalescingQueue | None = None  # the last session's backlog
        self.handed_after_drop = 0
        """Messages a session received but handed over only after it ended."""
        self.client_id = client_id
        self._on_message = on_message
        self._on_connect = on_connect
        self._on_disconnect = on_disconnect
        self._will = will
        self._keepalive = keepalive
        self._outbox: deque[Outgoing] = deque()
        self._outbox_limit = outbox_limit
        self._backoff = (backoff_min, backoff_max)
        self._publish_timeout = publish_timeout
        self._clean_session = clean_session
        self._auth = (username, password)
        self._tls = tls_context
        self._subscriptions: dict[str, int] = {}
        self._client: FastClient | None = None
        self._direct = False  # True once the outbox is drained after a connect
        self._flush_lock = asyncio.Lock()
        self.state = ConnectionState.UNSTARTED
        self.connected = asyncio.Event()
        self.connects = 0
        self.last_error: str | None = None
        """Why the last attempt to connect failed (None once connected): for errors
        that say more than "cannot connect"."""
        self.dropped_qos0 = 0
        self.failure: Exception | None = None
        """The unexpected error that ended ``run``, if one did: logged as
        ``broker.connection_failed`` and raised from ``run``."""
        self._connected_at: float | None = None  # loop time the session came up
        self._run_task: asyncio.Task[None] | None = None
        self._flush_task: asyncio.Future[None] | None = None
        self._session_over = asyncio.Event()
        self._inflight: dict[int, Outgoing] = {}  # sent, PUBACK awaited; in send order
        # seq -> the acknowledgement's future and the loop time it is given up at, in
        # send order (so the oldest is first); read by _watch
        self._tracked: dict[int, tuple[asyncio.Future[None], float]] = {}
        self._watchdog: asyncio.Task[None] | None = None
        self._seq = itertools.count()
        #: the last retained message published per topic (what a re-sync publishes again)
        self.retained: dict[str, Outgoing] = {}

    # -- lifecycle -------------------------------------------------------------

    async def run(self) -> None:
        """Connect and keep connecting until ``close``; returns when closed."""
        if self.state is not ConnectionState.UNSTARTED:
            raise LifecycleError(f"connection {self.client_id!r} was already started")
        self.state = ConnectionState.CONNECTING
        self._run_task = asyncio.current_task()
        try:
            await self._loop()
        except asyncio.CancelledError:
            if self.state is not ConnectionState.CLOSING:
                raise
        finally:
            self.state = ConnectionState.CLOSED

    async def _loop(self) -> None:
        """Run sessions until closed. A session ends in a reconnect (after a backoff)
        on any error of the link, whatever the connection was doing then (a drop
        while the agent says ONLINE raises ``ConnectionLostError`` from the connect
        hook: that too). Anything else is a bug: logged as an error, then raised
        from ``run``, never a loop that ends unseen."""
        attempt = 0
        loop = asyncio.get_running_loop()
        while self.state is ConnectionState.CONNECTING:
            try:
                await self._handle_unhandled()
                await self._session()
            except RECONNECTABLE as exc:
                if self.state is ConnectionState.CONNECTED:
                    log.warning("broker.disconnected", endpoint=str(self.endpoint), error=str(exc))
                else:
                    self.last_error = str(exc) or type(exc).__name__
                    log.debug("broker.connect_failed", endpoint=str(self.endpoint), error=str(exc))
            except Exception as exc:
                self.failure = exc
                self.state = ConnectionState.CLOSED
                log.error(
                    "broker.connection_failed",
                    endpoint=str(self.endpoint),
                    error=repr(exc),
                    action="not reconnecting",
                    exc_info=True,
                )
                raise
            finally:
                was_connected = self._client is not None and self.connected.is_set()
                if self._connected_at is not None:
                    if loop.time() - self._connected_at >= self._backoff[1]:
                        attempt = 0  # a session that held: the next drop starts over
                    self._connected_at = None
                self._session_over.set()
                self._client = None
                self._direct = False
                self._requeue_inflight()
                if self._inbound is not None:
                    self._inbound.release()
                self.connected.clear()
                if self.state is ConnectionState.CONNECTED:
                    self.state = ConnectionState.CONNECTING
                if was_connected and self._on_disconnect is not None:
                    self._on_disconnect()
            if self.state is not ConnectionState.CONNECTING:
                break
            self.endpoint = self.nodes.advance()
            low, high = self._backoff
            delay = min(high, low * 2**attempt) * random.uniform(0.5, 1.0)
            attempt = min(attempt + 1, 16)
            await asyncio.sleep(delay)

    async def _session(self) -> None:
        will = self._will() if self._will else None
        username, password = self._auth
        if self._inbound is not None:
            self._coalesced_before += self._inbound.coalesced
        queue = functools.partial(
            CoalescingQueue,
            latest=self._latest_topics,
            urgent=self._urgent_channels,
            critical=self._critical_channels,
        )
        client = session_client_class()(  # FastClient, or the plain fallback (client_choice)
            self.endpoint.host,
            self.endpoint.port,
            identifier=self.client_id,
            clean_session=self._clean_session,
            keepalive=self._keepalive,
            timeout=self._publish_timeout,
            transport=self.endpoint.transport,  # type: ignore[arg-type]
            websocket_path=self.endpoint.path,
            will=aiomqtt.Will(will.topic, will.payload, will.qos, will.retain) if will else None,
            username=username,
            password=password,
            tls_context=self._tls or (ssl.create_default_context() if self.endpoint.tls else None),
            socket_options=NODELAY if self.endpoint.transport == "tcp" else None,
            max_inflight_messages=MAX_INFLIGHT,
            queue_type=queue,  # type: ignore[arg-type]
        )
        self._inbound = client.inbound
        self._session_over = asyncio.Event()
        async with client:
            try:
                await self._serve(client)
            except RECONNECTABLE:
                self._unhandled = client.inbound
                raise
            except Exception:
                self._abandon(client)
                raise

    async def _serve(self, client: FastClient) -> None:
        """One session: subscribe, announce (``on_connect``), send the outbox, then
        hand every message received to ``on_message`` until the session ends."""
        self._client = client
        filters = list(self._subscriptions.items())
        for start in range(0, len(filters), SUBSCRIBE_BATCH):  # one SUBSCRIBE per batch
            await client.subscribe(filters[start : start + SUBSCRIBE_BATCH])
        self.state = ConnectionState.CONNECTED
        self._connected_at = asyncio.get_running_loop().time()
        self.connects += 1
        self.last_error = None
        if self._on_connect is not None:
            await self._on_connect()
        await self._flush()
        self.connected.set()
        log.debug("broker.connected", endpoint=str(self.endpoint), connects=self.connects)
        inbound = self._inbound
        while True:
            message = await client.next_message()
            lane = inbound.taken_lane
            if lane != CRITICAL:
                # another agent of this process may hold a claim or a reply (or,
                # for a message that is not urgent, a transition): let it go
                # first, then serve ours of a higher lane that came meanwhile,
                # each giving way in its turn as the first did (served in a row,
                # a backlog of transitions held every other agent's claims and
                # replies back)
                await inbound.give_way(lane)
                while inbound.urgent_waiting(above=lane):
                    first = inbound.get_nowait()
                    if inbound.taken_lane != CRITICAL:
                        await inbound.give_way(inbound.taken_lane)
                    await self._on_message(first)
                    await client.take_turn()
            await self._on_message(message)

    async def _handle_unhandled(self) -> None:
        """Hand over what the last session received but had not handed over when it
        ended: its QoS 1 messages were acknowledged on receipt, so the broker will not
        send them again, and a busy agent's backlog would be lost with the session.
        Handled in order, before anything the next session receives."""
        queue, self._unhandled = self._unhandled, None
        while queue is not None and not queue.empty():
            message = queue.get_nowait()
            if isinstance(message, Incoming):  # not a client's wake-up marker
                self.handed_after_drop += 1
                await self._on_message(message)

    @staticmethod
    def _abandon(client: FastClient, reason: str = "abandoned after an unexpected error") -> None:
        """End `client`'s session without a DISCONNECT, so the broker publishes the
        Last Will: a connection that fails with a bug, or a stopping agent whose last
        words the broker did not take, must not leave its agent shown online."""
        client.abandon(reason)

    async def close(
        self, final: list[Outgoing] | None = None, *, timeout: float = 2.0, drain: float = 4.0
    ) -> None:
        """Publish `final` (e.g. OFFLINE presence), then disconnect cleanly so the broker
        does not fire the Last Will. Returns when the session has ended.

        Once a session has been up, `final` goes through the outbox like any QoS 1
        message, and messages still in it (queued while reconnecting, or put back when
        their PUBACK was lost) are given up to `drain` seconds to reach the broker: an
        agent that finished its work just as its session ended must not take its last
        words (its "done", its goodbye) with it. So a session the broker dropped just
        before the stop (a starved process past its keep-alive: the Will went out) is
        connected again to say `final` after the Will. What is still unsent then is
        logged, not hidden, and the session is dropped without a DISCONNECT so the
        broker publishes the Will: the team sees the agent gone. `timeout` bounds the
        wait for acknowledgements of messages pipelined on the last session."""
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if self.state is not ConnectionState.UNSTARTED and self.connects:
            for message in final or []:
                with contextlib.suppress(OutboxFullError):
                    await self.publish(message, wait=False)
        delivered = True
        if (self._outbox or self._inflight) and self.state is not ConnectionState.UNSTARTED:
            delivered = await self._drain(drain)
        self.state = ConnectionState.CLOSING
        if not delivered and self._client is not None and self.connected.is_set():
            # its last words did not reach the broker: leave by the Will, so the team
            # sees it gone instead of a member that went quiet
            self._abandon(self._client, "last words not acknowledged")
        elif self._tracked and self.connected.is_set():  # pipelined messages: acks first
            acks = {ack for ack, _at in self._tracked.values()}
            await asyncio.wait(acks, timeout=timeout)
        if self._watchdog is not None:
            self._watchdog.cancel()
        task = self._run_task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _drain(self, within: float) -> bool:
        """Wait (at most `within` s) until a connected session has sent the outbox and
        the broker acknowledged every message in flight; True if it did.

        A stop cannot wait out the publish timeout of a session that lost its
        acknowledgements (``_flush_quietly``): when nothing was acknowledged for half
        of `within`, that session is dropped once without a DISCONNECT (the agent is
        leaving: its Will says so at once, whatever the reconnect manages) and the
        reconnect sends the rest."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        stalled_after = within / 2
        pending = len(self._outbox) + len(self._inflight)
        moved_at = loop.time()
        replaced = False
        while self._outbox or self._inflight or not self.connected.is_set():
            now = loop.time()
            if now >= deadline:
                log.warning(
                    "broker.unsent",
                    endpoint=str(self.endpoint),
                    outbox=len(self._outbox) + len(self._inflight),
                    error=f"the broker did not take them within {within:g} s of stopping",
                )
                return False
            left = len(self._outbox) + len(self._inflight)
            if left < pending or not self.connected.is_set():
                moved_at = now
            pending = left
            client = self._client
            if self.connected.is_set():
                if not replaced and client is not None and now - moved_at >= stalled_after:
                    replaced = True
                    log.warning(
                        "broker.ack_lost",
                        endpoint=str(self.endpoint),
                        outbox=left,
                        error=f"nothing acknowledged for {stalled_after:g} s while stopping",
                        action="reconnecting",
                    )
                    self._abandon(client, "acknowledgements lost while stopping")
                else:
                    self._kick_flush()
            await asyncio.sleep(0.05)
        return True

    # -- subscribe / publish -----------------------------------------------------

    async def subscribe(self, *topic_filters: str, qos: int = 1) -> None:
        """Subscribe to `topic_filters` now if connected (one SUBSCRIBE packet per
        ``SUBSCRIBE_BATCH`` of them), and again after every reconnect."""
        for topic_filter in topic_filters:
            self._subscriptions[topic_filter] = qos
        client = self._client
        if client is not None and self.state is ConnectionState.CONNECTED:
            filters = [(f, qos) for f in topic_filters]
            for start in range(0, len(filters), SUBSCRIBE_BATCH):
                with contextlib.suppress(aiomqtt.MqttError):
                    await client.subscribe(filters[start : start + SUBSCRIBE_BATCH])

    async def publish(self, message: Outgoing, *, wait: bool = True) -> bool:
        """Publish `message`, in call order with every other publish.

        With ``wait`` (the default), returns True once the broker acknowledged it (QoS 1)
        or it was sent (QoS 0), False when it was queued in the outbox or (QoS 0)
        dropped. With ``wait=False`` it returns True as soon as the message is handed to
        the session; its PUBACK is awaited in the background and, if the session ends
        first, the message goes back to the outbox (in order) and is sent after the
        next connect.

        Raises OutboxFullError when a QoS 1 message must be queued and the outbox is
        full; the message is then not queued.
        """
        if message.retain:
            self._keep(message)
        client = self._client
        if client is not None and self._direct:
            sent = self._start(client, message)
            if not wait:
                return True
            ended = asyncio.ensure_future(self._session_over.wait())
            try:
                await asyncio.wait({sent, ended}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
            return sent.done() and not sent.cancelled() and sent.exception() is None
        self._enqueue(message)
        return False

    def _start(self, client: FastClient, message: Outgoing) -> asyncio.Future[None]:
        """Send `message` now (paho queues it in call order; on a critical channel it
        is written at once) and track its acknowledgement: the returned future is done
        once the broker acknowledged it, failed if the publish failed, and cancelled if
        no acknowledgement came within the publish timeout (``_watch``)."""
        seq = next(self._seq)
        if message.qos > 0:
            self._inflight[seq] = message
        loop = asyncio.get_running_loop()
        try:  # paho queues it now, in call order; a critical one leaves now too
            sent = client.start_publish(
                message.topic,
                message.payload,
                message.qos,
                message.retain,
                flush=on_channels(message.topic, self._critical_channels),
            )
        except aiomqtt.MqttError as exc:
            sent = loop.create_future()
            sent.set_exception(exc)
        self._tracked[seq] = (sent, loop.time() + self._publish_timeout)
        sent.add_done_callback(functools.partial(self._acked, client, seq, message))
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.ensure_future(self._watch())
        return sent

    def _acked(
        self, client: FastClient, seq: int, message: Outgoing, sent: asyncio.Future[None]
    ) -> None:
        """The acknowledgement of a publish came, failed or was given up (cancelled by
        ``_watch``). A session that ended first has already put the message back in the
        outbox; a live session that lost one resends it and later ones in order."""
        self._tracked.pop(seq, None)
        if not sent.cancelled() and sent.exception() is None:
            self._inflight.pop(seq, None)
            return
        if message.qos == 0:
            self.dropped_qos0 += 1
        elif seq in self._inflight and client is self._client:
            # no PUBACK in time on a live session: resend it and later ones in order
            self._direct = False
            self._requeue_inflight()
            self._kick_flush()

    async def _watch(self) -> None:
        """Give up on acknowledgements older than the publish timeout (the oldest are
        first in ``_tracked``); ends when nothing is tracked."""
        loop = asyncio.get_running_loop()
        while self._tracked:
            seq, (sent, at) = next(iter(self._tracked.items()))
            now = loop.time()
            if at > now:
                await asyncio.sleep(at - now)
                continue
            del self._tracked[seq]
            sent.cancel()  # _acked takes it as lost (one just done: as it came)

    def _requeue_inflight(self) -> None:
        """Unacknowledged messages go back to the front of the outbox, oldest first.

        The outbox holds only messages published after them (it is empty whenever
        messages are sent directly), so order is kept."""
        if not self._inflight:
            return
        pending = [self._inflight[k] for k in sorted(self._inflight)]
        self._inflight.clear()
        self._outbox.extendleft(reversed(pending))

    async def _send(self, client: FastClient, message: Outgoing) -> None:
        """Publish on `client`, giving up as soon as its session ends."""
        if not await self._acknowledged(client, message):
            raise aiomqtt.MqttError("session ended before the broker acknowledged the message")

    async def _acknowledged(self, client: FastClient, message: Outgoing) -> bool:
        """Publish `message` on `client` and wait for the broker's acknowledgement:
        True once it came, False if the session ended first (the broker dropped it,
        even while the connect hook runs and the session loop is not reading) or the
        publish timeout passed. Raises what the publish raised."""
        publish = asyncio.ensure_future(
            client.publish(message.topic, message.payload, qos=message.qos, retain=message.retain)
        )
        ended = asyncio.ensure_future(self._session_over.wait())
        try:
            done, _ = await asyncio.wait(
                {publish, ended, client._disconnected},
                timeout=self._publish_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            ended.cancel()
        if client._disconnected.done() and not client._disconnected.cancelled():
            client._disconnected.exception()  # seen here: not an unretrieved error at exit
        if publish in done:
            publish.result()
            return True
        publish.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
            await publish
        return False

    def _kick_flush(self) -> None:
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.ensure_future(self._flush_quietly())

    async def _flush_quietly(self) -> None:
        """Flush after a PUBACK that did not come in time; when the flush too waits in
        vain on the same live session, end that session so the usual reconnect sends
        the outbox again. A broker may never acknowledge some messages: a RabbitMQ
        cluster lost the PUBACKs of messages routed to a stopped node's mirrored queues,
        and paho keeps such messages in its in-flight window for the whole session, so
        later publishes waited behind them. Leaving the outbox to "the next connect"
        then silenced the agent for good (QoS 0 dropped, QoS 1 queued) on a session that
        stayed up: the unexplained cluster stall."""
        session = self._session_over
        client = self._client
        try:
            await self._flush()
        except (aiomqtt.MqttError, TimeoutError) as exc:
            if session.is_set() or session is not self._session_over or client is None:
                return  # the session ended anyway: the next connect flushes
            log.warning(
                "broker.ack_lost",
                endpoint=str(self.endpoint),
                outbox=len(self._outbox),
                error=str(exc),
                action="reconnecting",
            )
            client._client.disconnect()  # the session loop reconnects and flushes

    async def publish_now(self, message: Outgoing) -> None:
        """Publish bypassing the outbox order (used for presence while connecting) and
        wait for the broker's acknowledgement. Raises ConnectionLostError when not
        connected or when the session ends first: raised in the connect hook, it ends
        that session and the connection reconnects."""
        client = self._client
        if client is None:
            raise ConnectionLostError("not connected", endpoint=str(self.endpoint))
        if message.retain:
            self._keep(message)
        try:
            acknowledged = await self._acknowledged(client, message)
        except (aiomqtt.MqttError, TimeoutError) as exc:
            raise ConnectionLostError(
                f"publish failed: {exc}", endpoint=str(self.endpoint)
            ) from exc
        if not acknowledged:
            raise ConnectionLostError(
                "the session ended before the broker acknowledged the message",
                endpoint=str(self.endpoint),
            )

    def _keep(self, message: Outgoing) -> None:
        """Remember the last retained message of its topic (an empty one clears it)."""
        if message.payload:
            self.retained.pop(message.topic, None)  # keep publication order
            self.retained[message.topic] = message
        else:
            self.retained.pop(message.topic, None)

    def _enqueue(self, message: Outgoing, *, front: bool = False) -> None:
        if message.qos == 0:
            self.dropped_qos0 += 1
            return
        if len(self._outbox) >= self._outbox_limit:
            raise OutboxFullError(
                f"outbox holds {len(self._outbox)} messages (limit {self._outbox_limit}) while "
                "disconnected; raise outbox_limit or slow the publisher",
                endpoint=str(self.endpoint),
            )
        if front:
            self._outbox.appendleft(message)
        else:
            self._outbox.append(message)

    async def _flush(self) -> None:
        """Send the outbox in order; a message leaves it only once acknowledged."""
        async with self._flush_lock:
            client = self._client
            while client is not None and self._outbox:
                message = self._outbox[0]
                await self._send(client, message)
                if self._outbox and self._outbox[0] is message:
                    self._outbox.popleft()
                else:  # something was put back in front meanwhile
                    with contextlib.suppress(ValueError):
                        self._outbox.remove(message)
            self._direct = client is not None

    @property
    def coalesced(self) -> int:
        """Messages on latest-only topics replaced by a newer one before being handled."""
        return self._coalesced_before + (self._inbound.coalesced if self._inbound else 0)

    def urgent_waiting(self) -> bool:
        """Whether received messages of an urgent or critical channel wait to be
        handled (``Agent.urgent``): a sender of answers may wait for them to batch."""
        return self._inbound is not None and self._inbound.urgent_waiting()

    @property
    def outbox_size(self) -> int:
        return len(self._outbox)

    @property
    def inflight(self) -> int:
        """QoS 1 messages sent and not yet acknowledged."""
        return len(self._inflight)
