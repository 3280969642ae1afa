"""Presence of another mission or an older session is not believed, on mosquitto.

A world of mission A is live on the team when mission B's driver and robot start: the
driver must not drive it, must say every few seconds that it waits (and why), and the
robot's service wait must time out naming the world, not start; once B's world comes,
the driver drives it. And an agent whose retained presence is replaced by a replay of
another session's says its own again, so nobody (now or later) believes the replay.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker import Envelope, HlcStamp, encode
from teamtree.broker.envelope import decode
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import build
from tests.chaos.harness import party_config
from tests.conftest import AgentProcs, eventually, scaled, teamtree_cmd

pytestmark = pytest.mark.integration


def log_events(procs: AgentProcs, agent_id: str, event: str) -> list[dict[str, Any]]:
    out = []
    for line in procs.log(agent_id).splitlines():
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == event:
                out.append(rec)
    return out


@pytest.mark.slow
async def test_a_driver_waits_out_loud_for_its_own_missions_world_and_then_drives_only_it(
    mosquitto, team: str, tmp_path: Path, agent_procs: list[AgentProcs], monkeypatch
) -> None:
    config = party_config(tmp_path / "party.toml", team)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    watcher = Agent("watcher", team=team, endpoint=mosquitto.endpoint, mission_id="mission-b",
                    runtime=RuntimeSettings())  # fmt: skip
    async with asyncio.timeout(scaled(120)), watcher:
        monkeypatch.setenv("TEAMTREE_MISSION", "mission-a")
        procs.start("world")  # mission A's world, live
        await eventually(lambda: "world" in _online_any(procs, "world"), 30, what="world A up")
        monkeypatch.setenv("TEAMTREE_MISSION", "mission-b")
        procs.start("pr2-driver")
        member = await asyncio.to_thread(
            subprocess.run,
            teamtree_cmd(
                "agent", "--config", str(config), "--id", "pr2", "--broker", mosquitto.url,
                "--team", team, "--wait-services", "3", "--log-format", "json",
            ),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        # the member's service wait counts mission B's presence only: the world is missing
        assert member.returncode != 0, member.stdout[-2000:] + member.stderr[-2000:]
        assert "not online after 3 s: world" in member.stderr + member.stdout, member.stderr
        # the driver says, again and again, that it waits; it never drives A's world
        waits = await eventually(
            lambda: len(log_events(procs, "pr2-driver", "driver.waiting_for_world")) >= 2
            and log_events(procs, "pr2-driver", "driver.waiting_for_world"),
            30, what="a second driver.waiting_for_world line",
        )  # fmt: skip
        assert waits[-1]["mission"] == "mission-b" and waits[-1]["waited_s"] >= 4.0, waits
        assert waits[-1]["dropped_other_mission"] >= 1, waits
        assert log_events(procs, "pr2-driver", "driver.connected") == []
        assert watcher.team_view.get("world") is None or not watcher.team_view.get("world").online

        # mission B's world: the driver drives it, and names its session
        procs.procs["world"].terminate()
        procs.procs["world"].wait(20)
        procs.start("world")
        world = await eventually(
            lambda: (m := watcher.team_view.get("world")) is not None and m.online and m, 30,
            what="world B online",
        )  # fmt: skip
        connected = await eventually(
            lambda: log_events(procs, "pr2-driver", "driver.connected"), 30, what="driven"
        )
        assert [c["world_session"] for c in connected] == [world.session], connected
        assert connected[0]["mission"] == "mission-b"


def _online_any(procs: AgentProcs, agent_id: str) -> set[str]:
    """`agent_id` when its own log says it went online."""
    return {agent_id} if '"agent.online"' in procs.log(agent_id) else set()


async def retained_presence(host: str, port: int, topic: str) -> dict[str, Any]:
    async with aiomqtt.Client(host, port, identifier=f"peek-{wall_ms()}") as client:
        await client.subscribe(topic, qos=1)
        async with asyncio.timeout(scaled(5)):
            async for message in client.messages:
                return decode(bytes(message.payload)).body  # type: ignore[arg-type]
    raise AssertionError("no retained presence")


async def test_an_agent_says_its_own_presence_again_over_a_replayed_one(
    mosquitto, team: str
) -> None:
    """A retained ONLINE of an older session and another mission is replayed onto a
    running agent's topic: a peer of the agent's mission never takes it for the agent,
    and the broker keeps the agent's own presence again soon after."""
    host, port = mosquitto.endpoint.host, mosquitto.endpoint.port
    runtime = RuntimeSettings(keepalive_s=2)
    pr2 = Agent("pr2", team=team, endpoint=mosquitto.endpoint, mission_id="m-b", runtime=runtime)
    peer = Agent("baxter", team=team, endpoint=mosquitto.endpoint, mission_id="m-b",
                 runtime=runtime)  # fmt: skip
    async with asyncio.timeout(scaled(30)), pr2, peer:
        await eventually(lambda: (m := peer.team_view.get("pr2")) and m.online, 10, what="pr2")
        sessions: set[str | None] = set()
        topic = build(team, "pr2", "connection")
        for i, (mission, session) in enumerate(
            [("m-a", "10000000000-0badc0de"), ("m-b", "10000000000-0badc0de")]
        ):
            body = {"state": "ONLINE", "kind": "robot", "session": session, "mission": mission}
            now = wall_ms()
            payload = encode(Envelope("presence", "pr2", 10**18 + i, now, HlcStamp(now, 0, "pr2"),
                                      body, sid=f"replay{i}"))  # fmt: skip
            async with aiomqtt.Client(host, port, identifier=f"replay-{i}") as evil:
                await evil.publish(topic, payload, qos=1, retain=True)
            for _ in range(20):
                sessions.add(peer.team_view.get("pr2").session)  # type: ignore[union-attr]
                await asyncio.sleep(0.05)
            kept = await eventually_async(lambda: retained_presence(host, port, topic),
                                          lambda b: b.get("session") == pr2.session)  # fmt: skip
            assert kept["mission"] == "m-b" and kept["state"] == "ONLINE"
        assert sessions == {pr2.session}, "the peer took the replay for pr2"
        assert peer.stats["dropped.other_mission"] >= 1
        assert peer.stats["dropped.stale_session"] >= 1
        assert pr2.stats["presence_reasserted"] >= 2

        # a forgery dated an hour ahead: believed at first, then pr2 speaks from later
        ahead = wall_ms() + 3_600_000
        body = {"state": "OFFLINE", "kind": "robot", "session": "f0r9ed", "since": ahead,
                "mission": "m-b"}  # fmt: skip
        now = wall_ms()
        payload = encode(Envelope("presence", "pr2", 10**18 + 7, now, HlcStamp(now, 0, "pr2"),
                                  body, sid="forged"))  # fmt: skip
        async with aiomqtt.Client(host, port, identifier="forger") as evil:
            await evil.publish(topic, payload, qos=1, retain=True)
        await eventually(lambda: pr2.stats["session_outbid"] >= 1, 10, what="outbid")
        assert pr2.since > ahead
        await eventually(
            lambda: (m := peer.team_view.get("pr2")) and m.session == pr2.session and m.online,
            10, what="the peer believes pr2 again",
        )  # fmt: skip
        kept = await eventually_async(lambda: retained_presence(host, port, topic),
                                      lambda b: b.get("session") == pr2.session)  # fmt: skip
        assert kept["since"] == pr2.since


