"""Clock skew against the body's fencing, each agent its own process on mosquitto.

A robot (and its driver: one host) runs with its wall clock shifted an hour by
``TEAMTREE_CLOCK_OFFSET_S``. Its leases must still mean "3 s from now" at the body and
the world's fencing must not let its numbers outrank later commands: a robot an hour
ahead that worked an object and died leaves the object to its teammate (no ``fenced``
cycle), and one an hour behind still executes (no ``lease_expired`` on arrival). Its
teammates name it in a ``clock.skew`` warning. And a team that cycles on refused
executes without finishing anything ends with ``mission.failed`` after
``stall_timeout_s`` instead of cycling until the mission's timeout."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from teamtree.broker.hlc import CLOCK_OFFSET_ENV
from teamtree.hardware.sim_client import SimClient
from tests.chaos.harness import RUNS, Outcome, TeaParty, record, survivor_config
from tests.conftest import eventually, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

HOUR_S = 3600
STALL_S = 10.0


def _start(party: TeaParty, monkeypatch: pytest.MonkeyPatch, agents: tuple[str, ...],
           skew_s: dict[str, int]) -> None:  # fmt: skip
    """Start `agents`, each with its clock shifted by ``skew_s`` (default 0)."""
    for agent_id in agents:
        with monkeypatch.context() as env:
            env.setenv(CLOCK_OFFSET_ENV, str(skew_s.get(agent_id, 0)))
            party.procs.start(agent_id)


def _events(log: str, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of `event` in an agent's log."""
    out = []
    for line in log.splitlines():
        if f'"{event}"' in line:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _refusals(party: TeaParty, driver: str, reason: str) -> int:
    """How often `driver`'s body refused a command for `reason`."""
    return sum(
        1 for e in _events(party.procs.log(driver), "driver.refused") if e.get("reason") == reason
    )


def _skew_named(party: TeaParty, reader: str, peer: str, direction: str) -> list[dict[str, Any]]:
    return [
        e
        for e in _events(party.procs.log(reader), "clock.skew")
        if e.get("peer") == peer and e.get("direction") == direction
    ]


def _done_by(party: TeaParty, robot: str) -> set[str]:
    return {
        str(b.get("node"))
        for _, b in party.transitions
        if b.get("agent") == robot and b.get("status") == "done"
    }


async def _survivor_outcome(party: TeaParty, scenario: str, robots: tuple[str, ...]) -> Outcome:
    codes = await party.wait_robots_of(robots, 150)
    state = await party.final_state() or {}
    objects = state.get("objects", {})
    placed = bool(objects) and all(o.get("at_goal") for o in objects.values())
    violations = int(state.get("violations", 0))
    ended = all(c == 0 for c in codes.values())
    outcome = Outcome(ended and placed, violations, int(ended and not placed), f"{codes}")
    record(scenario, outcome)
    assert violations == 0, party.logs()
    assert outcome.completed, f"codes {codes}, placed {placed}\n" + party.logs()
    return outcome


@pytest.mark.parametrize("run", range(RUNS))
async def test_a_robot_an_hour_ahead_that_worked_an_object_and_died_leaves_it_to_its_teammate(
    run, mosquitto, team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Baxter's host runs an hour ahead. It starts a behaviour (the world has
    seen its command and its clock) and is killed with its driver: the PR2 takes the
    node over once the lease lapsed, and no command of the PR2's is refused
    ``fenced``; the PR2 names the Baxter's clock in a ``clock.skew`` warning."""
    config = survivor_config(tmp_path / "survivor.toml", team)
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, config=config)
    ahead = {"baxter": HOUR_S, "baxter-driver": HOUR_S}
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            _start(
                party, monkeypatch, ("world", "pr2-driver", "baxter-driver", "pr2", "baxter"), ahead
            )
            await eventually(lambda: party.working("baxter"), 90, what="baxter to start")
            node = party.working("baxter")
            await eventually(lambda: _events(party.procs.log("baxter"), "behaviour.started"),
                             30, what="baxter's execute sent")  # fmt: skip
            await asyncio.sleep(1.0)  # the world has it
            party.procs.kill("baxter")
            party.procs.kill("baxter-driver")
            await _survivor_outcome(
                party, "robot 1 h ahead works an object, kill -9: the other finishes", ("pr2",)
            )
            assert node is not None
            assert _refusals(party, "pr2-driver", "fenced") == 0, party.procs.log("pr2-driver")[
                -4000:
            ]
            warned = _skew_named(party, "pr2", "baxter", "ahead")
            assert warned and warned[0]["offset_s"] > HOUR_S - 60, party.procs.log("pr2")[-4000:]
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
async def test_a_robot_an_hour_behind_still_executes(
    run, mosquitto, team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PR2's host runs an hour behind: its lease deadlines are an hour in the
    world's past, yet its body runs its behaviours (none refused ``lease_expired``), it
    finishes leaves, and the team completes; the Baxter names the PR2's clock."""
    config = survivor_config(tmp_path / "survivor.toml", team)
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, config=config)
    behind = {"pr2": -HOUR_S, "pr2-driver": -HOUR_S}
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            _start(
                party,
                monkeypatch,
                ("world", "pr2-driver", "baxter-driver", "pr2", "baxter"),
                behind,
            )
            await _survivor_outcome(party, "robot 1 h behind, both work", ("pr2", "baxter"))
            assert _done_by(party, "pr2"), party.logs()
            assert _refusals(party, "pr2-driver", "lease_expired") == 0, party.procs.log(
                "pr2-driver"
            )[-4000:]
            warned = _skew_named(party, "baxter", "pr2", "behind")
            assert warned and warned[0]["offset_s"] < -(HOUR_S - 60), party.procs.log("baxter")[
                -4000:
            ]
    finally:
        party.stop()


