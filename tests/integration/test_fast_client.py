"""FastClient against a real mosquitto. Writes: packets queued from the event loop go
out on the next loop turn; when the kernel's send buffer is full the rest is written
once the socket can take it, in order, with nothing lost or duplicated. Reads: what
the socket holds is read in one loop turn, through a read buffer that keeps every
message whole, and a lost connection wakes a reader waiting for a message.
"""

from __future__ import annotations

import asyncio
import operator
import random
import socket
import time

import aiomqtt
import pytest
from paho.mqtt.client import MQTT_ERR_PROTOCOL

from teamtree.broker.connection import Connection, Incoming, Outgoing
from teamtree.broker.fast_client import RECV_SIZE, FastClient
from tests.conftest import scaled

pytestmark = pytest.mark.integration


async def test_a_burst_that_fills_the_send_buffer_arrives_whole_and_in_order(mosquitto) -> None:
    """200 messages of 256 KiB (50 MiB) published without waiting: far more than a
    socket's send buffer, so most writes stop part-way and finish from the loop's
    writability callback. A subscriber gets every message once, in publish order."""
    got: list[int] = []
    done = asyncio.Event()
    n, size = 200, 256 * 1024

    async def on_message(message: Incoming) -> None:
        got.append(int.from_bytes(message.payload[:4], "big"))
        if len(got) >= n:
            done.set()

    reader = Connection(mosquitto.endpoint, client_id="fast-reader", on_message=on_message)

    async def ignore(message: Incoming) -> None:
        pass

    writer = Connection(mosquitto.endpoint, client_id="fast-writer", on_message=ignore)
    async with asyncio.timeout(scaled(120)):
        tasks = [asyncio.create_task(reader.run()), asyncio.create_task(writer.run())]
        await reader.subscribe("fast/burst")
        await reader.connected.wait()
        await writer.connected.wait()
        await asyncio.sleep(0.2)  # the subscription is in place
        for i in range(n):
            payload = i.to_bytes(4, "big") + bytes(size - 4)
            await writer.publish(Outgoing("fast/burst", payload, 1, False), wait=False)
        await done.wait()
        await writer.close()
        await reader.close()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert got == list(range(n))


async def test_a_publish_from_the_loop_needs_no_wakeup_or_socket_watch(mosquitto) -> None:
    """A QoS 1 publish made on the loop's thread is written on the next loop turn: the
    client neither wakes the loop through its self-pipe (call_soon_threadsafe) nor
    watches the socket for writability (add_writer) while the socket can take it."""
    loop = asyncio.get_running_loop()
    calls = {"threadsafe": 0, "add_writer": 0}
    threadsafe, add_writer = loop.call_soon_threadsafe, loop.add_writer

    def counting_threadsafe(*args, **kwargs):
        calls["threadsafe"] += 1
        return threadsafe(*args, **kwargs)

    def counting_add_writer(*args, **kwargs):
        calls["add_writer"] += 1
        return add_writer(*args, **kwargs)

    endpoint = mosquitto.endpoint
    async with FastClient(endpoint.host, endpoint.port, identifier="fast-one") as client:
        loop.call_soon_threadsafe = counting_threadsafe  # type: ignore[method-assign]
        loop.add_writer = counting_add_writer  # type: ignore[method-assign]
        try:
            for i in range(20):
                await asyncio.wait_for(client.publish("fast/one", str(i), qos=1), 10)
        finally:
            loop.call_soon_threadsafe = threadsafe  # type: ignore[method-assign]
            loop.add_writer = add_writer  # type: ignore[method-assign]
    assert calls == {"threadsafe": 0, "add_writer": 0}, calls


async def test_a_loop_turns_packets_leave_in_one_send(mosquitto) -> None:
    """Twenty QoS 1 publishes made in one loop turn reach the kernel in one send()
    over plain TCP (paho would make twenty), and all twenty are acknowledged."""
    endpoint = mosquitto.endpoint
    async with FastClient(endpoint.host, endpoint.port, identifier="fast-batch") as client:
        sock = client._client._sock
        sends: list[int] = []

        class Counting:  # the socket as paho and FastClient see it, counting sends
            def __getattr__(self, name):
                return getattr(sock, name)

            def send(self, data) -> int:
                sent = sock.send(data)
                sends.append(sent)
                return sent

        client._client._sock = Counting()
        try:
            await asyncio.wait_for(
                asyncio.gather(*(client.publish("fast/batch", str(i), qos=1) for i in range(20))),
                10,
            )
        finally:
            client._client._sock = sock
    assert len(sends) == 1 and sends[0] > 20 * 10, sends


