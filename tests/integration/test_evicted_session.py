"""A member whose session another client takes over connects again and goes on.

mosquitto (and the embedded broker) drop a client when another connects with its
client id: any login can do it, and the member's connection must then reconnect, as
after any drop, whatever it was doing, saying ONLINE included (a connection that
ended there left the member up, silent, and never connected again).

The member is a separate process (the echo kind) connected through a TCP relay that
reads the MQTT packets it sends; when an armed packet comes, the relay holds it and
evicts the member right then (a raw client connects with the member's client id),
so the eviction lands during that publish every time.

On mosquitto only: amqtt (the embedded broker) does not evict a connected client for
a newcomer asking for a clean session (it swaps the session under the open
connection), and on a resumed one this test saw it lose the message in flight and
leave the member's new session unserved: the broker's take-over, not the member's
reconnect, is what fails there.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import structlog.testing

from teamtree.agents import Agent, Presence
from teamtree.broker import Endpoint
from teamtree.broker.connection import Connection, Incoming
from teamtree.broker.envelope import decode
from teamtree.broker.fast_client import _frame_at
from tests.conftest import BrokerUnderTest, eventually, scaled, teamtree_cmd
from tests.relay_support import TcpRelay, pump

pytestmark = pytest.mark.integration

PUBLISH = 0x30
Packet = tuple[int, bytes]  # (first byte of the fixed header, the rest after the length)


def _packet_at(buf: bytes | bytearray, pos: int) -> tuple[Packet, int] | None:
    """The MQTT packet starting at ``buf[pos]`` and where the next one starts; None
    while it is not whole yet."""
    frame = _frame_at(bytes(buf), pos)
    assert frame is not False, "a remaining length of more than four bytes"
    if frame is None:
        return None
    start, end = frame
    return (buf[pos], bytes(buf[start:end])), end


def publish_topic(packet: Packet) -> str | None:
    """The topic of a PUBLISH packet, None for any other packet."""
    cmd, body = packet
    if cmd & 0xF0 != PUBLISH:
        return None
    return body[2 : 2 + int.from_bytes(body[:2], "big")].decode()


def _connect_packet(client_id: str) -> bytes:
    """CONNECT (MQTT 3.1.1, clean session, no Will, keep-alive 60 s) as `client_id`."""
    ident = client_id.encode()
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(ident).to_bytes(2, "big") + ident
    return bytes([0x10, len(body)]) + body


class Evictor:
    """Raw clients that take a client id's session at the broker (a clean session,
    no Will, as a login reusing a member's id would); they stay connected until
    closed or until the member takes its id back."""

    def __init__(self, broker: Endpoint, client_id: str) -> None:
        self.broker = broker
        self.client_id = client_id
        self.writers: list[asyncio.StreamWriter] = []

    async def evict(self) -> None:
        reader, writer = await asyncio.open_connection(self.broker.host, self.broker.port)
        self.writers.append(writer)
        writer.write(_connect_packet(self.client_id))
        await writer.drain()
        connack = await reader.readexactly(4)
        assert connack[0] == 0x20 and connack[3] == 0, f"CONNACK refused: {connack!r}"

    def close(self) -> None:
        for writer in self.writers:
            writer.close()


class EvictingRelay(TcpRelay):
    """Relays TCP to the broker, reading the packets the member sends. ``arm(match)``:
    the next packet `match` accepts is held, the member is evicted (``Evictor``),
    then the packet goes on to the closed session, as the member's publish did when
    the broker took the session away meanwhile; ``fired`` counts evictions done so,
    and ``on_fire`` is called after each."""

    def __init__(self, broker: Endpoint, evictor: Evictor) -> None:
        super().__init__(broker.port, broker.host)
        self.evictor = evictor
        self.matches: list[Callable[[Packet], bool]] = []
        self.fired = 0
        self.on_fire: Callable[[], None] = lambda: None

    async def __aexit__(self, *exc: object) -> None:
        await super().__aexit__(*exc)
        self.evictor.close()

    def arm(self, *matches: Callable[[Packet], bool]) -> None:
        """Evict at the next packet the first of `matches` accepts, then at the next
        the second accepts, and so on."""
        self.matches = list(matches)

    def pumps(self, client, broker):  # type: ignore[no-untyped-def]
        return [self._upstream(client[0], broker[1]), pump(broker[0], client[1])]

    async def _upstream(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        buf = bytearray()
        try:
            while data := await source.read(65536):
                buf += data
                pos = sent = 0
                while (found := _packet_at(buf, pos)) is not None:
                    packet, end = found
                    if self.matches and self.matches[0](packet):
                        self.matches.pop(0)
                        sink.write(buf[sent:pos])  # what came before it goes on first
                        await sink.drain()
                        sent = pos
                        await self.evictor.evict()  # the broker drops the member now
                        self.fired += 1
                        self.on_fire()
                    pos = end
                sink.write(buf[sent:pos])
                await sink.drain()
                del buf[:pos]
        except (ConnectionError, OSError):
            pass
        finally:
            sink.close()


def says_online(member: str) -> Callable[[Packet], bool]:
    """Matches the member's ONLINE presence."""

    def match(packet: Packet) -> bool:
        topic = publish_topic(packet)
        return (
            topic is not None
            and topic.endswith(f"/{member}/connection")
            and Presence.ONLINE.value.encode() in packet[1]
        )

    return match


