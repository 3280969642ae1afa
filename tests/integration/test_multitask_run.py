"""Seed 004 over the broker: ``teamtree run configs/pr2_multitask_e*.toml``.

The runs are judged from what the recorder wrote at the broker (transitions) and from
the PR2's summary log events; in-process runs check the agent executes exactly what
the pure simulator predicts.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from teamtree.agents import load_config
from teamtree.agents.multitask.robot import MultitaskRobot, multitask_problem
from teamtree.agents.runtime.kinds import apply_overrides, validate_kinds
from teamtree.broker import ConfigError
from teamtree.planners.multitask import simulate
from tests.conftest import REPO, scaled, teamtree_cmd

pytestmark = pytest.mark.integration

CONFIGS = REPO / "configs"


def start_run(n: int, cwd: Path, *settings: str) -> subprocess.Popen[str]:
    """``teamtree run`` of experiment n under mosquitto, JSON logs, in ``cwd``."""
    sets = [a for s in settings for a in ("--set", s)]
    return subprocess.Popen(
        teamtree_cmd(
            "run", str(CONFIGS / f"pr2_multitask_e{n}.toml"), "--broker-kind", "mosquitto",
            "--log-format", "json", "--timeout", "60", *sets,
        ),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    return out


def summary(out: str) -> dict[str, dict]:
    """The PR2's ``summary.*`` events, by event name."""
    events = {}
    for line in out.splitlines():
        name, sep, rest = line.partition(" | ")
        if name.strip() != "pr2" or not sep or not rest.startswith("{"):
            continue
        event = json.loads(rest)
        if event["event"].startswith("summary."):
            events[event["event"]] = event
    return events


def spans(records: list[dict]) -> tuple[dict[str, tuple], dict[str, list[str]]]:
    """Per leaf: (start ts, end ts, start sim_s, end sim_s); and every status per leaf."""
    out: dict[str, list] = {}
    seen: dict[str, list[str]] = {}
    for rec in records:
        if rec["kind"] != "node.transition":
            continue
        body = rec["body"]
        seen.setdefault(body["node"], []).append(body["status"])
        if body["status"] == "working":
            out[body["node"]] = [rec["ts"], None, body["sim_s"], None]
        elif body["status"] == "done":
            out[body["node"]][1] = rec["ts"]
            out[body["node"]][3] = body["sim_s"]
    return {k: tuple(v) for k, v in out.items()}, seen


def overlap(a: tuple, b: tuple, wall: bool) -> bool:
    i = 0 if wall else 2
    return a[i] < b[i + 1] and b[i] < a[i + 1]


def test_experiment_1_runs_picks_and_places_together(tmp_path: Path) -> None:
    out = finish(start_run(1, tmp_path, "time_factor=0.02"))
    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / "pr2_multitask_e1.jsonl").read_text().splitlines()
    ]
    trees = [r for r in records if r["kind"] == "mission.tree"]
    assert trees and trees[0]["body"]["kind"] == "multitask"
    run, seen = spans(records)
    for a, b in [("pick-o1", "pick-o2"), ("place-o3", "place-o4")]:
        assert overlap(run[a], run[b], wall=True), (a, b, run[a], run[b])
        assert overlap(run[a], run[b], wall=False), (a, b, run[a], run[b])
    skipped = {node for node, statuses in seen.items() if "skipped" in statuses}
    assert skipped == {"move-o2-1", "move-o3-1", "move-o4-2"}
    for node in skipped:
        assert seen[node] == ["skipped"], f"{node} was skipped and also {seen[node]}"
    assert {n for n, s in seen.items() if s == ["working", "done"]} | skipped == set(seen)
    assert len(seen) == 16
    figures = summary(out)
    assert figures["summary.steps"]["steps"] == 10
    assert figures["summary.skipped"]["count"] == 3
    assert figures["summary.parallel"]["count"] == 6
    assert figures["summary.time"]["sim_s"] == pytest.approx(89.0, abs=0.1)
    assert figures["summary.one_at_a_time"]["steps"] == 16
    assert "mission complete: 1 member(s)" in out


def test_experiment_2_lookahead_takes_fewer_steps_than_greedy(tmp_path: Path) -> None:
    dirs = {p: tmp_path / p for p in ("greedy", "lookahead")}
    procs = {}
    for planner, cwd in dirs.items():
        cwd.mkdir()
        procs[planner] = start_run(2, cwd, f"planner={planner}", "time_factor=0.01")
    figures = {planner: summary(finish(proc)) for planner, proc in procs.items()}
    greedy = figures["greedy"]["summary.steps"]
    lookahead = figures["lookahead"]["summary.steps"]
    assert greedy["planner"] == "greedy" and lookahead["planner"] == "lookahead"
    assert (greedy["steps"], lookahead["steps"]) == (16, 14)
    assert figures["lookahead"]["summary.parallel"]["count"] > 0
    assert figures["greedy"]["summary.one_at_a_time"]["steps"] == 16


@pytest.mark.parametrize("n", [1, 2, 3, 4])
async def test_the_agent_executes_what_the_simulator_predicts(mosquitto, team, n) -> None:
    config = load_config(CONFIGS / f"pr2_multitask_e{n}.toml")
    problem = multitask_problem(config)
    async with asyncio.timeout(scaled(30)):
        for planner in ("greedy", "lookahead", "sequential"):
            robot = MultitaskRobot(
                "pr2",
                team=team,
                endpoint=mosquitto.endpoint,
                problem=problem,
                planner=planner,
                time_factor=0.0,
            )
            async with robot:
                assert await robot.run_until_stopped() == 0
            expected = simulate(problem, planner)
            assert robot.result is not None
            assert [s.behaviours for s in robot.result.steps] == [
                s.behaviours for s in expected.steps
            ], planner
            assert robot.result.time_s == pytest.approx(expected.time_s)
            assert robot.result.final.skipped == expected.final.skipped


def test_config_errors_name_the_key() -> None:
    config = load_config(CONFIGS / "pr2_multitask_e1.toml")
    validate_kinds(apply_overrides(config, {"planner": "lookahead", "time_factor": 0.5}))
    with pytest.raises(ConfigError, match=r"\[agents\[0\]\.planner\].*greedy"):
        validate_kinds(apply_overrides(config, {"planner": "fastest"}))
    with pytest.raises(ConfigError, match=r"\[agents\[0\]\.time_factor\]"):
        validate_kinds(apply_overrides(config, {"time_factor": -1}))
    wrong = replace(config, mission=replace(config.mission, kind="tasktree"))
    with pytest.raises(ConfigError, match=r"\[mission\.kind\]"):
        validate_kinds(wrong)
    params = {**config.mission.params, "start": [0.0]}
    broken = replace(config, mission=replace(config.mission, params=params))
    with pytest.raises(ConfigError, match=r"\[mission\.start\] expected \[x, y\]"):
        validate_kinds(broken)