async def test_a_critical_message_leaves_within_the_publish_call(mosquitto) -> None:
    """A message on a critical channel (the peer rule's claims and replies) is written
    before ``publish`` returns, with what was queued before it, in order; others, on an
    urgent channel (transitions) too, wait for the next loop turn. All are
    acknowledged, and a subscriber gets them in order."""
    got: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message: Incoming) -> None:
        got.append(message.topic)
        if len(got) == 3:
            arrived.set()

    reader = Connection(mosquitto.endpoint, client_id="urgent-reader", on_message=on_message)
    writer = Connection(
        mosquitto.endpoint,
        client_id="urgent-writer",
        on_message=on_message,
        urgent_channels={"claims", "state"},
        critical_channels={"claims"},
    )
    async with asyncio.timeout(scaled(30)):
        tasks = [asyncio.create_task(reader.run()), asyncio.create_task(writer.run())]
        await reader.subscribe("teamtree/v1/t/#")
        await reader.connected.wait()
        await writer.connected.wait()
        await asyncio.sleep(0.2)  # the subscription is in place
        client = writer._client
        assert isinstance(client, FastClient)
        sock = client._client._sock
        sends: list[bytes] = []

        class Counting:  # the socket as paho and FastClient see it, keeping what is sent
            def __getattr__(self, name):
                return getattr(sock, name)

            def send(self, data) -> int:
                sent = sock.send(data)
                sends.append(bytes(data[:sent]))
                return sent

        client._client._sock = Counting()
        try:
            await writer.publish(Outgoing("teamtree/v1/t/a/state", b"first", 1, False), wait=False)
            assert sends == []  # urgent, not critical: it waits for the next loop turn
            await writer.publish(Outgoing("teamtree/v1/t/_/claims", b"claim", 1, False), wait=False)
            assert len(sends) == 1, sends  # both left, in this call
            assert sends[0].index(b"first") < sends[0].index(b"claim")
            last = Outgoing("teamtree/v1/t/a/state", b"after", 1, False)
            assert await writer.publish(last)  # acknowledged
            await arrived.wait()
        finally:
            client._client._sock = sock
        await writer.close()
        await reader.close()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert got == ["teamtree/v1/t/a/state", "teamtree/v1/t/_/claims", "teamtree/v1/t/a/state"]


async def test_one_subscribe_call_takes_many_filters(mosquitto) -> None:
    """``Connection.subscribe`` with several filters (one SUBSCRIBE packet per batch):
    messages on each arrive, and nothing on a topic none of them matches."""
    got: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message: Incoming) -> None:
        got.append(message.topic)
        if message.topic == "many/end":
            arrived.set()

    conn = Connection(mosquitto.endpoint, client_id="many-filters", on_message=on_message)
    filters = [f"many/{i}" for i in range(100)] + ["many/end"]
    async with asyncio.timeout(scaled(30)):
        task = asyncio.create_task(conn.run())
        await conn.connected.wait()
        await conn.subscribe(*filters)
        for topic in ("many/0", "many/other", "many/63", "many/64", "many/99", "many/end"):
            await conn.publish(Outgoing(topic, b"x", 1, False))
        await arrived.wait()
        await conn.close()
        await asyncio.gather(task, return_exceptions=True)
    assert got == ["many/0", "many/63", "many/64", "many/99", "many/end"]


