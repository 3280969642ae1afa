"""Teams of multitasking robots (issue 5, item 5) over a real broker, one process per
robot: each allocates its own resources, the peer rule shares the tree's units.

Judged from what the broker carried (leaf ``node.transition`` and ``unit.transition``
messages) and from the robots' summary log events.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from teamtree.agents.observers.monitor import TeamObserver
from tests.conftest import REPO, AgentProcs, eventually, scaled, teamtree_cmd

pytestmark = pytest.mark.integration

CONFIG = REPO / "configs" / "pr2_multitask_team.toml"
UNITS = {f"task-o{i}" for i in range(1, 7)}


def leaf_record(transitions: list[dict]) -> dict[str, dict[str, list[str]]]:
    """leaf -> agent -> statuses, in order."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for t in transitions:
        out[t["node"]][t["agent"]].append(t["status"])
    return out


def unit_record(units: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """unit -> [(agent, status)] in order."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for u in units:
        out[u["node"]].append((u["agent"], u["status"]))
    return out


def summaries(out: str) -> dict[str, dict[str, dict]]:
    """agent -> summary event name -> event, from ``teamtree run --log-format json``."""
    found: dict[str, dict[str, dict]] = defaultdict(dict)
    for line in out.splitlines():
        _, sep, rest = line.partition("| ")
        if not sep or not rest.startswith("{"):
            continue
        event = json.loads(rest)
        if event["event"].startswith("summary."):
            found[event["agent"]][event["event"]] = event
    return found


def test_two_pr2s_share_the_units_and_each_multitasks(tmp_path: Path) -> None:
    proc = subprocess.run(
        teamtree_cmd(
            "run", str(CONFIG), "--broker-kind", "mosquitto", "--log-format", "json",
            "--timeout", "60", "--set", "time_factor=0.01",
        ),
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    assert "mission complete: 2 member(s)" in out
    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / "pr2_multitask_team.jsonl").read_text().splitlines()
    ]
    leaves = leaf_record([r["body"] for r in records if r["kind"] == "node.transition"])
    units = unit_record([r["body"] for r in records if r["kind"] == "unit.transition"])

    # every unit worked by one robot and done exactly once, by that robot
    owner: dict[str, str] = {}
    for unit, history in units.items():
        agents = {a for a, _ in history}
        assert len(agents) == 1, f"{unit} was worked by {agents}: {history}"
        assert [s for _, s in history] == ["working", "done"], (unit, history)
        owner[unit] = history[0][0]
    assert set(owner) == UNITS
    assert set(owner.values()) == {"pr2a", "pr2b"}, f"one robot did everything: {owner}"

    # every leaf run or skipped once, by its unit's owner
    assert len(leaves) == 24
    for leaf, by_agent in leaves.items():
        assert list(by_agent) == [owner[f"task-{leaf.split('-')[1]}"]], (leaf, dict(by_agent))
        assert next(iter(by_agent.values())) in (["working", "done"], ["skipped"]), leaf

    # each robot multitasked (two grippers busy at once) and reports what the broker saw
    figures = summaries(out)
    for robot in ("pr2a", "pr2b"):
        team = figures[robot]["summary.team"]
        assert set(team["units_mine"]) == {u for u, a in owner.items() if a == robot}
        assert set(team["units_by_peers"]) == UNITS - set(team["units_mine"])
        assert figures[robot]["summary.parallel"]["count"] >= 2, figures[robot]
        assert figures[robot]["summary.alone"]["steps"] > figures[robot]["summary.steps"]["steps"]


def killable_config(tmp_path: Path, team: str) -> Path:
    """The team config under ``team``, slower (1:10), without its recorder."""
    text = CONFIG.read_text().replace('name = "pr2-multitask-team"', f'name = "{team}"')
    text = text.split('[[agents]]\nid = "recorder"')[0]
    text = text.replace("time_factor = 0.05", "time_factor = 0.1")
    path = tmp_path / "team.toml"
    path.write_text(text)
    return path


async def test_a_killed_robots_units_are_finished_by_its_peer(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    procs = AgentProcs(killable_config(tmp_path, team), mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    leaves: list[dict] = []
    units: list[dict] = []

    def hook(env, topic, message) -> None:
        if env.kind == "node.transition":
            leaves.append(env.body)
        elif env.kind == "unit.transition":
            units.append(env.body)

    def b_mid_unit() -> str | None:
        """A unit pr2b holds and has finished a leaf of."""
        held = {u["node"] for u in units if u["agent"] == "pr2b" and u["status"] == "working"}
        held -= {u["node"] for u in units if u["status"] == "done"}
        for t in leaves:
            unit = f"task-{t['node'].split('-')[1]}"
            if t["agent"] == "pr2b" and t["status"] == "done" and unit in held:
                return unit
        return None

    async with (
        asyncio.timeout(scaled(120)),
        TeamObserver(mosquitto.endpoint, team, on_message=hook) as obs,
    ):
        await obs.wait_connected()
        procs.start("pr2a")
        procs.start("pr2b")
        victim_unit = await eventually(b_mid_unit, 60, what="pr2b half-way through a unit")
        procs.kill("pr2b")
        await eventually(lambda: procs.procs["pr2a"].poll() is not None, 90, what="pr2a done")
        await asyncio.sleep(0.3)
    log = procs.log("pr2a")
    assert procs.procs["pr2a"].returncode == 0, log[-4000:]
    history = unit_record(units)
    done_by = {u: [a for a, s in h if s == "done"] for u, h in history.items()}
    assert set(done_by) == UNITS and all(len(a) == 1 for a in done_by.values()), done_by
    assert done_by[victim_unit] == ["pr2a"], history[victim_unit]
    # after the kill, pr2a finished the victim's unit from its first leaf
    redo = [t["node"] for t in leaves if t["agent"] == "pr2a" and victim_unit[5:] in t["node"]]
    assert redo and redo[0].startswith(("move-", "pick-")), redo
    assert '"event": "summary.team"' in log


async def test_a_broker_restart_mid_run_loses_no_unit_and_runs_none_twice(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    """mosquitto stops for a second while both robots hold units: they pause their
    units (fencing), reconnect, re-claim them, and finish; every unit is done once."""
    procs = AgentProcs(killable_config(tmp_path, team), mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    units: list[dict] = []

    def hook(env, topic, message) -> None:
        if env.kind == "unit.transition":
            units.append(env.body)

    async with (
        asyncio.timeout(scaled(120)),
        TeamObserver(mosquitto.endpoint, team, on_message=hook) as obs,
    ):
        await obs.wait_connected()
        procs.start("pr2a")
        procs.start("pr2b")
        await eventually(
            lambda: {u["agent"] for u in units if u["status"] == "working"} == {"pr2a", "pr2b"},
            60,
            what="both robots holding units",
        )
        await mosquitto.stop()
        await asyncio.sleep(1.0)
        await mosquitto.start()
        members = [procs.procs["pr2a"], procs.procs["pr2b"]]
        await eventually(lambda: all(p.poll() is not None for p in members), 90, what="both done")
        await asyncio.sleep(0.3)
    for robot in ("pr2a", "pr2b"):
        assert procs.procs[robot].returncode == 0, procs.log(robot)[-4000:]
        assert '"event": "unit.paused"' in procs.log(robot), f"{robot} did not fence"
    done: dict[str, set[str]] = defaultdict(set)
    for u in units:
        if u["status"] == "done":
            done[u["node"]].add(u["agent"])
    assert set(done) == UNITS and all(len(a) == 1 for a in done.values()), dict(done)
    summaries_seen = [
        json.loads(line)
        for robot in ("pr2a", "pr2b")
        for line in procs.log(robot).splitlines()
        if '"summary.team"' in line
    ]
    mine = [set(s["units_mine"]) for s in summaries_seen]
    assert len(mine) == 2 and not (mine[0] & mine[1]) and mine[0] | mine[1] == UNITS, mine
