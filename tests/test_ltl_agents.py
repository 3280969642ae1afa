"""LTL agents without a broker: the robot's behaviour tree, the mission config, the plan
codec and the ``disturb`` command line."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest

from teamtree.agents import AGENT_KINDS, load_config, parse_config, validate_kinds
from teamtree.agents.cli.disturb import register
from teamtree.agents.ltl.planner import (
    LtlPlannerAgent,
    ltl_mission,
    plan_digest,
    plan_from_wire,
    plan_to_wire,
)
from teamtree.agents.ltl.robot import (
    Action,
    BTStatus,
    Condition,
    Fallback,
    LtlRobotAgent,
    ReactiveSequence,
    Sequence_,
)
from teamtree.broker import ConfigError
from teamtree.planners.ltl import TSState, check_trace, plan_segments
from tests.conftest import REPO

S, F, R = BTStatus.SUCCESS, BTStatus.FAILURE, BTStatus.RUNNING


# -- behaviour tree -----------------------------------------------------------------------


def test_condition_is_checked_at_its_rate() -> None:
    value = {"ok": True}
    cond = Condition("c", lambda: value["ok"], rate_hz=10.0)
    table = [(0.00, True, S), (0.05, False, S), (0.10, False, F), (0.15, True, F), (0.2, True, S)]
    for now, ok, expected in table:
        value["ok"] = ok
        assert cond.tick(now) is expected, now
    assert cond.evaluations == 3
    value["ok"] = False
    cond.halt()  # forgets the cached result
    assert cond.tick(0.21) is F


async def test_action_runs_a_task_and_halt_cancels_it() -> None:
    spawned: list[asyncio.Task] = []

    def spawn(coro, name):
        spawned.append(asyncio.ensure_future(coro))
        return spawned[-1]

    gate = asyncio.Event()

    async def work() -> bool:
        await gate.wait()
        return True

    action = Action("a", work, spawn)
    assert action.tick(0) is R
    assert action.tick(0) is R
    gate.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert action.tick(0) is S
    gate.clear()
    assert action.tick(0) is R
    action.halt()
    await asyncio.sleep(0)
    assert spawned[-1].cancelled()


class Leaf(Condition):
    """A scripted leaf: returns the statuses it is given, one per tick; records halts."""

    def __init__(self, name: str, script: list[BTStatus]):
        super().__init__(name, lambda: True)
        self.script = list(script)
        self.halts = 0

    def update(self, now: float) -> BTStatus:
        return self.script.pop(0)

    def halt(self) -> None:
        self.halts += 1
        self.status = None


def test_sequence_with_memory_skips_finished_children() -> None:
    pre, act = Leaf("pre", [S, S]), Leaf("act", [R, R, S, R])
    seq = Sequence_("s", [pre, act])
    assert [seq.tick(t) for t in range(4)] == [R, R, S, R]
    assert pre.script == []  # checked once per run: at tick 0 and tick 3
    assert act.script == []


def test_reactive_sequence_halts_running_child_when_a_check_fails() -> None:
    check, act = Leaf("check", [S, S, F]), Leaf("act", [R, R])
    seq = ReactiveSequence("r", [check, act])
    assert [seq.tick(t) for t in range(3)] == [R, R, F]
    assert act.halts == 1


def test_fallback_runs_recovery_and_then_rechecks() -> None:
    cond, fix = Leaf("cond", [F, F, S]), Leaf("fix", [R, S])
    fb = Fallback("f", [cond, fix])
    assert fb.tick(0) is R
    assert fb.tick(1) is S
    assert cond.halts == 1 and fix.halts == 1  # reset after the recovery finished
    assert fb.tick(2) is S


def test_robot_tree_has_r1_only_for_legged_robots() -> None:
    config = load_config(REPO / "configs" / "hospital_study2.toml")
    trees = {}
    for robot in ("DR", "A1", "Wassi"):
        params = LtlRobotAgent.params_from_config(config.agent(robot), config)
        agent = LtlRobotAgent(robot, team="t", endpoint=config.broker or _endpoint(), **params)
        trees[robot] = agent.bt.render()
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


async def test_disturb_needs_a_team(capsys) -> None:
    parser, handlers = _parser()
    args = parser.parse_args(["disturb", "A1", "fall"])
    assert await handlers["disturb"](args) == 2
    assert "--team" in capsys.readouterr().out


def test_state_states_are_named_tuples() -> None:
    assert TSState("x2", "standby") == ("x2", "standby")
