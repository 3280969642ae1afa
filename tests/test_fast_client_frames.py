"""FastClient's frame reader against paho's packet reader, over a socket pair.

The same stream of packets from a "broker" (PUBLISH of QoS 0, 1 and 2 with PUBREL,
PUBACK, PINGRESP), cut into chunks at random points, is read once by FastClient's own
framing (``_read_frames``) and once by paho's reader (``_packet_read``). Both must
queue the same messages in the same order and write back the same acknowledgements
(PUBACK, PUBREC, PUBCOMP); remaining lengths of one to three bytes and frames split
anywhere, even inside the fixed header, are covered.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from hypothesis import given, settings
from hypothesis import strategies as st
from paho.mqtt.client import MQTT_ERR_PROTOCOL

from teamtree.broker.fast_client import FastClient, _frame_at
from teamtree.broker.messages import Incoming


def _length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _publish(topic: str, payload: bytes, qos: int, retain: bool, mid: int) -> bytes:
    name = topic.encode()
    body = len(name).to_bytes(2, "big") + name + (mid.to_bytes(2, "big") if qos else b"")
    body += payload
    return bytes([0x30 | qos << 1 | int(retain)]) + _length(len(body)) + body


_topic = st.text(st.characters(codec="utf-8", exclude_characters="+#\x00"), min_size=1, max_size=24)
_size = st.one_of(st.sampled_from([0, 1, 126, 127, 128, 16383, 16384, 70000]), st.integers(0, 400))
_packet = st.one_of(
    st.tuples(st.just("publish"), _topic, _size, st.sampled_from([0, 1, 2]), st.booleans()),
    st.tuples(st.just("puback"), st.integers(1, 65535)),
    st.tuples(st.just("pingresp")),
)


def _stream(packets: list[tuple]) -> tuple[bytes, list[Incoming]]:
    """The bytes a broker sends for `packets`, and the messages they carry."""
    data, want, mid = bytearray(), [], 0
    for packet in packets:
        if packet[0] == "publish":
            _, topic, size, qos, retain = packet
            mid = mid % 65535 + 1
            payload = bytes(i % 251 for i in range(size))
            data += _publish(topic, payload, qos, retain, mid)
            if qos == 2:  # delivered once released
                data += b"\x62\x02" + mid.to_bytes(2, "big")
            want.append(Incoming(topic, payload, retain, qos))
        elif packet[0] == "puback":
            data += b"\x40\x02" + packet[1].to_bytes(2, "big")
        else:
            data += b"\xd0\x00"
    return bytes(data), want


async def _read(data: bytes, cuts: list[int], *, frames: bool) -> tuple[list[Incoming], bytes]:
    """Feed `data` in chunks to a FastClient reading with its frames or paho's reader;
    return what it queued and what it wrote back."""
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    broker.setblocking(False)
    client = FastClient("localhost", 1883, identifier="frames")
    paho = client._client
    paho._sock = ours
    client._paho_publish = paho._handle_publish  # as __aenter__ installs them
    paho._handle_publish = client._publish
    client._framing = frames
    sent, pos = bytearray(), 0
    try:
        for cut in [*cuts, len(data)]:
            end = min(len(data), max(pos, cut))
            pending = memoryview(data)[pos:end]
            pos = max(pos, end)
            while True:  # a chunk past the socket's buffer goes in pieces, read between
                with contextlib.suppress(BlockingIOError):
                    pending = pending[broker.send(pending) :]
                for _ in range(4):  # a turn may stop at READ_BATCH packets
                    client._read(paho)
                    await asyncio.sleep(0)  # paho's writes go out on the next turn
                while True:
                    try:
                        chunk = broker.recv(1 << 20)
                    except BlockingIOError:
                        break
                    if not chunk:  # the client closed the connection (a protocol error)
                        break
                    sent += chunk
                if not pending:
                    break
        got = []
        while not client._queue.empty():
            got.append(client._queue.get_nowait())
        assert not client._disconnected.done(), client._disconnected
        return got, bytes(sent)
    finally:
        ours.close()
        broker.close()


@settings(max_examples=120, deadline=None, print_blob=True)
@given(
    packets=st.lists(_packet, max_size=30),
    cuts=st.lists(st.integers(0, 200_000), max_size=12).map(sorted),
)
def test_frames_are_read_as_paho_reads_them(packets: list[tuple], cuts: list[int]) -> None:
    data, want = _stream(packets)
    got, acks = asyncio.run(_read(data, cuts, frames=True))
    ref, ref_acks = asyncio.run(_read(data, cuts, frames=False))
    assert got == want
    assert ref == want
    assert acks == ref_acks
    qos = [m.qos for m in want]
    assert len(acks) == 4 * (qos.count(1) + 2 * qos.count(2))  # PUBACK; PUBREC, PUBCOMP


def test_a_frame_is_found_only_when_whole() -> None:
    frame = _publish("a/b", b"x" * 200, 1, False, 7)  # remaining length of two bytes
    assert _frame_at(frame, 0) == (3, len(frame))
    for cut in range(len(frame)):
        assert _frame_at(frame[:cut], 0) is None, cut
    assert _frame_at(b"\x30\xff\xff\xff\xff\x01", 0) is False  # a fifth length byte


def test_a_remaining_length_of_five_bytes_ends_the_session() -> None:
    async def go() -> None:
        ours, broker = socket.socketpair()
        ours.setblocking(False)
        client = FastClient("localhost", 1883, identifier="frames")
        paho = client._client
        paho._sock = ours
        client._framing = True
        ended: list[int] = []
        paho._loop_rc_handle = ended.append  # what paho does with a reader's error
        broker.sendall(b"\x30\xff\xff\xff\xff\x01")
        client._read(paho)
        assert ended == [MQTT_ERR_PROTOCOL]
        assert client._queue.empty()
        ours.close()
        broker.close()

    asyncio.run(go())
