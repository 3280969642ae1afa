"""A reader that takes its next message first reads every socket of its loop that holds
data (``broker/prompt_reads.py``). So a message that reached another agent's socket
while this one worked is in that agent's queue before the loop gets a turn (on a busy
process the loop polls only after every ready callback ran). Against mosquitto."""

from __future__ import annotations

import asyncio
import functools
import os
import time

import pytest

from teamtree.broker import fast_client, prompt_reads
from teamtree.broker.connection import Connection, Incoming, Outgoing
from tests.conftest import scaled

pytestmark = pytest.mark.integration

B_TOPIC = "teamtree/v1/t/_/claims"  # critical for the writer: it leaves within publish


async def test_a_message_for_another_agent_is_read_before_the_loop_turns(
    mosquitto, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handles two messages in one task step (its slice is made long, so it does not
    yield between them). During the first, a message for B reaches B's socket. When A
    takes its second message, B's message is already in B's queue."""
    monkeypatch.setattr(fast_client, "TAKE_SLICE_S", 60.0)
    seen: list[int] = []
    done = asyncio.Event()
    b_got = asyncio.Event()
    writer: Connection

    async def on_a(message: Incoming) -> None:
        if message.payload == b"first":
            await writer.publish(Outgoing(B_TOPIC, b"for b", 1, False), wait=False)
            time.sleep(0.3)  # works without a loop turn: B's message reaches its socket
        else:
            seen.append(b_reader._inbound.qsize())  # type: ignore[union-attr]
            done.set()

    async def on_b(message: Incoming) -> None:
        b_got.set()

    async def ignore(message: Incoming) -> None:
        pass

    a_reader = Connection(mosquitto.endpoint, client_id="prompt-a", on_message=on_a)
    b_reader = Connection(mosquitto.endpoint, client_id="prompt-b", on_message=on_b)
    writer = Connection(  # writes at once, within publish
        mosquitto.endpoint, client_id="prompt-w", on_message=ignore, critical_channels={"claims"}
    )
    tasks = [asyncio.create_task(c.run()) for c in (a_reader, b_reader, writer)]
    try:
        async with asyncio.timeout(scaled(30)):
            await a_reader.subscribe("prompt/a")
            await b_reader.subscribe(B_TOPIC)
            for c in (a_reader, b_reader, writer):
                await c.connected.wait()
            await asyncio.sleep(0.2)  # the subscriptions are in place
            for payload in (b"first", b"second"):  # both leave in one write
                await writer.publish(Outgoing("prompt/a", payload, 1, False), wait=False)
            await done.wait()
            await b_got.wait()  # and B handles it in its turn
    finally:
        for c in (writer, a_reader, b_reader):
            await c.close()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert seen == [1], seen


class _Reader:
    """A reader of `fd` in `loop` that notes each read in `calls` as ``name:fd``."""

    def __init__(
        self, calls: list[str], name: str, loop: asyncio.AbstractEventLoop, fd: int | None
    ):
        self.calls, self.name, self._loop, self.fd = calls, name, loop, fd

    def socket_fileno(self) -> int | None:
        return self.fd

    def read_now(self) -> None:
        self.calls.append(f"{self.name}:{self.fd}")


def test_readers_of_another_loop_or_without_a_socket_are_skipped() -> None:
    """``read_due`` reads only the running loop's readers that have a socket."""
    calls: list[str] = []
    Reader = functools.partial(_Reader, calls)

    r, w = os.pipe()
    os.write(w, b"x")  # r is readable
    other = asyncio.new_event_loop()
    try:

        async def main() -> None:
            loop = asyncio.get_running_loop()
            keep = [Reader("mine", loop, r), Reader("other loop", other, r),
                    Reader("no socket", loop, None)]  # fmt: skip
            for reader in keep:
                prompt_reads.register(reader)  # type: ignore[arg-type]
            prompt_reads._last[0] = 0.0
            prompt_reads.read_due()
            prompt_reads.read_due()  # within READ_EVERY_S: no second check

        asyncio.run(main())
    finally:
        other.close()
        os.close(r)
        os.close(w)
    assert calls == [f"mine:{r}"]


def test_a_reader_whose_socket_changed_is_read_from_the_next_build_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checked sockets are kept between checks. A reader that reconnected (a new
    socket) is not read through its old socket's number, and is read once the set is
    built again."""
    calls: list[str] = []
    Reader = functools.partial(_Reader, calls)

    r1, w1 = os.pipe()
    r2, w2 = os.pipe()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reader = Reader("a", loop, r1)
        prompt_reads.register(reader)  # type: ignore[arg-type]
        monkeypatch.setattr(prompt_reads, "REFRESH_S", 3600.0)
        prompt_reads._last[0] = 0.0
        prompt_reads.read_due()  # builds the set: r1, nothing to read yet
        reader.fd = r2  # reconnected; both sockets hold data now
        os.write(w1, b"x")
        os.write(w2, b"x")
        prompt_reads._last[0] = 0.0
        prompt_reads.read_due()  # r1 is ready but no longer the reader's socket
        assert calls == []
        monkeypatch.setattr(prompt_reads, "REFRESH_S", 0.0)
        prompt_reads._last[0] = 0.0
        prompt_reads.read_due()  # built again: r2
        assert calls == [f"a:{r2}"]

    try:
        asyncio.run(main())
    finally:
        for fd in (r1, w1, r2, w2):
            os.close(fd)
