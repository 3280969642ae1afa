"""A world restarted within its mission restores its objects from its own retained
``world.state`` (agents/world/restart.py); a new mission, an unscoped world, another
sender's or a malformed state start from the config, with a warning naming why."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import aiomqtt
import pytest
import structlog

from teamtree.agents import build_agent, load_config
from teamtree.agents.runtime.mission import MISSION_KEY
from teamtree.agents.world.restart import read_retained
from teamtree.broker.endpoint import parse_endpoint
from teamtree.broker.envelope import decode
from teamtree.broker.topics import build
from tests.chaos.harness import _env
from tests.conftest import scaled, write_config
from tests.integration.test_world_driver import AGENTS

pytestmark = pytest.mark.integration

CUP_GOAL = [-0.05, 0.05, 0.80]
CUP_START = (0.10, -0.05, 0.80)


async def _world(config: Any, team: str, broker: Any, mission: str | None) -> Any:
    agent = build_agent(config, "world", endpoint=broker.endpoint, team=team, mission_id=mission)
    await agent.__aenter__()
    return agent


async def _kept_state(broker: Any, team: str) -> dict[str, Any] | None:
    topic = build(team, "world", "state")
    message = await read_retained(broker.endpoint, topic, client_id=f"{team}-reader", wait_s=1.0)
    return None if message is None else decode(message.payload, topic=topic).body


async def _placed_then_stopped(config: Any, team: str, broker: Any, mission: str) -> None:
    """A world of `mission` with the cup moved to its goal and the apple turned; stopped
    once its retained state shows that."""
    world = await _world(config, team, broker, mission)
    try:
        assert world.world.move_object("cup", CUP_GOAL, world.now())["ok"]
        assert world.world.move_object("apple", [0.3, 0.3, 0.79], world.now(), yaw=1.25)["ok"]

        async def shown() -> bool:
            state = await _kept_state(broker, team)
            return bool(state and state["objects"]["cup"]["at_goal"])

        for _ in range(40):
            if await shown():
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the world's state never showed the cup at its goal")
    finally:
        await world.__aexit__(None, None, None)


async def test_a_restarted_world_restores_its_mission_state(mosquitto, team, tmp_path) -> None:
    config = load_config(write_config(tmp_path / "t.toml", team, AGENTS.format(time_factor=5.0)))
    async with asyncio.timeout(scaled(30)):
        await _placed_then_stopped(config, team, mosquitto, "m1")
        with structlog.testing.capture_logs() as logs:
            world = await _world(config, team, mosquitto, "m1")
        try:
            cup = world.world.objects["cup"]
            assert list(cup.position) == CUP_GOAL and cup.at_goal() and cup.placements == 1
            assert world.world.objects["apple"].yaw == 1.25
            (line,) = [e for e in logs if e["event"] == "world.restored"]
            assert line["objects"] == 2 and line["mission"] == "m1", line
            assert line["log_level"] == "info"

            async def published() -> bool:  # the new world's own state says so too
                state = await _kept_state(mosquitto, team)
                return bool(state and state["t"] < 1.0 and state["objects"]["cup"]["at_goal"])

            for _ in range(40):
                if await published():
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the restarted world's state lost the cup")
        finally:
            await world.__aexit__(None, None, None)


async def test_a_new_mission_starts_from_the_config(mosquitto, team, tmp_path) -> None:
    config = load_config(write_config(tmp_path / "t.toml", team, AGENTS.format(time_factor=5.0)))
    async with asyncio.timeout(scaled(30)):
        await _placed_then_stopped(config, team, mosquitto, "m1")
        for mission, why in (("m2", "of mission 'm1', not 'm2'"), (None, None)):
            with structlog.testing.capture_logs() as logs:
                world = await _world(config, team, mosquitto, mission)
            try:
                assert world.world.objects["cup"].position == CUP_START
                assert not [e for e in logs if e["event"] == "world.restored"]
                ignored = [e for e in logs if e["event"] == "world.state_ignored"]
                assert [e["why"] for e in ignored] == ([why] if why else []), ignored
            finally:
                await world.__aexit__(None, None, None)


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ("other_sender", "sent by 'mallory', not by this world"),
        ("unstamped", "not stamped with a mission"),
        ("bad_body", "malformed: bad world.state body"),
        ("unknown_object", "'mug', which this world lacks"),
        ("garbage", "malformed"),
    ],
)
async def test_a_foreign_or_malformed_state_is_ignored(
    payload, why, mosquitto, team, tmp_path
) -> None:
    config = load_config(write_config(tmp_path / "t.toml", team, AGENTS.format(time_factor=5.0)))
    objects = {"mug": {"shape": "box", "dims": [0.1, 0.1, 0.1], "position": [0, 0, 1]}}
    state = {"t": 1.0, "objects": {}, "robots": {}, "violations": 0, MISSION_KEY: "m1"}
    bodies = {
        "other_sender": _env("world.state", "mallory", 1, state),
        "unstamped": _env("world.state", "world", 1, {**state, MISSION_KEY: None}),
        "bad_body": _env("world.state", "world", 1, {**state, "objects": 3}),
        "unknown_object": _env("world.state", "world", 1, {**state, "objects": objects}),
        "garbage": b"\x93not an envelope",
    }
    endpoint = mosquitto.endpoint
    async with aiomqtt.Client(endpoint.host, endpoint.port) as client:
        topic = build(team, "world", "state")
        await client.publish(topic, bodies[payload], qos=1, retain=True)
    async with asyncio.timeout(scaled(30)):
        with structlog.testing.capture_logs() as logs:
            world = await _world(config, team, mosquitto, "m1")
        try:
            assert world.world.objects["cup"].position == CUP_START
            (line,) = [e for e in logs if e["event"] == "world.state_ignored"]
            assert why in line["why"], line
        finally:
            await world.__aexit__(None, None, None)


async def test_an_unreachable_broker_is_said_not_waited_for() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"not reached within 0\.5 s"):
        await read_retained(
            parse_endpoint(f"mqtt://127.0.0.1:{port}"), "a/b", client_id="x", wait_s=0.5
        )
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("kept", [False, True])
async def test_the_probe_ends_the_wait_whether_or_not_a_state_is_kept(
    broker, team, kept: bool
) -> None:
    """Nothing in MQTT says "no retained message": the reader's own probe, published
    once subscribed, comes back after any retained message, so a fresh start does not
    wait out its bound (60 s here), and a kept message still comes first. On both
    brokers teamtree runs on."""
    topic = build(team, "world", "state")
    probe = (build(team, "world", "restore_probe"), b"probe")
    if kept:
        async with aiomqtt.Client(broker.endpoint.host, broker.endpoint.port) as client:
            await client.publish(topic, b"kept", qos=1, retain=True)
    async with asyncio.timeout(scaled(30)):  # far below the 60 s bound: the probe ended it
        message = await read_retained(
            broker.endpoint, topic, client_id=f"{team}-probe", wait_s=60.0, probe=probe
        )
    if kept:
        assert message is not None and message.payload == b"kept"
    else:
        assert message is None
