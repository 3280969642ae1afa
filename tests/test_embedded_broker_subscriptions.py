"""The embedded broker (amqtt) under clients that connect and subscribe at once.

amqtt 0.12 walks its table of subscriptions with awaits inside the loop (a connecting
client's retained messages, a broadcast's topic filtering); a subscription made by
another client meanwhile ended that walk with "dictionary changed size during
iteration", which killed the connecting client's session (``teamtree run`` on the
embedded broker: a member disconnected at start-up and came back 5 s later).
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiomqtt

from teamtree.broker.amqtt_subscriptions import SnapshotSubscriptions
from teamtree.broker.local_broker import EmbeddedBroker

CLIENTS = 16
FILTERS = 12


def test_the_table_can_change_while_it_is_walked() -> None:
    table = SnapshotSubscriptions({"a/#": [], "b/+": []})
    for topic in table:
        table[topic + "/more"] = []
    for topic, _subs in table.items():
        table.pop(topic)
    assert not table


async def _client(port: int, n: int, start: asyncio.Event) -> None:
    await start.wait()
    await asyncio.sleep((n % 8) * 0.002)  # connects overlap others' subscriptions
    async with aiomqtt.Client("127.0.0.1", port, identifier=f"c{n}") as client:
        # a connecting client is sent the retained messages of every filter the broker
        # holds (amqtt walks them all): each of these holds a retained message
        for k in range(FILTERS):
            await client.subscribe(f"t/{n}/{k}/#")
        for k in range(0, FILTERS, 2):
            await client.publish(f"t/{n}/{k}/r", b"x", qos=1, retain=True)
        # a session the broker killed fails here
        await client.publish(f"t/{n}/0/ok", b"y", qos=1, timeout=10)


async def _storm() -> list[str]:
    errors: list[str] = []
    loop = asyncio.get_running_loop()

    def record(_loop: Any, context: dict[str, Any]) -> None:
        errors.append(f"{context.get('message')}: {context.get('exception')!r}")

    loop.set_exception_handler(record)
    broker = EmbeddedBroker()
    endpoint = await broker.start()
    try:
        for wave in range(3):  # retained messages from the wave before, more filters
            start = asyncio.Event()
            clients = [
                asyncio.create_task(_client(endpoint.port, wave * CLIENTS + n, start))
                for n in range(CLIENTS)
            ]
            start.set()
            for result in await asyncio.gather(*clients, return_exceptions=True):
                if isinstance(result, BaseException):
                    errors.append(f"client: {result!r}")
    finally:
        await broker.stop()
    return errors


def test_clients_connecting_and_subscribing_together_all_keep_their_sessions() -> None:
    errors = asyncio.run(_storm())
    assert not [e for e in errors if "changed size" in e or "client:" in e], errors