async def test_what_a_readable_socket_holds_is_read_in_one_loop_turn(mosquitto) -> None:
    """Thirty messages waiting in the socket are all read the first time the loop
    finds it readable (aiomqtt's reader took one packet per loop turn, so the last of
    seven claim replies that reached a busy process together waited seven turns)."""
    endpoint = mosquitto.endpoint
    async with (
        FastClient(endpoint.host, endpoint.port, identifier="read-all") as reader,
        FastClient(endpoint.host, endpoint.port, identifier="read-all-writer") as writer,
    ):
        await reader.subscribe("fast/read", qos=1)
        for i in range(30):
            writer.start_publish("fast/read", str(i).encode(), 0, False, flush=True)
        time.sleep(0.5)  # blocks the loop: all thirty reach the reader's socket meanwhile
        await asyncio.sleep(0)  # the next turn polls the socket: its reader runs after us
        await asyncio.sleep(0)  # now it has run once
        queued = reader._queue.qsize()
        got = [(await reader.next_message()).payload for _ in range(30)]
    assert queued == 30, queued
    assert got == [str(i).encode() for i in range(30)]


async def test_messages_of_any_size_arrive_whole_over_the_read_buffer(mosquitto) -> None:
    """Messages from one byte to several times the read buffer, some split across two
    of its reads, arrive intact and in order (random sizes; the seed is printed)."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    sizes = [
        rng.choice((1, 2, 127, 128, 16383, 16384, RECV_SIZE - 5, RECV_SIZE + 7))
        if rng.random() < 0.3
        else rng.randrange(1, 3 * RECV_SIZE)
        for _ in range(120)
    ]
    payloads = [rng.randbytes(n) for n in sizes]
    endpoint = mosquitto.endpoint
    async with asyncio.timeout(scaled(60)):
        async with (
            FastClient(endpoint.host, endpoint.port, identifier="sizes") as reader,
            FastClient(endpoint.host, endpoint.port, identifier="sizes-writer") as writer,
        ):
            await reader.subscribe("fast/sizes", qos=1)
            for payload in payloads:
                writer.start_publish("fast/sizes", payload, 1, False)
            got = [(await reader.next_message()).payload for _ in payloads]
    for i, (want, have) in enumerate(zip(payloads, got, strict=True)):
        assert have == want, f"seed {seed}: message {i} ({len(want)} bytes) came as {len(have)}"


async def test_a_lost_connection_wakes_a_reader_waiting_for_a_message(mosquitto) -> None:
    """``next_message`` waiting on an empty queue raises ``MqttError`` when the
    connection breaks, as aiomqtt's message iterator does."""
    endpoint = mosquitto.endpoint
    async with asyncio.timeout(scaled(30)):
        async with FastClient(endpoint.host, endpoint.port, identifier="woken") as client:
            waiting = asyncio.create_task(client.next_message())
            await asyncio.sleep(0.1)
            assert not waiting.done()
            client._client._sock.shutdown(socket.SHUT_RDWR)  # the connection breaks
            with pytest.raises(aiomqtt.MqttError):
                await waiting


async def test_pipelined_publishes_are_tracked_without_a_task_each(mosquitto) -> None:
    """A hundred QoS 1 publishes made without waiting start at most one background task
    (the watchdog of their acknowledgements; a task and a timer each were a fifth of a
    publish's CPU), and every one is acknowledged: nothing stays in flight."""

    async def ignore(message: Incoming) -> None:
        pass

    conn = Connection(mosquitto.endpoint, client_id="tracked", on_message=ignore)
    async with asyncio.timeout(scaled(30)):
        task = asyncio.create_task(conn.run())
        await conn.connected.wait()
        before = len(asyncio.all_tasks())
        for i in range(100):
            await conn.publish(Outgoing("fast/tracked", str(i).encode(), 1, False), wait=False)
        started = len(asyncio.all_tasks()) - before
        while conn.inflight:
            await asyncio.sleep(0.01)
        await conn.close()
        await asyncio.gather(task, return_exceptions=True)
    assert started <= 1, started


async def test_after_a_lost_connection_the_reader_gets_an_error_not_a_message(mosquitto) -> None:
    """A connection lost while nobody waits for a message: the next ``next_message``
    raises ``MqttError`` (it once handed over the queue's wake-up marker, and the
    connection died of it: nothing was received again)."""
    endpoint = mosquitto.endpoint
    async with asyncio.timeout(scaled(30)):
        async with FastClient(endpoint.host, endpoint.port, identifier="lost") as client:
            client._client._sock.shutdown(socket.SHUT_RDWR)  # the connection breaks
            while not client._disconnected.done():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # its callbacks have run
            with pytest.raises(aiomqtt.MqttError):
                await client.next_message()


