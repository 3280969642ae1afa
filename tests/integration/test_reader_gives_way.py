"""A reader that served its own urgent messages ahead of the one it held gave way to
the other agents' claims before each of them, not only before the first
(``broker/connection.py``). Against mosquitto, two readers in one loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from teamtree.broker import inbound
from teamtree.broker.connection import Connection, Incoming, Outgoing
from tests.conftest import scaled

pytestmark = pytest.mark.integration

TEAM = "teamtree/v1/t"
CLAIM = f"{TEAM}/_/claims"  # critical for B
PREP = f"{TEAM}/w/prep"  # B's normal lane: its handler keeps B busy
OBSERVATION = f"{TEAM}/w/observation"  # A's normal lane
STATE = f"{TEAM}/w/state"  # A's urgent lane


async def test_queued_transitions_wait_for_another_agents_claim_one_by_one(
    mosquitto, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B is in a handler (0.5 s) when a claim reaches its queue. A takes an observation,
    gives way to B's claim, and meanwhile ten transitions reach its own queue: A must
    serve them before the observation, and each of them gives way to B's claim too, so
    none is handled before B took the claim (the gate's time bound is set out of reach
    here). Served in a row, they all went while B's claim waited."""
    monkeypatch.setattr(inbound, "URGENT_GATE_MAX_S", 30.0)
    handled: dict[str, list[float]] = {"claim": [], "state": [], "observation": []}
    b_busy = asyncio.Event()

    async def on_a(message: Incoming) -> None:
        kind = "state" if message.topic == STATE else "observation"
        handled[kind].append(time.monotonic())

    async def on_b(message: Incoming) -> None:
        if message.topic == PREP:
            b_busy.set()
            await asyncio.sleep(0.5)
        else:
            handled["claim"].append(time.monotonic())

    async def ignore(message: Incoming) -> None:
        pass

    a = Connection(
        mosquitto.endpoint, client_id="gives-way-a", on_message=on_a, urgent_channels={"state"}
    )
    b = Connection(
        mosquitto.endpoint, client_id="gives-way-b", on_message=on_b, critical_channels={"claims"}
    )
    writer = Connection(mosquitto.endpoint, client_id="gives-way-w", on_message=ignore)
    tasks = [asyncio.create_task(c.run()) for c in (a, b, writer)]
    gate = inbound.urgent_gate()

    async def until(what: str, predicate) -> None:  # type: ignore[no-untyped-def]
        async with asyncio.timeout(scaled(10)):
            while not predicate():
                await asyncio.sleep(0.005)

    try:
        async with asyncio.timeout(scaled(30)):
            await a.subscribe(OBSERVATION, STATE)
            await b.subscribe(PREP, CLAIM)
            for c in (a, b, writer):
                await c.connected.wait()
            await asyncio.sleep(0.2)  # the subscriptions are in place
            await writer.publish(Outgoing(PREP, b"busy", 1, False))
            await b_busy.wait()
            await writer.publish(Outgoing(CLAIM, b"claim", 1, False))
            await until("B's claim queued", lambda: b._inbound.qsize() == 1)  # type: ignore[union-attr]
            waits = gate.waits
            await writer.publish(Outgoing(OBSERVATION, b"obs", 1, False))
            await until("A holds its observation", lambda: gate.waits > waits)
            for n in range(10):
                await writer.publish(Outgoing(STATE, str(n).encode(), 1, False), wait=False)
            await until("all handled", lambda: len(handled["state"]) == 10 and handled["claim"])
            await until("the observation", lambda: handled["observation"])
    finally:
        for c in (writer, a, b):
            await c.close()
        await asyncio.gather(*tasks, return_exceptions=True)
    claim = handled["claim"][0]
    assert min(handled["state"]) >= claim, (
        f"{sum(t < claim for t in handled['state'])} of 10 transitions went before B's claim"
    )
    assert handled["observation"][0] >= max(handled["state"])  # A served its own first