def counter_at_least(member: str, n: int) -> Callable[[Packet], bool]:
    """Matches the member's counter messages from the `n`-th this matcher is shown on."""
    seen = 0

    def match(packet: Packet) -> bool:
        nonlocal seen
        topic = publish_topic(packet)
        if topic is None or not topic.endswith(f"/{member}/counter"):
            return False
        seen += 1
        return seen >= n

    return match


class Member:
    """a1 (echo, counting at `count_hz`) as its own process behind an EvictingRelay,
    and what an observer connected straight to the broker hears from it."""

    def __init__(self, broker: BrokerUnderTest, team: str, tmp_path: Path, count_hz: float):
        self.team = team
        self.broker = broker
        self.config = tmp_path / "team.toml"
        self.config.write_text(
            f'[team]\nname = "{team}"\n[runtime]\nkeepalive_s = 2\nheartbeat_s = 0.5\n'
            '[mission]\nkind = "test"\n'
            f'[[agents]]\nid = "a1"\nkind = "echo"\ncount_hz = {count_hz}\n'
        )
        self.log = tmp_path / "a1.log"
        self.evictor = Evictor(broker.endpoint, f"teamtree-{team}-a1")
        self.relay = EvictingRelay(broker.endpoint, self.evictor)
        self.observer = Agent("observer", team=team, endpoint=broker.endpoint)
        self.listener = Connection(
            broker.endpoint, client_id=f"listener-{team}", on_message=self._heard,
            clean_session=True,
        )  # fmt: skip
        self.listening: asyncio.Task[None] | None = None
        self.presences: list[str] = []
        self.heard_at_eviction: list[int] = []  # len(presences) at each eviction
        self.relay.on_fire = lambda: self.heard_at_eviction.append(len(self.presences))
        self.counters: list[int] = []
        self.proc: subprocess.Popen[bytes] | None = None

    async def _heard(self, message: Incoming) -> None:
        """What the listener hears from a1: its presence states and counter numbers."""
        env = decode(message.payload)
        if message.topic.endswith("/connection"):
            self.presences.append(env.body["state"])
        else:
            self.counters.append(env.body["n"])

    async def __aenter__(self) -> Member:
        await self.relay.__aenter__()
        try:
            await self.observer.__aenter__()
            self.listening = asyncio.create_task(self.listener.run())
            for channel in ("connection", "counter"):
                await self.listener.subscribe(f"teamtree/v1/{self.team}/a1/{channel}")
            await self.observer.wait_connected(scaled(10))
            await asyncio.wait_for(self.listener.connected.wait(), scaled(10))
            self.proc = subprocess.Popen(
                teamtree_cmd("agent", "--config", str(self.config), "--id", "a1",
                             "--broker", self.relay.url, "--log-format", "json"),
                stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
            )  # fmt: skip
            await self.wait(lambda: self.presences[-1:] == ["ONLINE"], 30, "a1 ONLINE")
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                await asyncio.to_thread(self.proc.wait, 30)
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            with contextlib.suppress(Exception):
                await self.observer.stop()
            await self.listener.close()
            await self.relay.__aexit__()

    async def wait(self, predicate: Callable[[], object], timeout: float, what: str) -> None:
        """``eventually``, with a1's log when it fails."""
        try:
            await eventually(predicate, timeout, what=what)
        except pytest.fail.Exception as exc:
            pytest.fail(
                f"{exc}; presences {self.presences}\n"
                + self.log.read_text(errors="replace")[-4000:]
            )

    async def is_back(self, evictions: int) -> None:
        """a1 is connected again after `evictions` evictions: it said ONLINE after the
        Will of the last one, a late subscriber finds it ONLINE at the broker, and it
        still answers."""
        await self.wait(lambda: self.relay.fired >= evictions, 30, "the eviction")
        gone = self.heard_at_eviction[evictions - 1]
        await self.wait(lambda: "ONLINE" in self.presences[gone:], 30, "a1 ONLINE again")
        async with Agent("late", team=self.team, endpoint=self.broker.endpoint) as late:
            await self.wait(
                lambda: (m := late.team_view.get("a1")) and m.presence is Presence.ONLINE,
                10, "a1 ONLINE in the broker's retained presence",
            )  # fmt: skip
        reply = await self.observer.request(
            "echo", "echo.ping", {"after": evictions}, to="a1", timeout=scaled(10)
        )
        assert reply.body == {"after": evictions}
        assert self.proc is not None and self.proc.poll() is None, "a1 exited"


