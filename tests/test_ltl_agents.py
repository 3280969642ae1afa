"""LTL agents without a broker: the robot's behaviour tree, the mission config, the plan
codec and the ``disturb`` command line."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import py_trees
import pytest
from py_trees.common import Status

from teamtree.agents import AGENT_KINDS, load_config, parse_config, validate_kinds
from teamtree.agents.cli.disturb import register
from teamtree.agents.ltl.behaviours import CheckAtRate, Recovery, RunCoroutine, render_tree
from teamtree.agents.ltl.planner import (
    LtlPlannerAgent,
    ltl_mission,
    plan_digest,
    plan_from_wire,
    plan_to_wire,
)
from teamtree.agents.ltl.robot import LtlRobotAgent
from teamtree.broker import ConfigError
from teamtree.planners.ltl import TSState, check_trace, plan_segments
from tests.conftest import REPO

S, F, R, INVALID = Status.SUCCESS, Status.FAILURE, Status.RUNNING, Status.INVALID


# -- behaviour tree (py_trees: tiny trees ticked, the expected status per tick) ------------


class Clock:
    """A hand-moved clock for checks at a rate."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Scripted(py_trees.behaviour.Behaviour):
    """Returns the statuses it is given, one per tick; records how it was stopped."""

    def __init__(self, name: str, script: list[Status]):
        super().__init__(name)
        self.script = list(script)
        self.stops: list[Status] = []

    def update(self) -> Status:
        return self.script.pop(0)

    def terminate(self, new_status: Status) -> None:
        self.stops.append(new_status)


def statuses(root: py_trees.behaviour.Behaviour, ticks: int) -> list[Status]:
    out = []
    for _ in range(ticks):
        root.tick_once()
        out.append(root.status)
    return out


def test_check_is_made_at_its_rate() -> None:
    value, clock = {"ok": True}, Clock()
    check = CheckAtRate("c", lambda: value["ok"], rate_hz=10.0, clock=clock)
    table = [(0.00, True, S), (0.05, False, S), (0.10, False, F), (0.15, True, F), (0.2, True, S)]
    for now, ok, expected in table:
        clock.now, value["ok"] = now, ok
        check.tick_once()
        assert check.status is expected, now
    assert check.evaluations == 3
    value["ok"] = False
    check.stop(INVALID)  # a parent stopping it keeps the result: the rate holds
    check.tick_once()
    assert check.status is S and check.evaluations == 3
    check.forget()  # an interruption: the next tick checks afresh
    check.tick_once()
    assert check.status is F and check.evaluations == 4


async def test_run_coroutine_runs_a_task_and_stop_cancels_it() -> None:
    spawned: list[asyncio.Task] = []

    def spawn(coro, name):
        spawned.append(asyncio.ensure_future(coro))
        return spawned[-1]

    gate = asyncio.Event()

    async def work() -> bool:
        await gate.wait()
        return True

    action = RunCoroutine("a", work, spawn)
    assert statuses(action, 2) == [R, R]
    gate.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert statuses(action, 1) == [S]
    gate.clear()
    assert statuses(action, 1) == [R]  # a fresh run
    action.stop(INVALID)
    await asyncio.sleep(0)
    assert spawned[-1].cancelled() and len(spawned) == 2


async def test_run_coroutine_fails_on_false_or_an_exception() -> None:
    async def no() -> bool:
        return False

    async def boom() -> bool:
        raise RuntimeError("motor")

    for start in (no, boom):
        action = RunCoroutine("a", start, lambda coro, name: asyncio.ensure_future(coro))
        action.tick_once()
        await asyncio.sleep(0)
        assert statuses(action, 1) == [F]


def test_sequence_with_memory_checks_its_precondition_once_per_run() -> None:
    pre = CheckAtRate("pre", lambda: True)
    act = Scripted("act", [R, R, S, R])
    seq = py_trees.composites.Sequence("s", memory=True, children=[pre, act])
    assert statuses(seq, 4) == [R, R, S, R]
    assert pre.evaluations == 2  # at tick 0 and tick 3 only
    assert act.script == []


