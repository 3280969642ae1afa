"""Replays into a new mission: mission A runs to its end on mosquitto; a plain MQTT
client captured its presence as it went (raw bytes) and everything the broker kept of
it afterwards. Mission B then runs on the same broker and team, and while its robots
work the capture is published into it again, retained and not. B must finish with
nothing done twice, its drivers must never drive A's world, and the replay must be
refused out loud (``message.dropped`` naming the reason), not swallowed.

Each run is ``teamtree run`` (world, drivers and robots as processes) with a mission id
of its own; the attacker is a client with no login (no access control). Judged by B's
exit code and output, B's drivers' ``driver.connected`` lines (which world session they
drove) and the world's own final ``world.state`` of mission B.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from teamtree.broker.envelope import decode
from tests.chaos.harness import EITHER, NEEDED, RUNS, Outcome, party_config, record
from tests.conftest import teamtree_cmd

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]

DRIVERS = ("pr2-driver", "baxter-driver")
MISSION_S = 240.0
"""A whole mission's bound (the config's own timeout is 150 s): generous on a busy machine."""


def run_cmd(config: Path, url: str, mission: str) -> list[str]:
    return teamtree_cmd(
        "run", str(config), "--broker", url, "--mission-id", mission, "--log-format", "json"
    )


def events(output: str, agent: str) -> list[dict[str, Any]]:
    """The JSON log lines ``run`` relayed from child `agent` (``<agent> | {...}``)."""
    out = []
    for line in output.splitlines():
        name, sep, rest = line.partition(" | ")
        if sep and name.strip() == agent and rest.startswith("{"):
            with contextlib.suppress(ValueError):
                out.append(json.loads(rest))
    return out


class Capture:
    """A plain subscriber to the whole team: raw (topic, payload, retain) as delivered."""

    def __init__(self, host: str, port: int, team: str):
        self.host, self.port, self.team = host, port, team
        self.messages: list[tuple[str, bytes, bool]] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def _run(self) -> None:
        ident = f"capture-{uuid.uuid4().hex[:8]}"
        async with aiomqtt.Client(self.host, self.port, identifier=ident) as client:
            await client.subscribe(f"teamtree/v1/{self.team}/#", qos=1)
            self._ready.set()
            async for message in client.messages:
                payload = message.payload
                if isinstance(payload, bytes | bytearray):
                    self.messages.append((str(message.topic), bytes(payload), message.retain))

    async def __aenter__(self) -> Capture:
        self._task = asyncio.create_task(self._run())
        await asyncio.wait_for(self._ready.wait(), 20)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
            await self._task

    def of(self, channel: str) -> list[tuple[str, bytes, bool]]:
        return [m for m in self.messages if m[0].split("/")[4:5] == [channel]]

    def bodies(self, topic_end: str) -> list[dict[str, Any]]:
        out = []
        for topic, payload, _ in self.messages:
            if topic.endswith(topic_end):
                with contextlib.suppress(Exception):
                    body = decode(payload).body
                    if isinstance(body, dict):
                        out.append(body)
        return out


async def kept(host: str, port: int, team: str) -> list[tuple[str, bytes, bool]]:
    """Everything the broker keeps for `team` now (its retained messages)."""
    async with Capture(host, port, team) as cap:
        count = -1
        while count != len(cap.messages):  # retained ones come at once after SUBSCRIBE
            count = len(cap.messages)
            await asyncio.sleep(0.5)
    return [m for m in cap.messages if m[2]]


async def replay(host: str, port: int, messages: list[tuple[str, bytes, bool]]) -> None:
    """Publish `messages` as they were (retained ones retained), then each once more
    not retained, from a client with no login."""
    async with aiomqtt.Client(host, port, identifier=f"replay-{uuid.uuid4().hex[:8]}") as evil:
        for topic, payload, retain in messages:
            await evil.publish(topic, payload, qos=1, retain=retain)
        for topic, payload, _ in messages:
            await evil.publish(topic, payload, qos=1, retain=False)


async def wait_process(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.poll() is None and loop.time() < deadline:
        await asyncio.sleep(0.5)
    return proc.poll()


def world_session(capture: Capture, mission: str) -> str | None:
    """The session of mission `mission`'s world, from its presence."""
    for body in capture.bodies("/world/connection"):
        if body.get("mission") == mission and body.get("state") == "ONLINE":
            return body.get("session")
    return None


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("what", ["presence", "presence and kept state"])
async def test_a_replay_of_an_old_missions_presence_and_kept_state_does_not_stop_a_new_one(
    tmp_path: Path, mosquitto, team: str, run: int, what: str
) -> None:
    """``presence``: only A's ``*/connection`` messages, as the report had it (on the
    code before mission-stamped presence the drivers then waited for a world for good);
    with ``kept state`` also everything the broker kept of A (factsheets, snapshots,
    the world's state: the drivers drove A's gone world)."""
    host, port = mosquitto.endpoint.host, mosquitto.endpoint.port
    config = party_config(tmp_path / "party.toml", team, time_factor=4.0, keepalive=2)
    mission_a, mission_b = f"ma-{uuid.uuid4().hex[:6]}", f"mb-{uuid.uuid4().hex[:6]}"

    # mission A to its end, its presence captured raw as it went
    async with Capture(host, port, team) as capture_a:
        first = await asyncio.to_thread(
            subprocess.run, run_cmd(config, mosquitto.url, mission_a),
            capture_output=True, text=True, timeout=MISSION_S, cwd=tmp_path,
        )  # fmt: skip
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    presence_a = capture_a.of("connection")
    kept_a = await kept(host, port, team)
    assert len(presence_a) >= 10 and any(t.endswith("/world/state") for t, _, _ in kept_a)
    session_a = world_session(capture_a, mission_a)

    # mission B on the same broker and team; once its robots work, A comes back
    log_b = tmp_path / "b.out"
    with log_b.open("wb") as out:
        proc = subprocess.Popen(
            run_cmd(config, mosquitto.url, mission_b), stdout=out, stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )  # fmt: skip
    try:
        async with Capture(host, port, team) as capture_b:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + MISSION_S
            while not any(
                b.get("status") == "working" and b.get("mission") == mission_b
                for b in capture_b.bodies("/state")
            ):
                assert proc.poll() is None and loop.time() < deadline, log_b.read_text()[-4000:]
                await asyncio.sleep(0.2)
            first_replay = presence_a if what == "presence" else [*kept_a, *presence_a]
            await replay(host, port, first_replay)
            await asyncio.sleep(2.0)  # and again, later in the mission
            await replay(host, port, presence_a)
            code = await wait_process(proc, MISSION_S)
        session_b = world_session(capture_b, mission_b)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)
    output = log_b.read_text(errors="replace")

    # the world's own last word on mission B
    state: dict[str, Any] = {}
    for topic, payload, _ in await kept(host, port, team):
        if topic.endswith("/world/state"):
            state = decode(payload).body
    objects = state.get("objects", {}) if state.get("mission") == mission_b else {}
    at_goal = {name for name, o in objects.items() if o.get("at_goal")}
    placed = set(NEEDED) <= at_goal and bool(set(EITHER) & at_goal)
    violations = int(state.get("violations", 0))
    ok = code == 0 and f"mission {mission_b}: SUCCEEDED" in output
    record(
        f"replay of an old mission's {what} into a new one",
        Outcome(ok and placed, violations, int(ok and not placed), f"code={code}"),
    )

    assert ok, f"mission B did not succeed (exit {code}):\n{output[-6000:]}"
    assert placed and violations == 0, f"world of B: at_goal={sorted(at_goal)} {violations=}"
    assert session_a is not None and session_b is not None and session_a != session_b
    for driver in DRIVERS:
        drove = [e.get("world_session") for e in events(output, driver)
                 if e.get("event") == "driver.connected"]  # fmt: skip
        assert drove and set(drove) == {session_b}, f"{driver} drove {drove}; A's: {session_a}"
    refused = [
        e for agent in (*DRIVERS, "pr2", "baxter") for e in events(output, agent)
        if e.get("event") == "message.dropped" and e.get("reason") == "other_mission"
    ]  # fmt: skip
    assert refused, "the replay was not refused out loud (no message.dropped other_mission)"