async def test_received_messages_keep_topic_payload_qos_and_retain(mosquitto) -> None:
    """Every field of a message read by the client's own PUBLISH parser (QoS 0 and 1)
    or by paho's (QoS 2) comes out as sent: topics with non-ASCII characters and of
    random lengths, empty and binary payloads, the retain flag of a retained message
    (random; the seed is printed). The subscriber asks for QoS 2, so each message
    comes at the QoS it was published with, each once."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    alphabet = "abcxyz019-_.é日本ß"
    sent = []
    for i in range(60):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        payload = rng.choice((b"", rng.randbytes(rng.randrange(1, 300))))
        sent.append((f"fast/fields/{i}/{name}", payload, rng.choice((0, 1, 2))))
    endpoint = mosquitto.endpoint
    async with asyncio.timeout(scaled(60)):
        async with FastClient(endpoint.host, endpoint.port, identifier="fields-writer") as writer:
            await writer.publish("fast/kept/é", b"kept", qos=1, retain=True)
        async with (
            FastClient(endpoint.host, endpoint.port, identifier="fields") as reader,
            FastClient(endpoint.host, endpoint.port, identifier="fields-writer") as writer,
        ):
            await reader.subscribe("fast/kept/#", qos=2)
            kept = await reader.next_message()
            await reader.subscribe("fast/fields/#", qos=2)
            for topic, payload, qos in sent:
                await writer.publish(topic, payload, qos=qos)
            got = [await reader.next_message() for _ in sent]
            await writer.publish("fast/kept/é", b"", qos=1, retain=True)  # clear it
    assert kept == Incoming("fast/kept/é", b"kept", True, 1)
    want = [Incoming(topic, payload, False, qos) for topic, payload, qos in sent]
    # in any order: MQTT keeps order per QoS level, and a QoS 2 message may be passed on
    # after a later one of QoS 0 or 1 (seen once in CI: seed 3167001418)
    by_topic = operator.attrgetter("topic")
    assert sorted(got, key=by_topic) == sorted(want, key=by_topic), f"seed {seed}"


async def test_a_publish_whose_topic_is_not_utf8_is_dropped_not_raised() -> None:
    """A PUBLISH whose topic bytes are not UTF-8 (a broker must refuse it; a hostile
    or broken one might not) is counted and dropped; paho's own path raised in the
    reader and ended the session. The next packet is read as usual."""
    client = FastClient("localhost", 1883, identifier="bad-topic")
    paho = client._client
    client._paho_publish = paho._handle_publish
    paho._in_packet = {"command": 0x30, "packet": b"\x00\x02\xff\xfe" + b"body"}  # QoS 0
    assert client._publish() == 0
    assert client.dropped_topics == 1
    assert client._queue.empty()
    paho._in_packet = {"command": 0x31, "packet": b"\x00\x03a/b" + b"body"}  # retained
    assert client._publish() == 0
    assert client._queue.get_nowait() == Incoming("a/b", b"body", True, 0)


async def test_a_publish_frame_shorter_than_its_topic_is_a_protocol_error() -> None:
    """A PUBLISH whose topic length (or QoS 1 message id) runs past the frame's end is
    refused as a protocol error, which ends the session as paho's own malformed-packet
    errors do, rather than queued as a cut topic with an empty payload."""
    client = FastClient("localhost", 1883, identifier="short-frame")
    client._paho_publish = client._client._handle_publish
    frames = [
        (0x30, b"\x00\x09a/b"),  # QoS 0: topic of 9 bytes, 3 in the frame
        (0x32, b"\x00\x03a/b"),  # QoS 1: the topic whole, no message id
        (0x32, b"\x00\x03a/b\x00"),  # QoS 1: half a message id
        (0x30, b"\x00"),  # not even a topic length
    ]
    for command, packet in frames:
        client._client._in_packet = {"command": command, "packet": packet}
        assert client._publish() == MQTT_ERR_PROTOCOL, packet
    assert client._queue.empty()
    client._client._in_packet = {"command": 0x30, "packet": b"\x00\x03a/b"}  # empty payload
    assert client._publish() == 0
    assert client._queue.get_nowait() == Incoming("a/b", b"", False, 0)
