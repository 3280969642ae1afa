"""Kitting agents: config validation, the board replica, the service's deadline budget,
a whole kitting run as processes over mosquitto (judged from what was published), and
``teamtree study kitting`` on a tiny grid."""

from __future__ import annotations

import asyncio
import csv
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from teamtree.agents import Agent, RuntimeSettings, parse_config
from teamtree.agents.allocation.allocator import SOLVE, error_body, solve_request
from teamtree.agents.allocation.kitting import Board, CobotAgent, KittingHumanAgent
from teamtree.agents.runtime.kinds import build_agent, validate_kinds
from teamtree.broker import ConfigError, Endpoint
from teamtree.planners.allocation import (
    DEFAULT_PATTERN,
    ErrorEvidence,
    HumanAction,
    HumanBeliefs,
    KittingScenario,
    RobotAction,
    SubtaskState,
)
from tests.conftest import REPO, AgentProcs, BrokerUnderTest, eventually, study_cli, teamtree_cmd

TEAM_TOML = """
[team]
name = "{team}"

[runtime]
tick_hz = 20
heartbeat_s = 0.2
keepalive_s = 1
request_timeout_s = 3.0

[mission]
kind = "kitting"
timeout_s = 60
time_factor = {tf}

[[agents]]
id = "cobot"
kind = "cobot"
{cobot}

[[agents]]
id = "human"
kind = "kitting_human"
p_follow = 0.6
p_error = 0.4
seed = 3
{human}

[[agents]]
id = "allocator"
kind = "allocator"
role = "service"
{allocator}
"""


def team_config(path: Path, team: str = "k", tf: float = 30.0, **extra: str) -> Path:
    path.write_text(
        TEAM_TOML.format(
            team=team,
            tf=tf,
            cobot=extra.get("cobot", ""),
            human=extra.get("human", ""),
            allocator=extra.get("allocator", ""),
        )
    )
    return path


def load(path: Path):
    import tomllib

    return parse_config(tomllib.loads(path.read_text()), path)


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"cobot": "fixed_p_error = 1.5"}, "agents[0].fixed_p_error"),
        ({"human": "cobot = 3"}, "agents[1].cobot"),
        ({"human": "colour = 3"}, "agents[1]"),
        ({"cobot": 'solver = "cplex"'}, "agents[0].solver"),
        ({"cobot": "attempts = 0"}, "agents[0].attempts"),
        ({"cobot": 'follow_prior = "x"'}, "agents[0].follow_prior"),
        ({"allocator": "workers = 0"}, "agents[2].workers"),
        ({"allocator": 'group = "a/b"'}, "agents[2].group"),
        ({"allocator": 'shared = "yes"'}, "agents[2].shared"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, extra: dict[str, str], key: str) -> None:
    config = load(team_config(tmp_path / "k.toml", **extra))
    with pytest.raises(ConfigError) as info:
        validate_kinds(config)
    assert info.value.key == key


def test_mission_settings_are_checked(tmp_path: Path) -> None:
    config = load(team_config(tmp_path / "k.toml", tf=-1))
    with pytest.raises(ConfigError) as info:
        validate_kinds(config)
    assert info.value.key == "mission.time_factor"


def test_shipped_configs_build() -> None:
    for name in ("kitting.toml", "kitting_replicas.toml"):
        path = Path(__file__).resolve().parent.parent / "configs" / name
        config = load(path)
        validate_kinds(config)
        cobot = build_agent(config, "cobot", endpoint=Endpoint("127.0.0.1", 1))
        human = build_agent(config, "human", endpoint=Endpoint("127.0.0.1", 1))
        assert isinstance(cobot, CobotAgent) and isinstance(human, KittingHumanAgent)
        assert cobot.scenario.n == 20 and cobot.time_factor > 1


