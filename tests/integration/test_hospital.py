"""Seed 003 over the broker: the LTL planner and the hospital robots as processes
against mosquitto (the first test also against the embedded broker), with disturbances
injected the way ``teamtree disturb`` does.

Each run is judged from what was published: the plans the robots acknowledged, the
strategies that ran, and the executed joint trace, re-checked here against the formula
with the planner's checker fed from the verdict's segments (label sets from states).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.cli.disturb import register, send_disturbance
from teamtree.planners.ltl import FORMULAS, TSState, check_trace
from tests.conftest import REPO, AgentProcs, eventually, scaled

pytestmark = pytest.mark.integration

TIME_FACTOR = 40.0
TEAMS = {
    "study1": ("planner", "DR", "A1"),
    "study2": ("planner", "DR", "A1", "Wassi"),
}


class Watcher(Agent):
    """Records every message of the team (topic agent, channel, recipient, kind, body)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str | None, str, str | None, str, Any]] = []

    async def setup(self) -> None:
        self.on_any(self._tap)

    async def _tap(self, env, topic) -> None:
        self.seen.append((topic.agent, topic.channel, topic.recipient, env.kind, env.body))

    def bodies(self, kind: str, agent: str | None = None) -> list[Any]:
        return [b for a, _, _, k, b in self.seen if k == kind and (agent is None or a == agent)]

    def steps(self, robot: str) -> list[dict]:
        return self.bodies("ltl.step", robot)

    def verdict(self) -> dict | None:
        found = self.bodies("ltl.verdict", "planner")
        return found[-1] if found else None


def config(tmp_path: Path, scenario: str) -> Path:
    """The repo's config with a faster clock (the team id comes from --team)."""
    text = (REPO / "configs" / f"hospital_{scenario}.toml").read_text()
    text = re.sub(r"time_factor = [0-9.]+", f"time_factor = {TIME_FACTOR}", text)
    path = tmp_path / f"hospital_{scenario}.toml"
    path.write_text(text)
    return path