def test_sequence_without_memory_stops_the_running_child_when_a_check_fails() -> None:
    check, act = Scripted("check", [S, S, F]), Scripted("act", [R, R])
    seq = py_trees.composites.Sequence("r", memory=False, children=[check, act])
    assert statuses(seq, 3) == [R, R, F]
    assert act.stops == [INVALID]
    assert act.status is INVALID


def test_recovery_rechecks_its_condition_after_the_recovery_succeeded() -> None:
    value, clock = {"ok": False}, Clock()
    cond = CheckAtRate("cond", lambda: value["ok"], rate_hz=1.0, clock=clock)
    fix = Scripted("fix", [R, S, R])
    fallback = Recovery("f", [cond, fix])
    assert statuses(fallback, 2) == [R, S]  # the check failed once; the fix ran and ended
    assert cond.evaluations == 1 and fix.stops == [S, INVALID]
    value["ok"] = True  # the fix worked; within the check's period, it is asked again
    assert statuses(fallback, 1) == [S]
    assert cond.evaluations == 2 and fix.script == [R]  # no second fix


def test_recovery_stops_a_running_recovery_when_its_condition_holds_again() -> None:
    value, clock = {"ok": False}, Clock()
    cond = CheckAtRate("cond", lambda: value["ok"], rate_hz=10.0, clock=clock)
    fix = Scripted("fix", [R, R, R])
    fallback = Recovery("f", [cond, fix])
    table = [(0.0, False, R), (0.05, True, R), (0.1, True, S)]
    for now, ok, expected in table:
        clock.now, value["ok"] = now, ok
        assert statuses(fallback, 1) == [expected], now
    assert fix.stops == [INVALID] and fix.script == [R]


def test_robot_tree_has_r1_only_for_legged_robots() -> None:
    config = load_config(REPO / "configs" / "hospital_study2.toml")
    trees = {}
    for robot in ("DR", "A1", "Wassi"):
        params = LtlRobotAgent.params_from_config(config.agent(robot), config)
        agent = LtlRobotAgent(robot, team="t", endpoint=config.broker or _endpoint(), **params)
        trees[robot] = render_tree(agent.bt)
    assert "R1 recovery stand" in trees["A1"]
    assert "R1" not in trees["DR"] and "R1" not in trees["Wassi"]
    for tree in trees.values():
        for name in ("R2 global", "R3 local", "R4 local", "execute next action"):
            assert name in tree


def _endpoint():
    from teamtree.broker import Endpoint

    return Endpoint("127.0.0.1", 1883)


# -- configs ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["study1", "study2", "scenario1"])
def test_hospital_configs_validate(name: str) -> None:
    config = load_config(REPO / "configs" / f"hospital_{name}.toml")
    validate_kinds(config)
    spec = ltl_mission(config)
    assert spec.scenario == name and spec.planner == "planner"
    assert [r.id for r in spec.robots] == (
        ["DR", "A1"] if name == "study1" else ["DR", "A1", "Wassi"]
    )
    assert {m.id for m in config.members} == {"planner", *[r.id for r in spec.robots]}
    assert AGENT_KINDS["ltl_planner"] is LtlPlannerAgent
    assert AGENT_KINDS["ltl_robot"] is LtlRobotAgent


def _config(mission: dict, agents: list[dict]) -> object:
    return parse_config(
        {"team": {"name": "t"}, "mission": {"kind": "ltl", **mission}, "agents": agents},
        Path("x.toml"),
    )


PLANNER = {"id": "planner", "kind": "ltl_planner"}
DR = {"id": "DR", "kind": "ltl_robot", "type": "DR"}


