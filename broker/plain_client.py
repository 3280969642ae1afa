"""aiomqtt's client through its public API only: the fallback when ``FastClient`` may not run.

``FastClient`` depends on private names of aiomqtt and paho and runs only on the
versions it was written for (``broker/client_check.py``). Where those are not
installed, a connection uses this client instead: slower per message (a task per
message taken and per publish, aiomqtt's scan of pending publishes, paho's packet
reader), but built on nothing aiomqtt does not document. It offers the small
interface ``Connection`` uses of ``FastClient``, so the connection is the same either
way: publish QoS 0 and 1, subscriptions, the Will, reconnects (a new client per
session), the inbound ``CoalescingQueue`` and its lanes.

Messages reach the connection's queue as ``Incoming`` values, converted from
aiomqtt's ``Message`` as aiomqtt puts them (``queue_type`` is aiomqtt's documented
hook for the queue). A topic that is not UTF-8 makes aiomqtt end the session (paho
raises while decoding it); mosquitto refuses such topics before they get here.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import Any

import aiomqtt

from teamtree.broker.messages import Incoming

__all__ = ["PlainClient", "to_incoming"]

PENDING_WARN_AT = 100_000
"""aiomqtt warns once per publish while more publishes than its public
``pending_calls_threshold`` (10) wait for their acknowledgement; a connection
pipelines up to 200 and logs its own state, so that warning is set out of reach."""


def to_incoming(message: aiomqtt.Message) -> Incoming:
    """aiomqtt's ``Message`` as the ``Incoming`` a connection hands to its agent."""
    payload = message.payload  # paho's bytes, as aiomqtt hands them on
    if not isinstance(payload, bytes):
        payload = b"" if payload is None else bytes(payload)  # type: ignore[arg-type]
    return Incoming(message.topic.value, payload, bool(message.retain), message.qos)


class _ToIncoming:
    """The queue aiomqtt fills: each message goes into `queue` as an ``Incoming``;
    everything else is `queue`'s own."""

    def __init__(self, queue: asyncio.Queue[Any]) -> None:
        self.queue = queue

    def put_nowait(self, message: aiomqtt.Message) -> None:
        self.queue.put_nowait(to_incoming(message))

    async def put(self, message: aiomqtt.Message) -> None:
        await self.queue.put(to_incoming(message))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)


class PlainClient(aiomqtt.Client):
    """``aiomqtt.Client`` with ``FastClient``'s interface to the connection
    (``inbound``, ``next_message``, ``take_turn``, ``start_publish``, ``read_now``,
    ``socket_fileno``), using no private name of aiomqtt or paho. Takes aiomqtt's
    constructor arguments; `queue_type` builds the queue the messages reach as
    ``Incoming`` (``inbound``)."""

    def __init__(
        self, *args: Any, queue_type: Callable[..., asyncio.Queue[Any]] | None = None, **kwargs: Any
    ) -> None:
        make = queue_type or asyncio.Queue

        def queue(maxsize: int = 0) -> _ToIncoming:
            self.inbound = make(maxsize=maxsize)
            return _ToIncoming(self.inbound)

        self.inbound: asyncio.Queue[Any]

        super().__init__(*args, queue_type=queue, **kwargs)  # type: ignore[arg-type]
        self.pending_calls_threshold = PENDING_WARN_AT
        self.dropped_topics = 0
        """Always 0: kept for the same interface as ``FastClient``'s counter."""

    async def next_message(self) -> Incoming:
        """The next message received (``MqttError`` once disconnected), as
        ``anext(client.messages)`` gives it."""
        return await anext(self.messages)  # type: ignore[return-value]

    async def take_turn(self) -> None:
        """Between two messages a reader takes itself: let the loop have a turn."""
        await asyncio.sleep(0)

    def start_publish(
        self, topic: str, payload: bytes, qos: int, retain: bool, *, flush: bool = False
    ) -> asyncio.Future[None]:
        """Publish in call order (tasks start in the order they are made) and return
        a future done once the broker acknowledged it (QoS 1) or it was sent (QoS 0),
        failed with ``MqttError`` if it could not be. `flush` is accepted and has no
        effect: aiomqtt writes each packet as the socket takes it."""
        return asyncio.ensure_future(self.publish(topic, payload, qos=qos, retain=retain))

    def abandon(self, reason: str = "abandoned after an unexpected error") -> None:
        """Drop the session without a DISCONNECT where paho's socket can be reached (the
        broker then publishes the Will); else the session ends with the DISCONNECT that
        aiomqtt sends on leaving, and the team sees the agent's goodbye instead.
        `reason` is taken for the same interface as ``FastClient.abandon``; aiomqtt
        reports the dropped socket in its own words."""
        paho = getattr(self, "_client", None)
        sock = paho.socket() if paho is not None and hasattr(paho, "socket") else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def socket_fileno(self) -> None:
        """None: this client's socket is read by the event loop only (``prompt_reads``
        skips it)."""
        return None

    def read_now(self) -> None:
        """Nothing to do: aiomqtt's reader callback reads the socket."""