def test_board_follows_published_actions() -> None:
    board = Board(KittingScenario.default())
    board.human_end(0, HumanAction.H1, correct=False)
    board.human_end(5, HumanAction.H2, correct=True)
    board.human_end(10, HumanAction.H2, correct=False)
    assert board.states[:1] == [SubtaskState.MISPLACED]
    assert board.states[5] is SubtaskState.ASSIGNED_TO_ROBOT_CORRECTLY
    assert board.states[10] is SubtaskState.ASSIGNED_TO_ROBOT_INCORRECTLY
    board.robot_busy[0] = RobotAction.R3
    board.robot_end(0, RobotAction.R3)
    board.robot_end(5, RobotAction.R4)
    board.robot_end(15, RobotAction.R2)
    assert board.states[0] is SubtaskState.INITIAL and not board.robot_busy
    assert board.states[5] is SubtaskState.PLACED_CORRECTLY
    assert board.states[15] is SubtaskState.ASSIGNED_TO_HUMAN
    board.human_end(15, HumanAction.H4, correct=True)
    assert board.pattern_text() == "..... #.... x.... #...."
    assert not board.all_placed()


def test_solve_without_time_left_is_a_deadline_error() -> None:
    body = {
        "problem": {
            "form": "kitting",
            "states": ["initial"] * 20,
            "p_follow": 0.5,
            "p_error": 0.1,
        }
    }
    with pytest.raises(TimeoutError) as info:
        solve_request(SOLVE, body, 0.001)
    assert error_body(info.value)["error"] == "deadline"


# -- a whole run over the broker -----------------------------------------------------------


class Watcher(Agent):
    """Records every kitting action and status message, as a camera on the table would."""

    kind = "watcher"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.events: list[tuple[str, str, dict]] = []
        self.done: dict | None = None

    async def setup(self) -> None:
        self.on_agents("actions", self._on_action)
        self.on_agents("status", self._on_status)

    async def _on_action(self, env, topic) -> None:
        self.events.append((env.sender, env.kind, dict(env.body)))

    async def _on_status(self, env, topic) -> None:
        if env.kind == "kitting.done":
            self.done = dict(env.body)


def judge(events: list[tuple[str, str, dict]]) -> tuple[list[str | None], int]:
    """Replay the table from the published actions; return each spot's final colour and
    the number of wrong human actions (wrong colour, or a spot filled out of order)."""
    pattern = [c.value for c in DEFAULT_PATTERN]
    spot: list[str | None] = [None] * 20
    in_order_at_start: dict[int, bool] = {}
    wrong = 0

    def ok(i: int) -> bool:
        return i % 5 == 0 or spot[i - 1] == pattern[i - 1]

    for _sender, kind, body in events:
        task, phase, action = body["task"], body["phase"], body["action"]
        if kind == "kitting.human_action" and phase == "start":
            in_order_at_start[task] = ok(task)
        elif kind == "kitting.human_action" and phase == "end":
            if action == "H1":
                spot[task] = body["colour"]
                wrong += body["colour"] != pattern[task] or not in_order_at_start[task]
            elif action == "H2":
                wrong += body["colour"] != pattern[task]
            elif action == "H4":
                spot[task] = body["colour"]
        elif kind == "kitting.robot_action" and phase == "end":
            if action in ("R1", "R4"):
                assert ok(task), f"the robot filled spot {task} out of order"
                spot[task] = pattern[task]
            elif action == "R3" and spot[task] is not None:
                spot[task] = None
    return spot, wrong


def replay_alpha_e(events: list[tuple[str, str, dict]]) -> tuple[float, int]:
    """E[α_e] replayed from the published human actions (eqs. 27-29: every action the
    robot did not assign, i.e. all but H4, judged as in ``judge``) and how many there were."""
    pattern = [c.value for c in DEFAULT_PATTERN]
    spot: list[str | None] = [None] * 20
    in_order: dict[int, bool] = {}
    beliefs = HumanBeliefs()
    n = 0
    for _sender, kind, body in events:
        task, phase, action = body["task"], body["phase"], body["action"]
        if kind == "kitting.human_action" and phase == "start":
            in_order[task] = task % 5 == 0 or spot[task - 1] == pattern[task - 1]
        elif kind == "kitting.human_action" and phase == "end":
            if action in ("H1", "H4"):
                spot[task] = body["colour"]
            if action != "H4":
                ok = body["colour"] == pattern[task] and (action == "H2" or in_order[task])
                beliefs.observe_error(ErrorEvidence.CORRECT if ok else ErrorEvidence.ERROR)
                n += 1
        elif kind == "kitting.robot_action" and phase == "end":
            if action in ("R1", "R4"):
                spot[task] = pattern[task]
            elif action == "R3":
                spot[task] = None
    return beliefs.p_error, n


