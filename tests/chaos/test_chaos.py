"""Chaos suite (issue 14): a tea party under faults a deployment meets. Every scenario
is repeated ``CHAOS_RUNS`` times and counted (completed, duplicates, false
completions); each run must complete with no duplicate and no false completion."""

from __future__ import annotations

import asyncio
import signal
import subprocess

import pytest

from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.agents.runtime.mission import MISSION_ENV
from teamtree.broker import MosquittoBroker, MosquittoSettings, find_mosquitto
from tests.chaos.harness import (
    ROBOTS,
    RUNS,
    Outcome,
    TeaParty,
    party_config,
    record,
    send_forged,
    survivor_config,
)
from tests.conftest import eventually, scaled
from tests.ops_support import ops_cmd

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

FREEZE_S = 9.0
"""Longer than keepalive x 1.5 (1 s here) plus the lease and margin (3 + 1 s): the
frozen robot's node is taken over while it is frozen."""


async def _judge(party: TeaParty, scenario: str, timeout: float = 150.0) -> None:
    """Every run must complete, with no duplicate and no false completion."""
    codes = await party.wait_robots(timeout)
    state = await party.final_state()
    outcome = party.outcome(codes, state)
    record(scenario, outcome)
    assert outcome.duplicates == 0, outcome.detail + party.logs()
    assert outcome.false_completions == 0, outcome.detail + party.logs()
    assert outcome.completed, outcome.detail + party.logs()


@pytest.mark.parametrize("run", range(RUNS))
async def test_robot_and_driver_frozen_past_keepalive(run, mosquitto, team, tmp_path) -> None:
    # at time factor 1 a placement takes ~6 s: the body is still moving when the lease
    # (3 s, renewed each second) lapses, so the world must stop it
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, time_factor=1.0)
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            await eventually(lambda: party.body_running("pr2"), 90, what="pr2's body to move")
            party.signal(("pr2", "pr2-driver"), signal.SIGSTOP)
            await asyncio.sleep(FREEZE_S)
            party.signal(("pr2", "pr2-driver"), signal.SIGCONT)
            await _judge(party, "robot + driver SIGSTOPped 9 s (keepalive 1 s)")
            assert "lease_expired" in party.procs.log("world") + party.procs.log("pr2-driver")
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
async def test_forged_messages_without_access_control(run, mosquitto, team, tmp_path) -> None:
    """Attacks 3-7 of issue 14 at the start of the mission and again mid-way."""
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            await send_forged(mosquitto.endpoint, team)
            await asyncio.sleep(3.0)
            await send_forged(mosquitto.endpoint, team)
            await _judge(party, "forged messages (no access control)")
        for robot in ROBOTS:
            assert "Traceback" not in party.procs.log(robot), party.procs.log(robot)[-3000:]
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("gap_s", [2.0, 10.0])
async def test_broker_killed_and_restarted(gap_s, run, mosquitto, team, tmp_path) -> None:
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    try:
        async with asyncio.timeout(scaled(300)), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            assert mosquitto.mosquitto is not None
            await mosquitto.mosquitto.stop(kill=True)
            await asyncio.sleep(gap_s)
            await mosquitto.start()
            await _judge(party, f"broker kill -9, back after {gap_s:g} s")
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
async def test_world_killed_and_restarted(run, mosquitto, team, tmp_path) -> None:
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    try:
        async with asyncio.timeout(scaled(300)), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            party.procs.kill("world")
            await asyncio.sleep(3.0)
            party.procs.start("world")
            await _judge(party, "world kill -9 and restart")
    finally:
        party.stop()


def _at_goal(state: dict | None) -> set[str]:
    objects = (state or {}).get("objects", {})
    return {name for name, o in objects.items() if o.get("at_goal")}