async def test_a_member_evicted_while_it_says_online_reconnects(
    mosquitto: BrokerUnderTest, team: str, tmp_path: Path
) -> None:
    """Evicted, the member reconnects and says ONLINE; evicted again just then, it
    must reconnect once more (three times over)."""
    async with Member(mosquitto, team, tmp_path, count_hz=0) as a1:
        for evictions in (1, 2, 3):
            a1.relay.arm(says_online("a1"))
            await a1.evictor.evict()  # the reconnect's ONLINE is the one evicted
            await a1.is_back(evictions)


async def test_a_member_evicted_during_a_burst_reconnects_and_loses_nothing(
    mosquitto: BrokerUnderTest, team: str, tmp_path: Path
) -> None:
    """Evicted in the middle of a stream of QoS 1 messages (200/s), the member
    reconnects, sends what it queued meanwhile, and its later messages arrive: every
    number from 1 to the last heard, twice over (the second eviction lands on its
    reconnect's ONLINE)."""
    async with Member(mosquitto, team, tmp_path, count_hz=200) as a1:
        await a1.wait(lambda: len(a1.counters) >= 50, 30, "a1's counter")
        a1.relay.arm(counter_at_least("a1", 100))
        await a1.is_back(1)
        a1.relay.arm(counter_at_least("a1", 100), says_online("a1"))
        await a1.is_back(3)
        heard = max(a1.counters)
        await a1.wait(lambda: max(a1.counters) >= heard + 200, 30, "a1's later counters")
        last = max(a1.counters)
        missing = sorted(set(range(1, last + 1)) - set(a1.counters))
        assert not missing, f"lost {len(missing)} of {last}: {missing[:20]}"


class _BrokenFactsheet(Agent):
    """An agent whose connect hook fails with a bug, not a link error."""

    def factsheet(self) -> dict:
        raise ValueError("a bug in the factsheet")


async def test_an_unexpected_error_in_the_connection_fails_the_agent_loudly(
    mosquitto: BrokerUnderTest, team: str
) -> None:
    """A bug the connection cannot recover from by reconnecting stops the agent with
    exit code 1 and an error naming it, instead of leaving it up and silent; the
    session ends without a DISCONNECT, so the team gets its Will, not a stale
    ONLINE."""
    async with Agent("observer", team=team, endpoint=mosquitto.endpoint) as observer:
        with structlog.testing.capture_logs() as logs:
            async with _BrokenFactsheet("a1", team=team, endpoint=mosquitto.endpoint) as a1:
                code = await asyncio.wait_for(a1.run_until_stopped(), scaled(20))
        await eventually(
            lambda: (m := observer.team_view.get("a1")) and m.presence is Presence.CONNECTION_BROKEN,
            10, what="a1's Will",
        )  # fmt: skip
    assert code == 1
    assert isinstance(a1.connection.failure, ValueError)
    events = {(e["event"], e["log_level"]) for e in logs}
    assert {("broker.connection_failed", "error"), ("agent.connection_failed", "error")} <= events
