"""A TCP relay in front of a broker, for tests that must act on a session's bytes
(lose the broker's acknowledgements, evict a client mid-publish)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


async def pump(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, cut: asyncio.Event | None = None
) -> None:
    """Copy `source` to `sink` until either closes; once `cut` is set, drop what
    comes instead (the connection stays open)."""
    with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
        while chunk := await source.read(65536):
            if cut is None or not cut.is_set():
                sink.write(chunk)
                await sink.drain()
    sink.close()


class TcpRelay:
    """Relays each TCP connection made to ``url`` to the broker at `host`:`port`.
    ``pumps`` says what each direction of a connection does (by default: copies)."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> TcpRelay:
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

    def pumps(
        self,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        broker: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> list[Coroutine[Any, Any, None]]:
        """The coroutines that relay one connection: client to broker, broker to client."""
        return [pump(client[0], broker[1]), pump(broker[0], client[1])]

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up = await asyncio.open_connection(self.host, self.port)
        for coroutine in self.pumps((reader, writer), up):
            task = asyncio.create_task(coroutine)
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