@pytest.mark.parametrize(
    ("mission", "agents", "key"),
    [
        ({"scenario": "study9"}, [PLANNER, DR], "mission.scenario"),
        ({}, [PLANNER, DR], "mission.formula"),
        ({"formula": "<>(p3 &&"}, [PLANNER, DR], "mission.formula"),
        ({"scenario": "study1", "objective": "fast"}, [PLANNER, DR], "mission.objective"),
        ({"scenario": "study1", "time_factor": 0}, [PLANNER, DR], "mission.time_factor"),
        ({"scenario": "study1", "colour": 1}, [PLANNER, DR], "mission.colour"),
        ({"scenario": "study1"}, [DR], "agents"),
        ({"scenario": "study1"}, [PLANNER, {**DR, "type": "R2D2"}], "agents[1].type"),
        ({"scenario": "study1"}, [PLANNER, {**DR, "start": ["x2", "flying"]}], "agents[1].start"),
        ({"scenario": "study1"}, [PLANNER, {**DR, "speed": 3}], "agents[1]"),
    ],
)
def test_bad_mission_configs_name_the_key(mission, agents, key) -> None:
    with pytest.raises(ConfigError) as info:  # an unknown [mission] key fails at load
        validate_kinds(_config(mission, agents))
    assert f"[{key}]" in str(info.value) or key in str(info.value), str(info.value)


# -- plan codec ---------------------------------------------------------------------------


def test_plan_codec_round_trips_every_offline_plan() -> None:
    config = load_config(REPO / "configs" / "hospital_study1.toml")
    mission = ltl_mission(config).mission()
    team_plan = mission.allocate()
    for plan in team_plan.plans.values():
        wire = plan_to_wire(plan)
        back = plan_from_wire(wire)
        assert back == plan and plan_digest(back) == wire["digest"]
    assert check_trace(mission.automaton, plan_segments([team_plan])).satisfied
    bad = dict(plan_to_wire(team_plan["DR"]), actions=["stay"])
    with pytest.raises(ValueError):
        plan_from_wire(bad)


# -- disturb command line -----------------------------------------------------------------


def _parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = argparse.ArgumentParser(prog="teamtree")
    handlers = register(parser.add_subparsers(dest="command"))
    return parser, handlers


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["A1", "fall"], "fall"),
        (["DR", "critical-failure"], "critical"),
        (["DR", "state-change", "--mode", "standby"], "state_change"),
        (["DR", "blocked", "--edge", "c3,p6"], "blocked_edge"),
        (["DR", "blocked", "--edge", "c3,p6", "--scope", "robot"], "blocked_edge"),
    ],
)
def test_disturb_parses_kinds_and_options(argv: list[str], kind: str) -> None:
    parser, handlers = _parser()
    args = parser.parse_args(["disturb", *argv, "--team", "t"])
    assert set(handlers) == {"disturb"} and args.kind == kind and args.team == "t"
    if "--edge" in argv:
        assert args.edge == ("c3", "p6")
    assert args.scope == ("robot" if "--scope" in argv else "map")


@pytest.mark.parametrize(
    "argv",
    [
        ["A1", "explode"],
        ["A1/x", "fall"],
        ["DR", "blocked_edge", "--edge", "c3"],
        ["DR", "blocked_edge", "--scope", "team"],
    ],
)
def test_disturb_rejects_bad_usage(argv: list[str], capsys) -> None:
    parser, _ = _parser()
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["disturb", *argv])
    assert info.value.code == 2


async def test_disturb_needs_a_team(tmp_path, monkeypatch) -> None:
    """Without --team, $TEAMTREE_TEAM or a current run, disturb refuses (a ConfigError:
    ``teamtree`` exits 2 with it) and says how to name the team."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TEAMTREE_TEAM", raising=False)
    monkeypatch.delenv("TEAMTREE_BROKER", raising=False)
    parser, handlers = _parser()
    args = parser.parse_args(["disturb", "A1", "fall"])
    with pytest.raises(ConfigError, match="--team"):
        await handlers["disturb"](args)


def test_state_states_are_named_tuples() -> None:
    assert TSState("x2", "standby") == ("x2", "standby")