@pytest.mark.parametrize("run", range(RUNS))
async def test_world_killed_after_a_place_restores_it(
    run, mosquitto, team, tmp_path, monkeypatch
) -> None:
    """The world killed (SIGKILL) once an object is at its goal, and restarted: the new
    world, of the same mission, takes its objects from its predecessor's retained
    world.state, so what was placed stays placed (its own first states show it) and
    the mission completes with no duplicate and no false completion."""
    monkeypatch.setenv(MISSION_ENV, f"m-restore-{run}")  # every process's mission
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    try:
        async with asyncio.timeout(scaled(300)), party.observer:
            party.start()
            await eventually(lambda: _at_goal(party.world_state), 120,
                             what="an object placed")  # fmt: skip
            party.procs.kill("world")
            before = party.world_state or {}
            placed = _at_goal(before)
            await asyncio.sleep(3.0)
            party.procs.start("world")
            # the new world's clock starts again from 0: its first states
            await eventually(
                lambda: (party.world_state or {}).get("t", 1e9) < before.get("t", 0.0),
                30, what="the restarted world's state",
            )  # fmt: skip
            assert placed <= _at_goal(party.world_state), (placed, party.world_state)
            assert '"world.restored"' in party.procs.log("world"), party.procs.log("world")
            await _judge(party, "world kill -9 after a place, restart restores it")
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
async def test_robot_and_driver_killed_the_survivor_finishes(
    run, mosquitto, team, tmp_path
) -> None:
    """The container kill test without containers: the Baxter and its driver are killed
    (SIGKILL) while the Baxter runs a behaviour; the PR2 takes its node over once the
    lease lapsed and finishes the mission alone, each object placed once."""
    config = survivor_config(tmp_path / "survivor.toml", team)
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, config=config)
    scenario = "robot + driver kill -9, the other finishes alone"
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            await eventually(lambda: party.working("baxter"), 90, what="baxter to start")
            party.procs.kill("baxter")
            party.procs.kill("baxter-driver")
            code = (await party.wait_robots_of(("pr2",), 150))["pr2"]
            state = await party.final_state() or {}
            objects = state.get("objects", {})
            placed = all(o.get("at_goal") for o in objects.values()) and bool(objects)
            violations = int(state.get("violations", 0))
            ok = code == 0 and placed
            record(scenario, Outcome(ok, violations, int(code == 0 and not placed), f"{code}"))
            assert violations == 0, party.logs()
            assert ok, f"pr2 exit {code}, placed {placed}\n" + party.logs()
    finally:
        party.stop()


@pytest.fixture
async def secured(tmp_path, team):
    """mosquitto with the users and ACL `teamtree acl` writes for the tea party."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    config = party_config(tmp_path / "party.toml", team)
    out = subprocess.run(
        ops_cmd("acl", str(config), "-o", str(tmp_path / "broker")),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    files = tmp_path / "broker"
    broker = MosquittoBroker(
        settings=MosquittoSettings(
            allow_anonymous=False, password_file=files / "passwd", acl_file=files / "acl"
        )
    )
    await broker.start()
    try:
        yield broker, config, files
    finally:
        await broker.close()


@pytest.mark.parametrize("run", range(RUNS))
async def test_forged_messages_with_access_control(run, secured, team, tmp_path, monkeypatch):
    """Attacks 3-7 of issue 14 with access control on, sent with an observer's own
    credentials (the monitor's: read rights, write rights on its own presence only)."""
    broker, config, files = secured
    cred_dir = str(files / "credentials")
    monkeypatch.setenv("TEAMTREE_CREDENTIALS_DIR", cred_dir)
    monitor = agent_credentials("monitor", env={"TEAMTREE_CREDENTIALS_DIR": cred_dir})
    party = TeaParty.make(
        tmp_path, broker.endpoint.url, broker.endpoint, team, config=config,
        observer_id="monitor", credentials=monitor,
    )  # fmt: skip
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            await send_forged(broker.endpoint, team, **monitor)
            await asyncio.sleep(3.0)
            await send_forged(broker.endpoint, team, **monitor)
            await _judge(party, "forged messages (access control on, monitor's credentials)")
        for robot in ROBOTS:
            assert "Traceback" not in party.procs.log(robot), party.procs.log(robot)[-3000:]
    finally:
        party.stop()
