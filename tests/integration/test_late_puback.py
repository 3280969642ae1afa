"""A broker that acknowledges late, on a live session (a RabbitMQ cluster does while a
stopped node's mirrored queues fail over): the publisher keeps sending once the
acknowledgements come again, without waiting for a reconnect that never comes.

The broker is a real mosquitto behind a TCP relay that holds the broker-to-client
bytes (PUBACKs) for a while without closing anything.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from teamtree.broker.connection import Connection, Incoming, Outgoing
from teamtree.broker.endpoint import parse_endpoint

pytestmark = pytest.mark.integration


class HoldingRelay:
    """Relays TCP to `port`; while ``flowing`` is clear, broker-to-client bytes wait."""

    def __init__(self, port: int):
        self.port = port
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.server: asyncio.base_events.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> HoldingRelay:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in list(self.tasks):
            task.cancel()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"mqtt://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        for source, sink, held in ((reader, up_writer, False), (up_reader, writer, True)):
            task = asyncio.create_task(self._pump(source, sink, held))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, held: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while chunk := await source.read(65536):
                if held:
                    await self.flowing.wait()
                sink.write(chunk)
                await sink.drain()
        sink.close()


async def test_publishing_resumes_on_the_same_session_after_late_acknowledgements(
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
    async with HoldingRelay(mosquitto.endpoint.port) as relay:
        writer = Connection(
            parse_endpoint(relay.url),
            client_id=f"{team}-w",
            on_message=nothing,
            keepalive=30,  # no ping is due while the acknowledgements are held
            publish_timeout=0.5,
        )
        tasks = [asyncio.create_task(c.run()) for c in (reader, writer)]
        try:
            async with asyncio.timeout(30):
                await reader.connected.wait()
                await writer.connected.wait()
                relay.flowing.clear()  # acknowledgements held 2 s: 4 publish timeouts
                for n in range(20):
                    await writer.publish(Outgoing(topic, str(n).encode()), wait=False)
                    await asyncio.sleep(0.05)
                await asyncio.sleep(1.0)
                relay.flowing.set()
                for n in range(20, 40):  # after the hold, on the same session
                    await writer.publish(Outgoing(topic, str(n).encode()), wait=False)
                    await asyncio.sleep(0.02)
                while len(set(got)) < 40:
                    await asyncio.sleep(0.05)
            assert writer.connects == 1, "the writer reconnected: not the case under test"
            firsts = list(dict.fromkeys(got))
            assert firsts == list(range(40)), firsts
            async with asyncio.timeout(10):
                while writer.outbox_size or writer.inflight:
                    await asyncio.sleep(0.05)
        finally:
            for c in (writer, reader):
                await c.close()
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
