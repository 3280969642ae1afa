"""A broker that does not acknowledge in time on a live session (a RabbitMQ cluster
never acknowledged messages routed to a stopped node's mirrored queues): the publisher
ends that session, reconnects and sends everything, in order, instead of waiting for a
reconnect that would never come.

The broker is a real mosquitto behind a TCP relay that stops passing the broker's
bytes (PUBACKs) to the session under test, without closing anything.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from teamtree.broker.connection import Connection, Incoming, Outgoing
from teamtree.broker.endpoint import parse_endpoint
from tests.conftest import scaled
from tests.relay_support import TcpRelay, pump

pytestmark = pytest.mark.integration


class AckLosingRelay(TcpRelay):
    """Relays TCP to `port`; ``lose()`` makes the connections open then get nothing
    more from the broker (acknowledgements included) while theirs still reach it; later
    connections are relayed whole. (RabbitMQ lost acknowledgements per session.)"""

    def __init__(self, port: int):
        super().__init__(port)
        self.deaf: list[asyncio.Event] = []

    def lose(self) -> None:
        for event in self.deaf:
            event.set()

    def pumps(self, client, broker):  # type: ignore[no-untyped-def]
        deaf = asyncio.Event()
        self.deaf.append(deaf)
        return [pump(client[0], broker[1]), pump(broker[0], client[1], deaf)]


async def test_a_session_that_loses_acknowledgements_is_replaced_and_nothing_is_lost(
    mosquitto, team
) -> None:
    topic = f"teamtree/v1/{team}/p/n"
    got: list[int] = []

    async def on_message(message: Incoming) -> None:
        got.append(int(message.payload))

    async def nothing(message: Incoming) -> None:
        return None

    reader = Connection(mosquitto.endpoint, client_id=f"{team}-r", on_message=on_message)
    await reader.subscribe(topic)
    async with AckLosingRelay(mosquitto.endpoint.port) as relay:
        writer = Connection(
            parse_endpoint(relay.url),
            client_id=f"{team}-w",
            on_message=nothing,
            keepalive=60,  # the lost session's pings would fail only after 90 s
            publish_timeout=0.5,
        )
        tasks = [asyncio.create_task(c.run()) for c in (reader, writer)]
        try:
            async with asyncio.timeout(scaled(30)):
                await reader.connected.wait()
                await writer.connected.wait()
                relay.lose()  # this session's acknowledgements never come
                for n in range(40):
                    await writer.publish(Outgoing(topic, str(n).encode()), wait=False)
                    await asyncio.sleep(0.05)
                while len(set(got)) < 40:
                    await asyncio.sleep(0.05)
            assert writer.connects >= 2, "the writer kept the session that lost its acks"
            firsts = list(dict.fromkeys(got))
            assert firsts == list(range(40)), firsts
            async with asyncio.timeout(scaled(10)):
                while writer.outbox_size or writer.inflight:
                    await asyncio.sleep(0.05)
        finally:
            for c in (writer, reader):
                await c.close()
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def test_a_connection_closed_while_its_acknowledgements_are_lost_sends_them_first(
    mosquitto, team
) -> None:
    """An agent that stops just after its last publishes (a robot whose mission is done)
    while the broker has not acknowledged them: ``close`` waits for the reconnect to
    send them, instead of ending the session with them (a done lost with it)."""
    topic = f"teamtree/v1/{team}/p/last"
    got: list[int] = []

    async def on_message(message: Incoming) -> None:
        got.append(int(message.payload))

    async def nothing(message: Incoming) -> None:
        return None

    reader = Connection(mosquitto.endpoint, client_id=f"{team}-r", on_message=on_message)
    await reader.subscribe(topic)
    async with AckLosingRelay(mosquitto.endpoint.port) as relay:
        writer = Connection(
            parse_endpoint(relay.url),
            client_id=f"{team}-w",
            on_message=nothing,
            keepalive=60,
            publish_timeout=0.5,
        )
        tasks = [asyncio.create_task(c.run()) for c in (reader, writer)]
        try:
            async with asyncio.timeout(scaled(30)):
                await reader.connected.wait()
                await writer.connected.wait()
                relay.lose()
                for n in range(10):
                    await writer.publish(Outgoing(topic, str(n).encode()), wait=False)
                await writer.close(drain=10.0)  # at once: every PUBACK is still missing
                assert writer.connects >= 2, "close ended the session that lost its acks"
                while len(set(got)) < 10:
                    await asyncio.sleep(0.05)
            assert list(dict.fromkeys(got)) == list(range(10))
        finally:
            for c in (writer, reader):
                await c.close()
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def test_a_stop_shorter_than_the_publish_timeout_still_replaces_the_silent_session(
    mosquitto, team
) -> None:
    """The publish timeout is longer than a stop's drain (5 s against 4 s by default),
    so waiting for it would end the agent with its last words unsent (a cobot's end of
    the kitting lost on a RabbitMQ cluster after a node stop). The drain replaces the
    session once nothing was acknowledged for half of it."""
    topic = f"teamtree/v1/{team}/p/stop"
    got: list[int] = []

    async def on_message(message: Incoming) -> None:
        got.append(int(message.payload))

    async def nothing(message: Incoming) -> None:
        return None

    reader = Connection(mosquitto.endpoint, client_id=f"{team}-r", on_message=on_message)
    await reader.subscribe(topic)
    async with AckLosingRelay(mosquitto.endpoint.port) as relay:
        writer = Connection(
            parse_endpoint(relay.url),
            client_id=f"{team}-w",
            on_message=nothing,
            keepalive=60,
            publish_timeout=600,  # never within this test: only the drain can act
        )
        tasks = [asyncio.create_task(c.run()) for c in (reader, writer)]
        try:
            async with asyncio.timeout(scaled(60)):
                await reader.connected.wait()
                await writer.connected.wait()
                relay.lose()
                for n in range(10):
                    await writer.publish(Outgoing(topic, str(n).encode()), wait=False)
                await writer.close(drain=8.0)
                assert writer.connects >= 2, "the stop kept the session that lost its acks"
                while len(set(got)) < 10:
                    await asyncio.sleep(0.05)
            assert list(dict.fromkeys(got)) == list(range(10))
        finally:
            for c in (writer, reader):
                await c.close()
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def test_a_stop_whose_last_words_never_reach_the_broker_leaves_by_the_will(
    mosquitto, team
) -> None:
    """When even the replacing session cannot deliver (the relay passes nothing from
    the broker to later sessions), the agent still leaves by its Will: the silent
    session was dropped without a DISCONNECT, so the team sees it gone rather than a
    member that fell silent."""
    will_topic = f"teamtree/v1/{team}/p/will"
    wills: list[bytes] = []

    async def on_message(message: Incoming) -> None:
        wills.append(message.payload)

    async def nothing(message: Incoming) -> None:
        return None

    reader = Connection(mosquitto.endpoint, client_id=f"{team}-r", on_message=on_message)
    await reader.subscribe(will_topic)

    class DeafRelay(AckLosingRelay):
        def pumps(self, client, broker):  # type: ignore[no-untyped-def]
            pumps = super().pumps(client, broker)
            if self.lost:
                self.deaf[-1].set()  # later sessions are deaf from the start
            return pumps

        lost = False

        def lose(self) -> None:
            self.lost = True
            super().lose()

    async with DeafRelay(mosquitto.endpoint.port) as relay:
        writer = Connection(
            parse_endpoint(relay.url),
            client_id=f"{team}-w",
            on_message=nothing,
            keepalive=60,
            publish_timeout=600,
            will=lambda: Outgoing(will_topic, b"gone"),
        )
        tasks = [asyncio.create_task(c.run()) for c in (reader, writer)]
        try:
            async with asyncio.timeout(scaled(60)):
                await reader.connected.wait()
                await writer.connected.wait()
                relay.lose()
                await writer.publish(Outgoing(f"teamtree/v1/{team}/p/x", b"1"), wait=False)
                await writer.close(drain=4.0)
                while not wills:
                    await asyncio.sleep(0.05)
            assert wills == [b"gone"]
        finally:
            await reader.close()
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
