"""Chaos suite (issue 14): a tea party under faults a deployment meets. Every scenario
is repeated ``CHAOS_RUNS`` times and counted (completed, duplicates, false
completions); each run must complete with no duplicate and no false completion."""

from __future__ import annotations

import asyncio
import signal

import pytest

from tests.chaos.harness import ROBOTS, RUNS, TeaParty, record, send_forged
from tests.conftest import eventually

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

FREEZE_S = 9.0
"""Longer than keepalive x 1.5 (1 s here) plus the lease and margin (3 + 1 s): the
frozen robot's node is taken over while it is frozen."""


KNOWN_STALL = (
    "known liveness gap (docs/safety.md): after a long broker outage or a world restart "
    "the robots can stall with one branch done; safety held"
)


async def _judge(
    party: TeaParty, scenario: str, timeout: float = 150.0, stall_known: bool = False
) -> None:
    """Safety (no duplicate, no false completion) is always asserted; completion too,
    except where a stall is a known, documented gap (then the run is an xfail)."""
    codes = await party.wait_robots(timeout)
    state = await party.final_state()
    outcome = party.outcome(codes, state)
    record(scenario, outcome)
    assert outcome.duplicates == 0, outcome.detail + party.logs()
    assert outcome.false_completions == 0, outcome.detail + party.logs()
    if stall_known and not outcome.completed:
        pytest.xfail(f"{KNOWN_STALL}: {outcome.detail}")
    assert outcome.completed, outcome.detail + party.logs()


@pytest.mark.parametrize("run", range(RUNS))
async def test_robot_and_driver_frozen_past_keepalive(run, mosquitto, team, tmp_path) -> None:
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, time_factor=1.5)
    try:
        async with asyncio.timeout(240), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2"), 90, what="pr2 to start a behaviour")
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
        async with asyncio.timeout(240), party.observer:
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
        async with asyncio.timeout(300), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            assert mosquitto.mosquitto is not None
            await mosquitto.mosquitto.stop(kill=True)
            await asyncio.sleep(gap_s)
            await mosquitto.start()
            await _judge(party, f"broker kill -9, back after {gap_s:g} s", stall_known=gap_s > 5)
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
async def test_world_killed_and_restarted(run, mosquitto, team, tmp_path) -> None:
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    try:
        async with asyncio.timeout(300), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            party.procs.kill("world")
            await asyncio.sleep(3.0)
            party.procs.start("world")
            await _judge(party, "world kill -9 and restart", stall_known=True)
    finally:
        party.stop()