def _stalling_config(path: Path, team: str) -> Path:
    """The survivor team with a short ``stall_timeout_s`` for the PR2."""
    survivor_config(path, team)
    text = path.read_text()
    text = text.replace(
        'id = "pr2"\nkind = "robot"\n',
        f'id = "pr2"\nkind = "robot"\nstall_timeout_s = {STALL_S}\n',
        1,
    )
    assert f"stall_timeout_s = {STALL_S}" in text
    path.write_text(text)
    return path


def _world_address(party: TeaParty) -> str | None:
    member = party.observer.team_view.get("world")
    sheet = getattr(member, "factsheet", None) or {}
    return sheet.get("zmq")


async def _jam_the_body(party: TeaParty, body: str, obj: str) -> None:
    """Start a command nobody asked for on `body` and pause it there (a stuck
    command): the world refuses every other command on `body` (``busy``) from then
    on, while the robot still sees every leaf within its reach."""
    address = await eventually(lambda: _world_address(party), 60, what="the world's address")
    async with SimClient(address, timeout=5.0) as client:
        start = (await client.state())["objects"][obj]["position"]
        away = [start[0], start[1] + 0.05, start[2]]  # not its goal: the leaf stays open
        reply = await client.execute(body, "stuck-1", "place", {"object": obj, "goal": away})
        assert reply["ok"], reply
        assert (await client.pause(body, "stuck-1"))["ok"]


def _when(event: dict[str, Any]) -> float:
    """A JSON log line's time (UTC ISO, the process's real clock), in seconds."""
    return datetime.fromisoformat(event["timestamp"]).timestamp()


@pytest.mark.parametrize("run", range(RUNS))
async def test_a_team_cycling_on_refused_executes_fails_after_the_stall_timeout(
    run, mosquitto, team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PR2's body is jammed by a stuck command (started and paused by hand on the
    world): every execute of the PR2's is refused ``busy``. The PR2 claims, starts and
    is refused again and again, so no leaf gets done, and after ``stall_timeout_s`` it
    ends its mission with ``mission.failed`` (exit 2) naming the open leaves and the
    refusals."""
    config = _stalling_config(tmp_path / "stall.toml", team)
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, config=config)
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            _start(party, monkeypatch, ("world", "pr2-driver"), {})
            await _jam_the_body(party, "pr2", "sugar")
            _start(party, monkeypatch, ("pr2",), {})
            code = (await party.wait_robots_of(("pr2",), 150))["pr2"]
            log = party.procs.log("pr2")
            refused = [e for e in _events(log, "behaviour.failed") if e.get("reason") == "busy"]
            failed = _events(log, "mission.failed")
            record("team cycling on refused executes: mission.failed after stall_timeout_s",
                   Outcome(code == 2 and bool(failed), 0, 0, f"{code}"))  # fmt: skip
            assert len(refused) >= 2, log[-4000:]  # it cycled
            assert code == 2, log[-4000:]
            assert len(failed) == 1 and "no progress" in failed[0]["reason"], failed
            assert "PLACE(burger)" in failed[0]["reason"] and "busy x" in failed[0]["reason"], (
                failed
            )
            # it waited the stall timeout from its start, and not much longer
            online = _when(_events(log, "agent.online")[0])
            assert STALL_S <= _when(failed[0]) - online < 3 * STALL_S + 20, log[-4000:]
    finally:
        party.stop()