async def start(tmp_path, mosquitto, team, agent_procs, scenario) -> tuple[AgentProcs, Watcher]:
    procs = AgentProcs(config(tmp_path, scenario), mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    watcher = Watcher(
        "watcher", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )
    return procs, watcher


async def launch(procs: AgentProcs, watcher: Watcher, scenario: str) -> None:
    await watcher.wait_connected(10)
    for agent_id in TEAMS[scenario]:
        procs.start(agent_id)


async def all_exited(procs: AgentProcs, timeout: float = 40.0) -> dict[str, int]:
    await eventually(
        lambda: all(p.poll() is not None for p in procs.procs.values()),
        timeout,
        what="every agent process to exit",
    )
    return {name: p.returncode for name, p in procs.procs.items()}


def segments_of(verdict: dict) -> dict[str, list[list[TSState]]]:
    return {
        robot: [[TSState(*s) for s in seg] for seg in row]
        for robot, row in verdict["segments"].items()
    }


def assert_satisfied(watcher: Watcher, procs: AgentProcs, codes: dict[str, int], scenario: str):
    logs = {n: procs.log(n)[-3000:] for n in codes}
    assert all(c == 0 for c in codes.values()), (codes, logs)
    verdict = watcher.verdict()
    assert verdict is not None and verdict["satisfied"], verdict
    # the joint trace, re-checked independently from the formula text
    again = check_trace(FORMULAS[scenario], segments_of(verdict))
    assert again.satisfied, again.reason
    # what the robots published step by step is what the verdict judged
    for robot, row in segments_of(verdict).items():
        steps = [TSState(*s["state"]) for s in watcher.steps(robot)]
        judged = [s for seg in row for s in seg[1:]]
        assert steps == judged, (robot, steps, judged)
    assert_plans_match(watcher)
    return verdict


def assert_plans_match(watcher: Watcher) -> None:
    """Every plan the planner published reached its robot intact."""
    sent = {
        (r, b["epoch"], b["seq"]): b["plan"]
        for a, ch, r, k, b in watcher.seen
        if k == "ltl.plan" and a == "planner"
    }
    got = {
        (a, b["epoch"], b["seq"]): b for a, _, _, k, b in watcher.seen if k == "ltl.plan_received"
    }
    assert sent, "the planner published no plans"
    for key, plan in sent.items():
        assert key in got, f"{key[0]} never acknowledged plan {key[1:]}"
        assert got[key]["plan"] == plan
        assert got[key]["digest"] == plan["digest"] == got[key]["sent_digest"]


def strategies(watcher: Watcher) -> list[str]:
    planner = [b["strategy"] for b in watcher.bodies("ltl.replanned", "planner")]
    robots = [b["strategy"] for a, _, _, k, b in watcher.seen if k == "ltl.strategy"]
    return planner + robots


async def after_steps(watcher: Watcher, robot: str, n: int) -> None:
    await eventually(lambda: len(watcher.steps(robot)) >= n, 20, what=f"{robot} step {n}")


async def test_plans_reach_robots_and_the_trace_satisfies_study1(
    broker, team, tmp_path, agent_procs
) -> None:
    """On both brokers: mosquitto and the embedded one (amqtt)."""
    procs, watcher = await start(tmp_path, broker, team, agent_procs, "study1")
    async with asyncio.timeout(scaled(60)), watcher:
        await launch(procs, watcher, "study1")
        codes = await all_exited(procs)
    verdict = assert_satisfied(watcher, procs, codes, "study1")
    assert verdict["epochs"] == 1 and verdict["replans"] == []
    assert "VERDICT: mission satisfied" in procs.log("planner")


@pytest.mark.parametrize(
    ("robot", "kind", "after", "expect"),
    [
        ("A1", "fall", 2, "R1"),
        ("DR", "state_change", 6, "R3"),  # loaded at c8: the load falls off
        ("DR", "blocked_edge", 5, "R4"),  # the next corridor on its way
        ("A1", "critical", 2, "R2"),  # DR takes over A1's delivery
    ],
)
async def test_each_disturbance_still_completes_the_mission(
    robot, kind, after, expect, mosquitto, team, tmp_path, agent_procs
) -> None:
    procs, watcher = await start(tmp_path, mosquitto, team, agent_procs, "study1")
    async with asyncio.timeout(scaled(60)), watcher:
        await launch(procs, watcher, "study1")
        await after_steps(watcher, robot, after)
        answer = await send_disturbance(mosquitto.endpoint, team, robot, kind)
        assert answer["accepted"], answer
        codes = await all_exited(procs)
    verdict = assert_satisfied(watcher, procs, codes, "study1")
    assert expect in strategies(watcher), strategies(watcher)
    if expect == "R2":
        assert verdict["epochs"] == 2
        assert any(r["scope"] == "global" and r["failed"] == ["A1"] for r in verdict["replans"])
    if expect in ("R3", "R4"):
        assert [r["scope"] for r in verdict["replans"]] == ["local"], verdict["replans"]
        assert all(r["took_ms"] < 1000 for r in verdict["replans"])


async def test_blocked_edge_without_local_plan_goes_global(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    """A1 starts at s1, whose only way out is s1-c8: blocked for A1 only (``scope =
    "robot"``; blocked for everyone, no robot could load at s1), A1 cannot finish its
    delivery alone (Alg. 2 finds nothing), so the team is replanned (R4 -> global)
    and DR delivers both."""
    procs, watcher = await start(tmp_path, mosquitto, team, agent_procs, "study1")
    async with asyncio.timeout(scaled(60)), watcher:
        await launch(procs, watcher, "study1")
        await eventually(lambda: watcher.bodies("ltl.plan_received", "A1"), 20, what="A1 plan")
        answer = await send_disturbance(
            mosquitto.endpoint, team, "A1", "blocked_edge", edge=("s1", "c8"), scope="robot"
        )
        assert answer["accepted"], answer
        codes = await all_exited(procs)
    verdict = assert_satisfied(watcher, procs, codes, "study1")
    assert [r["strategy"] for r in verdict["replans"]] == ["R4->global"], verdict["replans"]
    last_a1 = verdict["segments"]["A1"][-1]
    assert all(region == "s1" for region, _ in last_a1), last_a1


async def test_a_blocked_corridor_is_blocked_for_every_robot(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    """c4-c3 lies on both robots' plans (study 1). It is blocked at A1 only; the planner
    deletes it from every robot's map and publishes ``ltl.map``, so DR, which was never
    disturbed, asks for R4 itself and detours too. After the block nobody crosses it."""
    procs, watcher = await start(tmp_path, mosquitto, team, agent_procs, "study1")
    async with asyncio.timeout(scaled(60)), watcher:
        await launch(procs, watcher, "study1")
        for robot in ("A1", "DR"):
            await eventually(
                lambda r=robot: watcher.bodies("ltl.plan_received", r), 20, what=f"{robot} plan"
            )
        answer = await send_disturbance(
            mosquitto.endpoint, team, "A1", "blocked_edge", edge=("c4", "c3")
        )
        assert answer["accepted"], answer
        blocked_at = {r: len(watcher.steps(r)) for r in ("A1", "DR")}
        codes = await all_exited(procs)
    verdict = assert_satisfied(watcher, procs, codes, "study1")
    maps = watcher.bodies("ltl.map")
    assert maps and maps[-1]["blocked"] == [["c3", "c4"]], maps
    by_robot = {r["robot"]: r["strategy"] for r in verdict["replans"]}
    assert by_robot.get("A1", "").startswith("R4") and by_robot.get("DR", "").startswith("R4"), (
        verdict["replans"]
    )
    for robot, before in blocked_at.items():
        regions = [s["state"][0] for s in watcher.steps(robot)[max(0, before - 1) :]]
        crossed = {frozenset(p) for p in itertools.pairwise(regions)} & {frozenset(("c3", "c4"))}
        assert not crossed, f"{robot} crossed the blocked corridor: {regions}"


async def test_critical_failure_during_training_hands_it_to_a1(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    """The paper's scenario: Wassi fails while training from c7 to c6; the global
    reallocation gives the rest of the training to A1 (study 2)."""
    procs, watcher = await start(tmp_path, mosquitto, team, agent_procs, "study2")
    async with asyncio.timeout(scaled(80)), watcher:
        await launch(procs, watcher, "study2")
        await eventually(
            lambda: any(s["state"] == ["c7", "training"] for s in watcher.steps("Wassi")),
            30,
            what="Wassi training at c7",
        )
        answer = await send_disturbance(mosquitto.endpoint, team, "Wassi", "critical")
        assert answer["accepted"], answer
        codes = await all_exited(procs, 60)
    verdict = assert_satisfied(watcher, procs, codes, "study2")
    assert verdict["replans"][0]["strategy"] == "R2"
    a1_states = {tuple(s) for s in verdict["segments"]["A1"][-1]}
    assert ("c6", "training") in a1_states


async def test_two_critical_failures_end_in_a_clear_report(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    procs, watcher = await start(tmp_path, mosquitto, team, agent_procs, "study1")
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(scaled(60)), watcher:
        await launch(procs, watcher, "study1")
        await after_steps(watcher, "DR", 1)
        assert (await send_disturbance(mosquitto.endpoint, team, "DR", "critical"))["accepted"]
        await eventually(
            lambda: any(b["epoch"] == 1 for b in watcher.bodies("ltl.plan_received", "A1")),
            10,
            what="A1's plan after DR's failure",
        )
        t0 = loop.time()
        assert (await send_disturbance(mosquitto.endpoint, team, "A1", "critical"))["accepted"]
        codes = await all_exited(procs, 15)
        took = loop.time() - t0
    assert codes["planner"] == 1 and codes["A1"] == 1 and codes["DR"] == 1, codes
    assert took < 5, f"the impossible mission took {took:.1f} s to end"
    verdict = watcher.verdict()
    assert verdict is not None and verdict["impossible"] and not verdict["satisfied"]
    assert verdict["failed"] == ["A1", "DR"]
    log = procs.log("planner")
    assert "MISSION IMPOSSIBLE" in log and "every robot has failed" in log


async def test_disturb_command_refuses_a_fall_of_a_wheeled_robot(
    mosquitto, team, tmp_path, agent_procs, capsys
) -> None:
    parser = argparse.ArgumentParser(prog="teamtree")
    handlers = register(parser.add_subparsers(dest="command"))
    procs, watcher = await start(tmp_path, mosquitto, team, agent_procs, "study1")
    async with asyncio.timeout(scaled(60)), watcher:
        await launch(procs, watcher, "study1")
        await eventually(lambda: watcher.bodies("ltl.plan_received", "DR"), 20, what="DR plan")
        base = ["--team", team, "--broker", mosquitto.url]
        args = parser.parse_args(["disturb", "DR", "fall", *base])
        assert await handlers["disturb"](args) == 1
        assert "legged robots only" in capsys.readouterr().out
        args = parser.parse_args(["disturb", "nobody", "critical", *base, "--timeout", "1"])
        assert await handlers["disturb"](args) == 1
        assert "no agent 'nobody'" in capsys.readouterr().out
        args = parser.parse_args(["disturb", "A1", "fall", *base])
        assert await handlers["disturb"](args) == 0
        assert "A1 accepted fall" in capsys.readouterr().out
        codes = await all_exited(procs)
    assert_satisfied(watcher, procs, codes, "study1")
    assert "R1" in strategies(watcher)