async def eventually_async(fetch: Any, ok: Any, timeout: float = 10.0) -> Any:
    """Fetch until `ok` holds of what came; fail with the last one after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await fetch()
        if ok(value):
            return value
        assert loop.time() < deadline, f"still {value!r}"
        await asyncio.sleep(0.1)


async def test_kept_state_of_an_older_session_is_refused_per_sender_and_topic(
    mosquitto, team: str
) -> None:
    """Two agents keep state on one team channel: each is judged by its own session; a
    replay of an agent's earlier process's kept state after its current one's is
    refused."""
    got: list[tuple[str, Any]] = []
    reader = Agent("reader", team=team, endpoint=mosquitto.endpoint, mission_id="m-b")
    early = Agent("early", team=team, endpoint=mosquitto.endpoint, mission_id="m-b")
    late = Agent("late", team=team, endpoint=mosquitto.endpoint, mission_id="m-b")

    async def on_result(env: Envelope, _topic: Any) -> None:
        got.append((env.sender, env.body.get("n")))

    reader.on_team("result", on_result)
    async with asyncio.timeout(scaled(30)), reader, early, late:
        await reader.wait_connected(10)
        await early.wait_connected(10)
        await late.wait_connected(10)
        await asyncio.sleep(0.3)  # the reader's subscription is in
        await late.publish("result", "x.result", {"n": 1}, team=True, retain=True)
        await eventually(lambda: ("late", 1) in got, 10, what="late's result")
        await early.publish("result", "x.result", {"n": 2}, team=True, retain=True)
        await eventually(lambda: ("early", 2) in got, 10, what="early's result")
        # early's process from before (an older session of the same agent), replayed
        body = {"n": 0, "mission": "m-b", "session": "0ld5e55i0n00"}
        now = wall_ms()
        payload = encode(Envelope("x.result", "early", 10**18, now, HlcStamp(now, 0, "early"),
                                  body, sid="old"))  # fmt: skip
        async with aiomqtt.Client(mosquitto.endpoint.host, mosquitto.endpoint.port,
                                  identifier="replay-kept") as evil:  # fmt: skip
            await evil.publish(build(team, None, "result"), payload, qos=1, retain=True)
        await eventually(lambda: reader.stats["dropped.stale_session"] >= 1, 10, what="refused")
        assert ("early", 0) not in got
