"""Hostile traffic through a real broker never kills an agent process; drops are counted
and logged with the sender."""

from __future__ import annotations

import asyncio
import json
import random

import aiomqtt
import msgpack
import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker import Envelope, HlcStamp, encode
from teamtree.broker.topics import build
from tests.conftest import AgentProcs, eventually, scaled, write_config

pytestmark = pytest.mark.integration


def garbage(rng: random.Random, team: str, hid: int) -> list[tuple[str, bytes]]:
    forged = encode(Envelope("echo.ping", "mallory", 1, 1, HlcStamp(1, 0, "mallory"), {"x": 1}))
    return [
        (build(team, None, "echo"), bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))),
        (build(team, None, "echo"), msgpack.packb({"v": 1, "kind": 7, "sender": "x"})),
        (build(team, None, "echo"), msgpack.packb([1, 2, 3])),
        (build(team, None, "echo"), b"\x00" * 300_000),
        (build(team, "victim", "connection"), forged),  # sender is not the topic's agent
        (
            build(team, "victim", "factsheet"),
            encode(Envelope("factsheet", "victim", hid, 1, HlcStamp(1, 0, "victim"), "not a map")),
        ),
    ]


async def test_hostile_traffic_is_dropped_counted_and_logged(
    broker, team, tmp_path, agent_procs
) -> None:
    seed = random.randrange(2**32)
    print(f"hostile traffic seed {seed}")
    rng = random.Random(seed)
    config = write_config(
        tmp_path / "team.toml", team, '[[agents]]\nid = "target"\nkind = "echo"\n'
    )
    procs = AgentProcs(config, broker.url, team, tmp_path)
    agent_procs.append(procs)
    beats: list[dict] = []
    observer = Agent(
        "observer", team=team, endpoint=broker.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )

    async def on_beat(env, topic) -> None:
        if env.sender == "target":
            beats.append(env.body)

    observer.on_agents("heartbeat", on_beat)
    async with asyncio.timeout(scaled(90)), observer:
        procs.start("target")
        await eventually(lambda: "target" in observer.team_view.online(), 30, what="target ONLINE")
        messages = [m for hid in range(5) for m in garbage(rng, team, hid)]
        async with aiomqtt.Client(
            broker.endpoint.host, broker.endpoint.port, identifier=f"{team}-evil"
        ) as evil:
            for topic, payload in messages:
                await evil.publish(topic, payload, qos=1)
        await eventually(lambda: beats and beats[-1]["dropped"] >= len(messages), 20,
                         what=f"target to count {len(messages)} drops (seed {seed})")  # fmt: skip
        reply = await observer.request(
            "echo", "echo.ping", {"still": "alive"}, to="target", timeout=scaled(5)
        )
        assert reply.body == {"still": "alive"}
        assert procs.procs["target"].poll() is None
    records = [
        json.loads(line) for line in procs.log("target").splitlines() if line.startswith("{")
    ]
    drops = [r for r in records if r.get("event") == "message.dropped"]
    assert {r["reason"] for r in drops} >= {"malformed", "too_large", "sender_mismatch"}
    assert any(r["sender"] == "mallory" and r["reason"] == "sender_mismatch" for r in drops)
    assert "Traceback" not in procs.log("target")
