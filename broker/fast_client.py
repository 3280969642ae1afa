"""aiomqtt's client, made cheap per message for processes that run many agents.

An agent process may host dozens of agents on one event loop, so every loop turn and
system call per packet is paid by every claim waiting in that loop. aiomqtt 2.5 and
paho cost a few of each per packet, and aiomqtt scans all pending publishes on every
publish (O(n^2) for a burst; benchmarks/bench_publish.py). ``FastClient`` keeps
aiomqtt's API and contract and replaces those paths:

- pending publishes are found by dict look-up, not by scanning;
- a packet queued on the loop's thread is written on the next loop turn
  (``call_soon``), not through the self-pipe and a writer callback, and over plain TCP
  a turn's packets go out in one ``send`` (``_gather``, ``_flush``); a DISCONNECT goes
  out at once, so a clean stop never looks like a crash that publishes the Will;
- ``start_publish`` hands a message to paho in the call and returns its
  acknowledgement's future; with ``flush`` it is written at once (claims and replies);
- a readable socket is read whole (``READ_BATCH`` packets, one ``recv`` of
  ``RECV_SIZE``), and every socket of the loop holding data is read before a message
  is taken (``prompt_reads``); ``next_message`` takes queued messages without a task
  each and gives the loop a turn every ``TAKE_SLICE_S``;
- over plain TCP on MQTT 3.1.1, ``_read_frames`` splits frames itself and reads a QoS 0
  or 1 PUBLISH straight into an ``Incoming`` and a plain PUBACK with one shared reason
  code (``_puback``); any other packet, QoS 2 and MQTT 5 go through paho as usual.
  A topic that is not UTF-8 is acknowledged and dropped (``dropped_topics``) instead of
  ending the session; a frame too short for its fields is a protocol error (the
  session ends and reconnects). TLS and websocket connections write packet by packet.

paho counts a packet sent once it is handed over, as it does once the kernel has it:
on a lost connection both are lost alike, and QoS 1 resends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import aiomqtt
from paho.mqtt.client import (
    DISCONNECT,
    MQTT_ERR_AGAIN,
    MQTT_ERR_CONN_LOST,
    MQTT_ERR_PROTOCOL,
    MQTT_ERR_SUCCESS,
    PUBACK,
    PUBLISH,
    MalformedPacket,
    MQTTv31,
    MQTTv311,
)
from paho.mqtt.client import time_func as _paho_time
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from teamtree.broker import prompt_reads
from teamtree.broker.messages import Incoming

__all__ = ["FastClient"]

READ_BATCH = 256
"""Packets read in one turn of the loop before it serves other work (module doc)."""

RECV_SIZE = 65536
"""Bytes asked of the kernel in one ``recv`` over plain TCP."""

TAKE_SLICE_S = 0.0005
"""How long ``next_message`` hands over queued messages in a row (the handling of
those it handed over included) before the loop gets a turn. With 32 agents on a loop a
turn could take 32 slices before a socket holding a claim was read again, so the slice
is short: one more loop turn per half millisecond of work."""

_PUBACK_OK = (ReasonCode(PacketTypes.PUBACK), Properties(PacketTypes.PUBACK))
"""The reason code and properties of every plain PUBACK (success, no properties): paho
builds a new pair for each; nobody changes them."""

_WAKE = object()
"""Put in the inbound queue when the connection is lost (``FastClient._wake``)."""

T = TypeVar("T")


def _frame_at(buf: bytes, pos: int) -> tuple[int, int] | bool | None:
    """Where the packet starting at ``buf[pos]`` has its variable header and payload,
    as ``(start, end)``; None while ``buf`` does not hold it whole yet; False for a
    remaining length of more than four bytes (a protocol error)."""
    n = len(buf)
    i, length, shift = pos + 1, 0, 0
    while True:
        if i >= n:
            return None
        byte = buf[i]
        length |= (byte & 0x7F) << shift
        i += 1
        if not byte & 0x80:
            break
        shift += 7
        if shift >= 28:
            return False
    end = i + length
    return (i, end) if end <= n else None


class FastClient(aiomqtt.Client):
    """``aiomqtt.Client`` whose ``_pending_call`` does not scan the pending calls (its
    "many pending publishes" warning is left out: the connection logs its own state),
    whose writes wait one loop turn, not a wake-up and two turns, and which sends what
    a loop turn queued in one system call (module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._outbuf = bytearray()  # bytes paho counts as sent that the kernel has not
        self._batching = False  # on once connected over plain TCP (__aenter__)
        self._gathering = False  # inside _write_now: paho's sends are gathered
        self._watching = False  # our writer waits for the socket to take the rest
        self._write_soon = False  # a write is scheduled for the next loop turn
        self._inbuf = b""  # bytes received that paho has not read yet (plain TCP)
        self._inpos = 0
        self._framing = False  # on once connected over plain TCP on MQTT 3.1.x
        self._turn_at = 0.0  # when next_message last let the loop have a turn
        self.dropped_topics = 0
        """PUBLISH packets whose topic was not UTF-8: acknowledged and dropped."""

    @property
    def inbound(self) -> asyncio.Queue[Any]:
        """The queue received messages reach (built by `queue_type`), as ``Incoming``."""
        return self._queue  # type: ignore[return-value]

    async def __aenter__(self) -> FastClient:
        await super().__aenter__()
        sock = self._client.socket()
        if type(sock) is socket.socket:  # plain TCP: not TLS, not a websocket
            # paho sends each packet with its own send(); take them instead (_gather)
            self._client._sock_send = self._gather
            self._client._sock_recv = self._recv_buffered
            self._batching = True
        self._disconnected.add_done_callback(self._wake)
        paho = self._client
        self._paho_puback = paho._handle_pubackcomp
        paho._handle_pubackcomp = self._puback
        if paho._protocol in (MQTTv31, MQTTv311) and not paho._manual_ack:
            self._paho_publish = paho._handle_publish
            paho._handle_publish = self._publish
            self._framing = self._batching  # read frames ourselves (_read_frames)
            if self._framing:
                prompt_reads.register(self)  # read between messages too (its docstring)
        return self

    def _publish(self) -> int:
        """paho's PUBLISH handling for QoS 0 and 1 on MQTT 3.1.x: the message is
        queued as an ``Incoming``, then a QoS 1 one is acknowledged (module doc)."""
        paho = self._client
        cmd = paho._in_packet["command"]
        if (cmd & 0x06) >> 1 == 2:
            return self._paho_publish()  # type: ignore[no-any-return]
        packet = paho._in_packet["packet"]
        return self._take_publish(cmd, packet, 0, len(packet))

    def _take_publish(self, cmd: int, data: bytes | bytearray, start: int, end: int) -> int:
        """Queue the QoS 0 or 1 PUBLISH whose variable header and payload are
        ``data[start:end]`` as an ``Incoming``, then acknowledge a QoS 1 one."""
        qos = (cmd & 0x06) >> 1
        if end - start < 2:
            return MQTT_ERR_PROTOCOL
        topic_end = start + 2 + ((data[start] << 8) | data[start + 1])
        if end < topic_end + (2 if qos else 0):
            return MQTT_ERR_PROTOCOL  # a topic (or message id) past the frame's end
        if qos:
            mid = (data[topic_end] << 8) | data[topic_end + 1]
            payload = bytes(data[topic_end + 2 : end])
        else:
            payload = bytes(data[topic_end:end])
        try:
            topic = data[start + 2 : topic_end].decode("utf-8")
        except UnicodeDecodeError:
            self.dropped_topics += 1
        else:
            self._queue.put_nowait(Incoming(topic, payload, bool(cmd & 0x01), qos))
        if qos:
            return self._client._send_puback(mid)  # type: ignore[no-any-return]
        return MQTT_ERR_SUCCESS

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        """aiomqtt's callback for what paho still decodes (QoS 2, MQTT 5): an
        ``Incoming``, as ``_publish`` queues."""
        try:
            topic = message.topic
        except UnicodeDecodeError:
            self.dropped_topics += 1
            return
        payload = message.payload
        if not isinstance(payload, bytes):
            payload = b"" if payload is None else bytes(payload)
        self._queue.put_nowait(Incoming(topic, payload, bool(message.retain), message.qos))

    def _puback(self, cmd: str) -> int:
        """paho's PUBACK handling, with one reason code and properties pair for every
        plain PUBACK (two bytes: its message id) rather than a new pair each."""
        paho = self._client
        packet = paho._in_packet["packet"]
        if cmd != "PUBACK" or len(packet) != 2:
            return self._paho_puback(cmd)  # type: ignore[no-any-return]
        return self._acknowledged(paho, (packet[0] << 8) | packet[1])

    @staticmethod
    def _acknowledged(paho: Any, mid: int) -> int:
        """A plain PUBACK for `mid`: the publish it answers is done."""
        with paho._out_message_mutex:
            if mid in paho._out_messages:
                return paho._do_on_publish(mid, *_PUBACK_OK)  # type: ignore[no-any-return]
        return MQTT_ERR_SUCCESS

    async def next_message(self) -> Incoming:
        """The next message received, as ``anext(client.messages)`` gives it (and the
        same ``MqttError`` once disconnected): taken at once when one is queued, else
        awaited on the queue itself, which a disconnection wakes (``_wake``)."""
        queue, gone = self._queue, self._disconnected
        await self.take_turn()
        while not gone.done():
            if queue.empty():
                item = await queue.get()
                self._turn_at = time.monotonic()
            else:
                item = queue.get_nowait()
            if item is not _WAKE:
                return item  # type: ignore[no-any-return]
        # disconnected: raise as aiomqtt's iterator does (not through it: its queue get
        # may still win the race and hand over what is queued, _WAKE included)
        raise aiomqtt.MqttError("Disconnected during message iteration") from gone.exception()

    async def take_turn(self) -> None:
        """Between two messages handed over: read every socket of the loop that holds
        data (``prompt_reads``), and let the loop have a turn once ``TAKE_SLICE_S`` has
        passed since the last (other agents, our socket). ``next_message`` calls it;
        so does a reader that takes queued messages itself."""
        prompt_reads.read_due()
        if time.monotonic() - self._turn_at >= TAKE_SLICE_S:
            await asyncio.sleep(0)
            self._turn_at = time.monotonic()

    def socket_fileno(self) -> int | None:
        """The socket ``prompt_reads`` checks: while connected over plain TCP."""
        sock = self._client._sock if self._framing else None
        if sock is None:
            return None
        fd = sock.fileno()
        return fd if fd >= 0 else None

    def read_now(self) -> None:
        """Read what the socket holds now (``prompt_reads``), as the loop's reader
        callback does when it finds the socket readable."""
        self._read(self._client)

    def _wake(self, _gone: asyncio.Future[None]) -> None:
        """A disconnection wakes ``next_message`` waiting on an empty queue."""
        self._queue.put_nowait(_WAKE)

    def _on_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        super()._on_socket_open(client, userdata, sock)
        self._inbuf, self._inpos = b"", 0
        # aiomqtt queued its reader the same way: this one replaces it, in order
        self._loop.call_soon_threadsafe(self._loop.add_reader, sock.fileno(), self._read, client)

    def _read(self, client: Any) -> None:
        """Read every packet the socket holds (at most ``READ_BATCH`` this turn)."""
        if self._framing:
            self._read_frames(client)
            return
        try:
            for _ in range(READ_BATCH):
                if client._sock is None:
                    return
                rc = client._packet_read()
                if rc == MQTT_ERR_AGAIN:
                    break
                if rc != MQTT_ERR_SUCCESS:
                    client._loop_rc_handle(rc)
                    return
            sock = client._sock
            if self._inpos < len(self._inbuf) or (
                hasattr(sock, "pending") and sock.pending() > 0  # TLS: decrypted, unread
            ):
                self._loop.call_soon(self._read, client)  # no readiness will say so
        except Exception as exc:  # as aiomqtt: a broken connection ends the session
            self._fail(exc)

    def _read_frames(self, client: Any) -> None:
        """``_read`` over plain TCP on MQTT 3.1.x: split what ``recv`` brought into
        frames here (fixed header: MQTT 3.1.1 section 2.2) and take a QoS 0 or 1
        PUBLISH and a plain PUBACK directly; any other packet goes to paho's own
        handler, as its reader would have passed it. paho reads a packet in three or
        more calls through its generic state machine, a new dict for each, which made
        it most of the read path's CPU."""
        try:
            while client._in_packet["command"]:  # paho was mid-packet when framing began
                rc = client._packet_read()
                if rc == MQTT_ERR_AGAIN:
                    return
                if rc != MQTT_ERR_SUCCESS:
                    client._loop_rc_handle(rc)
                    return
            buf, pos = self._inbuf, self._inpos
            got = False
            for _ in range(READ_BATCH):
                frame = _frame_at(buf, pos)
                if frame is None:
                    sock = client._sock
                    if sock is None:
                        return
                    try:
                        data = sock.recv(RECV_SIZE)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        data = b""
                    if not data:  # the broker closed the connection, or it broke
                        self._inbuf, self._inpos = b"", 0
                        client._loop_rc_handle(MQTT_ERR_CONN_LOST)
                        return
                    buf, pos, got = (buf[pos:] + data if pos < len(buf) else data), 0, True
                    continue
                if frame is False:  # a remaining length of more than four bytes
                    self._inbuf, self._inpos = b"", 0
                    client._loop_rc_handle(MQTT_ERR_PROTOCOL)
                    return
                start, end = frame
                self._inbuf, self._inpos = buf, end  # a handler may end the session
                rc = self._take_frame(client, buf[pos], buf, start, end)
                if rc != MQTT_ERR_SUCCESS:
                    client._loop_rc_handle(rc)
                    return
                pos = end
            else:  # READ_BATCH packets: the rest on the next turn
                self._loop.call_soon(self._read, client)
            self._inbuf, self._inpos = buf, pos
            if got:
                client._last_bytes_received = _paho_time()  # paho's keepalive reads it
        except Exception as exc:  # as aiomqtt: a broken connection ends the session
            self._fail(exc)

    def _take_frame(self, client: Any, cmd: int, buf: bytes, start: int, end: int) -> int:
        """Handle one whole packet: ``buf[start:end]`` follows its fixed header."""
        kind = cmd & 0xF0
        if kind == PUBLISH and cmd & 0x06 != 0x04:  # QoS 0 or 1
            return self._take_publish(cmd, buf, start, end)
        if kind == PUBACK and end - start == 2:
            return self._acknowledged(client, (buf[start] << 8) | buf[start + 1])
        packet = client._in_packet  # paho's handlers read the packet from here
        packet.update(command=cmd, packet=bytearray(buf[start:end]), remaining_length=end - start)
        try:
            return client._packet_handle()  # type: ignore[no-any-return]
        except MalformedPacket:
            return MQTT_ERR_PROTOCOL
        finally:
            packet.update(command=0, packet=bytearray(), remaining_length=0, pos=0)

    def _recv_buffered(self, bufsize: int) -> bytes:
        """paho's ``_sock_recv`` over plain TCP: up to `bufsize` bytes, from what one
        ``recv`` of ``RECV_SIZE`` brought (raises ``BlockingIOError`` when none)."""
        data, pos = self._inbuf, self._inpos
        if pos >= len(data):
            sock = self._client._sock
            if sock is None:
                raise ConnectionError("self._sock is None")
            data, pos = sock.recv(RECV_SIZE), 0
            if not data:
                return data  # the broker closed the connection
        end = pos + bufsize
        self._inbuf, self._inpos = data, end
        return data[pos:end]

    def start_publish(
        self, topic: str, payload: bytes, qos: int, retain: bool, *, flush: bool = False
    ) -> asyncio.Future[None]:
        """Queue a publish in paho now, in call order, and return a future that is done
        once the broker acknowledged it (QoS 1) or it was sent (QoS 0).

        `flush`: the packet, and every packet queued before it, leaves in this call
        rather than on the next loop turn (the peer rule's claims and replies: every
        loop turn they wait on a busy process adds to a claim's decision).
        Raises ``aiomqtt.MqttCodeError`` if paho refuses the publish (not connected).
        """
        info = self._client.publish(topic, payload, qos, retain)
        if info.rc != MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        if flush and self._write_soon:
            self._write_now(self._client)
        done: asyncio.Future[None] = self._loop.create_future()
        if info.is_published():
            done.set_result(None)
        else:
            self._pending_publishes[info.mid] = done  # type: ignore[assignment]
            done.add_done_callback(functools.partial(self._forget_publish, info.mid))
        return done

    def _forget_publish(self, mid: int, done: asyncio.Future[None]) -> None:
        """A waiter given up (timed out, cancelled) leaves the pending calls."""
        if done.cancelled() and self._pending_publishes.get(mid) is done:
            del self._pending_publishes[mid]

    def _on_publish(self, client: Any, userdata: Any, mid: int, *args: Any) -> None:
        waiter = self._pending_publishes.pop(mid, None)
        if waiter is None:
            return
        if isinstance(waiter, asyncio.Future):
            if not waiter.done():
                waiter.set_result(None)
        else:  # aiomqtt's own publish waits on an Event
            waiter.set()

    def _on_socket_register_write(self, client: Any, userdata: Any, sock: Any) -> None:
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if not on_loop:
            super()._on_socket_register_write(client, userdata, sock)
            return
        self._write_soon = True
        self._loop.call_soon(self._write_scheduled, client)

    def _write_scheduled(self, client: Any) -> None:
        if self._write_soon:
            self._write_now(client)

    def _write_now(self, client: Any) -> None:
        self._write_soon = False
        # paho still counts a write as registered: until loop_write has sent all,
        # packets queued meanwhile ask for nothing more, and this sends them too
        self._gathering = self._batching
        try:
            client.loop_write()
        except Exception as exc:  # as aiomqtt: a broken connection ends the session
            self._fail(exc)
            return
        finally:
            self._gathering = False
        if self._batching:
            self._flush()
        elif client.want_write() and client.socket() is not None:
            # the kernel took part: let the loop write the rest once it can
            self._loop.add_writer(client.socket().fileno(), self._write_rest, client)

    def _on_socket_unregister_write(self, client: Any, userdata: Any, sock: Any) -> None:
        if not self._batching:  # batching, the only writer is ours (_flush)
            super()._on_socket_unregister_write(client, userdata, sock)

    def _on_socket_close(self, client: Any, userdata: Any, sock: Any) -> None:
        if self._watching:
            self._watching = False
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_writer(sock.fileno())
        self._outbuf.clear()
        self._inbuf, self._inpos = b"", 0
        super()._on_socket_close(client, userdata, sock)

    def _gather(self, buf: bytes | bytearray) -> int:
        """paho's ``_sock_send`` while batching: keep `buf` to send with the rest of
        the loop turn's packets. A DISCONNECT (paho closes the socket right after it)
        goes at once with everything before it, as does a packet sent outside a loop
        turn's write."""
        sock = self._client._sock
        if sock is None:
            raise ConnectionError("self._sock is None")
        self._outbuf += buf
        if buf[:1] and buf[0] & 0xF0 == DISCONNECT:
            self._send_all(sock)
        elif not self._gathering:
            self._flush()
        return len(buf)

    def _flush(self) -> None:
        """Send what waits in one system call; watch the socket for the rest."""
        sock = self._client._sock
        if sock is None:
            self._outbuf.clear()
            return
        if self._outbuf:
            try:
                sent = sock.send(self._outbuf)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._outbuf.clear()
                self._fail(exc)
                return
            del self._outbuf[:sent]
        if self._outbuf and not self._watching:
            self._loop.add_writer(sock.fileno(), self._flush)
            self._watching = True
        elif not self._outbuf and self._watching:
            self._loop.remove_writer(sock.fileno())
            self._watching = False

    def _send_all(self, sock: socket.socket) -> None:
        """Send what waits before the socket closes (a clean DISCONNECT must reach the
        broker, or it publishes the Will); gives up after a second."""
        try:
            sock.settimeout(1.0)
            sock.sendall(self._outbuf)
        except OSError:
            pass  # the broker learns of the end from the closed connection
        finally:
            self._outbuf.clear()
            with contextlib.suppress(OSError):
                sock.setblocking(False)

    def abandon(self, reason: str = "abandoned after an unexpected error") -> None:
        """Drop the socket without a DISCONNECT (the broker then publishes the Will) and
        end the session."""
        self._client._sock_close()
        self._fail(ConnectionError(reason))
        self._disconnected.exception()  # retrieved: no unretrieved error at exit

    def _fail(self, exc: BaseException) -> None:
        if not self._disconnected.done():  # as aiomqtt: a broken connection ends it
            self._disconnected.set_exception(exc)

    def _write_rest(self, client: Any) -> None:
        try:
            client.loop_write()
        except Exception as exc:
            self._fail(exc)

    @contextlib.contextmanager
    def _pending_call(self, mid: int, value: T, pending_dict: dict[int, T]) -> Iterator[None]:
        if mid in pending_dict:
            raise RuntimeError(f'There already exists a pending call for message ID "{mid}"')
        pending_dict[mid] = value
        try:
            yield
        finally:
            pending_dict.pop(mid, None)
