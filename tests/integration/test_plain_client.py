"""The plain aiomqtt client (the fallback when FastClient may not run) carries a whole
connection against a real mosquitto: QoS 0 and 1 in order, subscriptions, the Will of a
killed process, a broker restart with the outbox resent, and the hello mission."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import structlog

from teamtree.broker import Connection, Incoming, Outgoing, client_check, client_choice
from teamtree.broker.client_choice import MQTT_CLIENT_ENV
from teamtree.broker.connection import MessageHandler
from teamtree.broker.plain_client import PlainClient
from tests.conftest import REPO, eventually, teamtree_cmd

pytestmark = pytest.mark.integration

PLAIN_ENV = {**os.environ, MQTT_CLIENT_ENV: "plain"}


@pytest.fixture(autouse=True)
def plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MQTT_CLIENT_ENV, "plain")


async def _connected(conn: Connection) -> asyncio.Task[None]:
    task = asyncio.create_task(conn.run())
    await asyncio.wait_for(conn.connected.wait(), 10)
    assert isinstance(conn._client, PlainClient)
    return task


def _collector() -> tuple[list[Incoming], MessageHandler]:
    """A list and a handler that appends every message to it."""
    got: list[Incoming] = []

    async def keep(message: Incoming) -> None:
        got.append(message)

    return got, keep


async def test_qos_0_and_1_arrive_in_order_on_subscribed_topics(mosquitto) -> None:
    got, keep = _collector()
    receiver = Connection(mosquitto.endpoint, client_id="plain-rx", on_message=keep)
    await receiver.subscribe("plain/one/#")
    sender = Connection(mosquitto.endpoint, client_id="plain-tx", on_message=keep)
    tasks = [await _connected(receiver), await _connected(sender)]
    for i in range(200):  # pipelined: PUBACKs awaited in the background
        await sender.publish(Outgoing("plain/one/q1", str(i).encode(), 1), wait=False)
    assert await sender.publish(Outgoing("plain/one/q0", b"zero", 0))
    assert await sender.publish(Outgoing("plain/other", b"not subscribed", 1))
    await eventually(lambda: len(got) >= 201, 20, what="201 messages")
    await eventually(lambda: sender.inflight == 0, 10, what="every PUBACK")
    q1 = [m.payload for m in got if m.topic == "plain/one/q1"]
    assert q1 == [str(i).encode() for i in range(200)]
    assert [m for m in got if m.topic == "plain/one/q0"] == [
        Incoming("plain/one/q0", b"zero", False, 0)
    ]
    assert not [m for m in got if m.topic == "plain/other"]
    await sender.close()
    await receiver.close()
    await asyncio.gather(*tasks)


async def test_a_broker_restart_reconnects_and_resends_the_outbox(mosquitto) -> None:
    messages, keep = _collector()
    receiver = Connection(mosquitto.endpoint, client_id="plain-rx2", on_message=keep, keepalive=2)
    await receiver.subscribe("plain/restart")
    sender = Connection(mosquitto.endpoint, client_id="plain-tx2", on_message=keep, keepalive=2)
    tasks = [await _connected(receiver), await _connected(sender)]
    await sender.publish(Outgoing("plain/restart", b"before", 1))

    def got() -> list[bytes]:
        return [m.payload for m in messages]

    await eventually(lambda: got() == [b"before"], 10, what="the first message")
    await mosquitto.stop()
    await eventually(lambda: not sender.connected.is_set(), 10, what="the sender to see the stop")
    for i in range(20):  # into the outbox while the broker is down
        assert not await sender.publish(Outgoing("plain/restart", str(i).encode(), 1))
    await mosquitto.start()
    expected = [b"before", *(str(i).encode() for i in range(20))]

    def first_arrivals() -> list[bytes]:
        # QoS 1 is at least once: a message whose PUBACK was late or lost across the
        # restart comes again (the broker redelivers, or the sender resends it)
        return list(dict.fromkeys(got()))

    try:
        await eventually(lambda: first_arrivals() == expected, 30, what="the outbox")
    except pytest.fail.Exception:
        pytest.fail(f"the outbox after the restart: got {got()}, expected {expected} in order")
    assert sender.connects >= 2 and receiver.connects >= 2
    assert isinstance(sender._client, PlainClient)
    await sender.close()
    await receiver.close()
    await asyncio.gather(*tasks)


WILL_CHILD = """
import asyncio, sys
from teamtree.broker import Connection, Endpoint, Outgoing