@pytest.mark.integration
async def test_kitting_run_completes_with_the_correct_pattern(
    mosquitto: BrokerUnderTest, team: str, tmp_path: Path, agent_procs: list
) -> None:
    config = team_config(tmp_path / "kitting.toml", team, tf=30.0)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    runtime = RuntimeSettings(tick_hz=20, heartbeat_s=0.2, keepalive_s=1)
    async with asyncio.timeout(130):
        async with Watcher("watcher", team=team, endpoint=mosquitto.endpoint, runtime=runtime) as w:
            await w.wait_connected(10)
            await asyncio.sleep(0.2)  # subscriptions in place before the episode starts
            for agent_id in ("allocator", "human", "cobot"):
                procs.start(agent_id)
            await eventually(lambda: w.done is not None, 120, what="kitting.done")
            for agent_id in ("cobot", "human"):
                code = await asyncio.to_thread(procs.procs[agent_id].wait, 15)
                assert code == 0, procs.log(agent_id)[-3000:]
    spots, wrong = judge(w.events)
    assert spots == [c.value for c in DEFAULT_PATTERN], spots
    summary = w.done
    assert summary["pattern_correct"] and summary["pattern"] == "##### ##### ##### #####"
    assert summary["wrong_human_actions"] == wrong
    assert summary["plans"] >= 1 and summary["makespan"] > 0
    assert 0.0 <= summary["alpha_f"] <= 1.0 and 0.0 <= summary["alpha_e"] <= 1.0
    # no evidence lost or miscounted: the cobot's belief is the replay of what it saw
    alpha_e, evidence = replay_alpha_e(w.events)
    assert evidence >= summary["wrong_human_actions"]
    assert summary["alpha_e"] == pytest.approx(alpha_e, abs=1e-4)
    assert '"kitting.summary"' in procs.log("cobot")


# -- the study CLI -----------------------------------------------------------------------


def test_study_cli_tiny_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser, handlers = study_cli()
    out = tmp_path / "study"
    args = parser.parse_args(
        ["study", "kitting", "--runs", "1", "--p-follow", "0.9", "--p-error", "0.1",
         "--fixed-alpha-e", "0", "--out", str(out)]
    )  # fmt: skip
    assert asyncio.run(handlers[args.command](args)) == 0
    printed = capsys.readouterr()
    assert "Table III" in printed.out and "Table IV" in printed.out
    assert "signs agree in" in printed.out  # adaptive − non-adaptive against the paper
    assert "2/2 runs ended with the correct pattern" in printed.out
    assert "2/2" in printed.err  # the progress bar
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert [r["planner"] for r in rows] == ["adaptive", "fixed(alpha_e=0)"]
    assert len(list(csv.DictReader((out / "tables.csv").open()))) == 2
    assert (out / "study.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "series" not in rows[0]  # the series have their own file
    series = list(csv.DictReader((out / "series.csv").open()))
    assert {r["planner"] for r in series} == {"adaptive", "fixed(alpha_e=0)"}
    assert series[0]["time"] == "0.0"
    for figure in ("beliefs.png", "assigned.png"):  # Figs. 16 and 17
        assert (out / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = subprocess.run(  # the tables again from the CSV alone
        [sys.executable, str(REPO / "benchmarks" / "kitting_tables.py"), str(out / "runs.csv")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "adaptive" in again.stdout
    assert "Adaptive minus non-adaptive" in again.stdout and "signs agree in" in again.stdout


def test_study_cli_rejects_bad_flags() -> None:
    parser, _ = study_cli()
    for bad in (["--runs", "0"], ["--p-follow", "1.5"], ["--schedule-time-limit", "-1"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["study", "kitting", *bad])


@pytest.mark.integration
def test_teamtree_run_kitting_config(tmp_path: Path) -> None:
    """``teamtree run configs/kitting.toml``: cobot, human and the service, end to end."""
    from teamtree.broker import find_mosquitto

    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    out = subprocess.run(
        teamtree_cmd("run", str(REPO / "configs" / "kitting.toml"), "--broker-kind", "mosquitto",
                     "--set", "p_error=0.1", "--set", "p_follow=0.9"),
        capture_output=True, text=True, timeout=100, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    summary = next(line for line in out.stdout.splitlines() if "kitting.summary" in line)
    assert "pattern_correct=True" in summary and "##### ##### ##### #####" in summary
    assert "mission complete: 2 member(s) done" in out.stdout