async def main():
    async def ignore(message):
        pass
    conn = Connection(Endpoint("127.0.0.1", int(sys.argv[1])), client_id="plain-will",
                      on_message=ignore,
                      will=lambda: Outgoing("plain/will", b"gone", 1, True))
    task = asyncio.create_task(conn.run())
    await conn.connected.wait()
    print("client", type(conn._client).__name__, flush=True)
    await task

asyncio.run(main())
"""


async def test_a_killed_process_leaves_its_will(mosquitto) -> None:
    got, keep = _collector()
    watcher = Connection(mosquitto.endpoint, client_id="plain-watch", on_message=keep)
    await watcher.subscribe("plain/will")
    task = await _connected(watcher)
    child = subprocess.Popen(
        [sys.executable, "-c", WILL_CHILD, str(mosquitto.endpoint.port)],
        stdout=subprocess.PIPE, text=True, env=PLAIN_ENV,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = ""
        while not line.startswith("client "):  # structlog's lines come first
            line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)
            assert line, "the child ended before it connected"
        assert line.split() == ["client", "PlainClient"]
        assert not got
        child.kill()
        await eventually(lambda: bool(got), 20, what="the Will")
        assert got[0].topic == "plain/will" and got[0].payload == b"gone"
    finally:
        child.kill()
        child.wait(10)
    await watcher.close()
    await task


def test_hello_mission_runs_to_the_end_on_the_plain_client(tmp_path: Path) -> None:
    out = subprocess.run(
        teamtree_cmd("run", str(REPO / "configs" / "hello.toml"), "--broker-kind", "mosquitto",
                     "--timeout", "90"),
        capture_output=True, text=True, timeout=150, env=PLAIN_ENV, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "mission complete: 3 member(s)" in out.stdout
    chosen = [line for line in out.stdout.splitlines() if "broker.mqtt_client" in line]
    for agent in ("alpha", "beta", "gamma"):
        assert [line for line in chosen if line.startswith(agent) and "client=plain" in line]
    assert "client=fast" not in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


async def test_a_failed_check_falls_back_with_one_warning_and_the_connection_works(
    mosquitto, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No choice in the environment and another aiomqtt "installed": every connection
    of the process uses the plain client, and the process says so once."""
    monkeypatch.delenv(MQTT_CLIENT_ENV)
    monkeypatch.setattr(client_check, "installed_version", lambda name: "2.6.0")
    monkeypatch.setattr(client_choice, "_said", set())
    client_choice._problems.cache_clear()
    got, keep = _collector()
    try:
        with structlog.testing.capture_logs() as logs:
            receiver = Connection(mosquitto.endpoint, client_id="fallback-rx", on_message=keep)
            await receiver.subscribe("fallback/+")
            sender = Connection(mosquitto.endpoint, client_id="fallback-tx", on_message=keep)
            tasks = [await _connected(receiver), await _connected(sender)]
            assert await sender.publish(Outgoing("fallback/a", b"one", 1))
            await eventually(lambda: [m.payload for m in got] == [b"one"], 10, what="the message")
            await sender.close()
            await receiver.close()
            await asyncio.gather(*tasks)
    finally:
        client_choice._problems.cache_clear()
    warnings = [
        e for e in logs if e["log_level"] == "warning" and e["event"] == "broker.mqtt_client"
    ]
    assert len(warnings) == 1
    assert warnings[0]["found"] == "aiomqtt 2.6.0, paho-mqtt 2.6.0"
    assert warnings[0]["expected"] == "aiomqtt 2.5.1, paho-mqtt 2.2.0"
