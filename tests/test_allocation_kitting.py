"""The kitting scenario of seed 001: data, state graph, scenario-form MILPs, an episode."""

from __future__ import annotations

import itertools
import random

import pytest

from teamtree.broker import SpecificationError
from teamtree.planners.allocation import (
    HUMAN,
    ROBOT,
    BeliefPoint,
    CobotConfig,
    HumanAction,
    InProgress,
    KittingScenario,
    RobotAction,
    RunRecord,
    SimulatedHuman,
    SolveOptions,
    SubtaskState,
    check_schedule,
    format_table,
    gurobi_available,
    kitting_allocation_problem,
    kitting_schedule_problem,
    next_state,
    plan,
    preds_done,
    run_study,
    series_rows,
    simulate_episode,
    study_tables,
)

S = SubtaskState
SOLVERS = ["gurobi", "highs"] if gurobi_available() else ["highs"]
# Node limits, not wall-clock limits, so a seeded episode replays exactly on a busy
# machine; the time limits are only a safety net.
FAST = CobotConfig(
    allocation_options=SolveOptions(time_limit=30.0, node_limit=200),
    schedule_options=SolveOptions(time_limit=30.0, mip_gap=0.05, node_limit=100),
)

# The paper's gap with node limits: plans as good as the study's, and deterministic.
PAPER = CobotConfig(
    allocation_options=SolveOptions(time_limit=30.0, node_limit=2000),
    schedule_options=SolveOptions(time_limit=30.0, mip_gap=0.004, node_limit=2000),
)


def test_scenario_data() -> None:
    sc = KittingScenario.default()
    assert sc.n == 20
    assert [s.workspace for s in sc.subtasks[:6]] == [1, 1, 1, 1, 1, 2]
    assert [s.spot for s in sc.subtasks[:6]] == [1, 2, 3, 4, 5, 1]
    assert sc.subtasks[7].t_human == pytest.approx(13.515)
    assert sc.subtasks[19].t_robot == pytest.approx(9.479)
    assert sc.c_h == pytest.approx(1.5 * (13.552 + 20.087))
    assert sc.c_e == pytest.approx(2 * sc.c_h)
    assert len(sc.precedence) == 16 and (0, 1) in sc.precedence and (4, 5) not in sc.precedence
    colours = [s.colour for s in sc.subtasks]
    assert all(colours.count(c) == 5 for c in set(colours))


def test_state_graph_of_fig6() -> None:
    assert next_state(S.INITIAL, HumanAction.H1, True) is S.PLACED_CORRECTLY
    assert next_state(S.INITIAL, HumanAction.H1, False) is S.MISPLACED
    assert next_state(S.INITIAL, HumanAction.H2, False) is S.ASSIGNED_TO_ROBOT_INCORRECTLY
    assert next_state(S.INITIAL, RobotAction.R2) is S.ASSIGNED_TO_HUMAN
    assert next_state(S.ASSIGNED_TO_HUMAN, HumanAction.H4) is S.PLACED_CORRECTLY
    assert next_state(S.ASSIGNED_TO_ROBOT_CORRECTLY, RobotAction.R4) is S.PLACED_CORRECTLY
    assert next_state(S.MISPLACED, RobotAction.R3) is S.INITIAL
    with pytest.raises(SpecificationError):
        next_state(S.MISPLACED, RobotAction.R1)


def _random_states(rng: random.Random, sc: KittingScenario) -> list[SubtaskState]:
    states = []
    for i in range(sc.n):
        if sc.predecessor(i) is None or states[-1] is S.PLACED_CORRECTLY:
            states.append(
                rng.choice(
                    [
                        S.PLACED_CORRECTLY,
                        S.PLACED_CORRECTLY,
                        S.INITIAL,
                        S.ASSIGNED_TO_HUMAN,
                        S.ASSIGNED_TO_ROBOT_CORRECTLY,
                        S.MISPLACED,
                        S.ASSIGNED_TO_ROBOT_INCORRECTLY,
                    ]
                )
            )
        else:
            states.append(rng.choice([S.INITIAL, S.INITIAL, S.ASSIGNED_TO_HUMAN]))
    if all(s is S.PLACED_CORRECTLY for s in states):
        states[-1] = S.INITIAL
    return states


@pytest.mark.parametrize("seed", range(12))
def test_allocation_leaves_robot_a_startable_task_and_schedule_is_valid(seed: int) -> None:
    rng = random.Random(seed)
    sc = KittingScenario.default()
    states = _random_states(rng, sc)
    pf, pe = rng.random(), rng.random()
    ap = kitting_allocation_problem(sc, states, pf, pe)
    for solver in SOLVERS:
        p = plan(
            ap,
            lambda al: kitting_schedule_problem(sc, states, al),
            solver=solver,
            schedule_options=FAST.schedule_options,
        )
        robot_tasks = [int(t[1:]) for t in p.allocation.tasks_of(ROBOT)]
        corrections = [i for i in range(sc.n) if states[i] in (S.MISPLACED,
                       S.ASSIGNED_TO_ROBOT_INCORRECTLY)]  # fmt: skip
        startable = [
            i for i in robot_tasks
            if preds_done(sc, states, i)
            and states[i] in (S.INITIAL, S.ASSIGNED_TO_ROBOT_CORRECTLY, S.ASSIGNED_TO_HUMAN)
        ]  # fmt: skip
        assert corrections or startable, f"seed={seed} solver={solver}: eq. 14 violated"
        sp, sched = p.schedule_problem, p.schedule
        assert check_schedule(sp, sched) == [], f"seed={seed} solver={solver}"
        robot_ids = [t.id for t in sp.tasks if t.agent == ROBOT]
        if robot_ids:  # eqs. 21-22: the robot starts something now
            assert min(sched.start[t] for t in robot_ids) == pytest.approx(0.0, abs=1e-6)
        for t in sp.tasks:
            if t.agent == HUMAN:
                assert sched.start[t.id] >= sc.human_min_start - 1e-6


def test_initial_kitting_plan_agrees_between_solvers() -> None:
    sc = KittingScenario.default()
    states = [S.INITIAL] * sc.n
    makespans = []
    for solver in SOLVERS:
        ap = kitting_allocation_problem(sc, states, 0.8, 0.1)
        p = plan(ap, lambda al: kitting_schedule_problem(sc, states, al), solver=solver)
        makespans.append(p.schedule.makespan)
    assert max(makespans) - min(makespans) < 1e-3


def test_human_in_progress_delays_successors() -> None:
    sc = KittingScenario.default()
    states = [S.INITIAL] * sc.n
    ip = InProgress(0, HumanAction.H1, 4.0)
    ap = kitting_allocation_problem(sc, states, 0.8, 0.1, ip)
    assert "t0" not in ap.tasks
    p = plan(
        ap,
        lambda al: kitting_schedule_problem(sc, states, al, ip),
        solver=SOLVERS[0],
        schedule_options=FAST.schedule_options,
    )
    assert p.schedule.start["t1"] >= 4.0 - 1e-6


def _episode_config(adaptive: bool) -> CobotConfig:
    """FAST, or a non-adaptive planner (α_e fixed at 0.35) with FAST's schedule options."""
    if adaptive:
        return FAST
    return CobotConfig(adaptive=False, fixed_p_error=0.35, schedule_options=FAST.schedule_options)


@pytest.mark.parametrize("adaptive", [True, False])
def test_short_seeded_episode_completes_with_correct_pattern(adaptive: bool) -> None:
    sc, cfg = KittingScenario.default(), _episode_config(adaptive)
    res = simulate_episode(sc, SimulatedHuman(0.5, 0.4), cfg, seed=7)
    assert res.pattern_correct
    assert all(s is S.PLACED_CORRECTLY for s in res.final_states)
    assert res.makespan > 0 and res.plans > 0
    again = simulate_episode(sc, SimulatedHuman(0.5, 0.4), cfg, seed=7)
    assert again.trace == res.trace  # seeded: the same run twice
    wrong_in_trace = sum(1 for e in res.trace if e.agent == HUMAN and not e.correct)
    assert wrong_in_trace == res.wrong_human_actions
    assert res.robot_to_human == sum(1 for e in res.trace if e.action == "R2")
    assert res.human_to_robot == sum(1 for e in res.trace if e.action == "H2")


@pytest.mark.parametrize("adaptive", [True, False])
def test_an_episode_s_series_follows_its_beliefs_and_assignments(adaptive: bool) -> None:
    sc, cfg = KittingScenario.default(), _episode_config(adaptive)
    res = simulate_episode(sc, SimulatedHuman(0.3, 0.8), cfg, seed=5)
    series = res.series
    assert series[0].time == 0.0
    assert [p.time for p in series] == sorted(p.time for p in series)
    assert [p.robot_to_human for p in series] == sorted(p.robot_to_human for p in series)
    last = series[-1]
    assert (last.alpha_f, last.alpha_e, last.robot_to_human) == pytest.approx(
        (res.alpha_f, res.alpha_e, res.robot_to_human)
    )
    assigned = [e.time for e in res.trace if e.action == "R2"]  # C_r^h steps when R2 starts
    for k, t in enumerate(assigned, 1):
        assert max(p.robot_to_human for p in series if p.time <= t) >= k
    if adaptive:  # the beliefs moved, and each move is a point
        assert len({(p.alpha_f, p.alpha_e) for p in series}) > 2
    else:
        assert {(p.alpha_f, p.alpha_e) for p in series} == {(1.0, 0.35)}


def _record(pf: float, makespan: float, *points: BeliefPoint) -> RunRecord:
    return RunRecord(pf, 0.1, "adaptive", 0, 0, 0, 0, makespan, 0, 0, True, 0, points)


def test_series_rows_average_step_functions_on_a_time_grid() -> None:
    a = _record(0.9, 20.0, BeliefPoint(0, 0.8, 0.1, 0), BeliefPoint(12, 0.6, 0.3, 2))
    b = _record(0.9, 35.0, BeliefPoint(0, 0.8, 0.1, 1), BeliefPoint(5, 1.0, 0.1, 3))
    rows = series_rows([a, b], step_s=10.0)
    assert [r.time for r in rows] == [0.0, 10.0, 20.0, 30.0]  # to the longer run's end
    means = [(r.alpha_f, r.alpha_e, r.robot_to_human) for r in rows]
    assert means[0] == pytest.approx((0.8, 0.1, 0.5))
    assert means[1] == pytest.approx((0.9, 0.1, 1.5))  # a still at its start, b moved at 5
    assert means[2] == pytest.approx((0.8, 0.2, 2.5))  # a moved at 12
    assert means[3] == means[2]  # a ended at 20 s and holds its last value
    with pytest.raises(ValueError, match="step_s"):
        series_rows([a], step_s=0)


def test_small_study_grid_returns_rows() -> None:
    records = run_study(p_follow=(0.9, 0.3), p_error=(0.1, 0.8), runs=1, cobot=FAST,
                        fixed_alpha_e=(0.0,))  # fmt: skip
    assert len(records) == 2 * 2 * 2
    assert all(r.pattern_correct for r in records)
    rows = study_tables(records)
    assert len(rows) == 8
    text = format_table(rows, "wrong_human_actions")
    assert "adaptive Pe=0.1" in text and text.count("\n") == 2
    # adaptive beliefs moved from their priors; fixed ones did not
    fixed = [r for r in records if r.planner != "adaptive"]
    assert all(r.alpha_f == 1.0 and r.alpha_e == 0.0 for r in fixed)
    leaders = [r for r in records if r.planner == "adaptive" and r.p_follow == 0.3]
    followers = [r for r in records if r.planner == "adaptive" and r.p_follow == 0.9]
    assert min(r.alpha_f for r in followers) > max(r.alpha_f for r in leaders) - 0.5


def test_assignment_takes_the_robot_no_time_and_the_human_waits_the_lag() -> None:
    """§IV.B: allocating to the human takes zero seconds; the authors' scheduler lets the
    human start an assigned subtask 2 s after the assignment."""
    sc = KittingScenario.default()
    states = [S.INITIAL] * sc.n
    ap = kitting_allocation_problem(sc, states, 1.0, 0.5)  # a follower: the robot assigns
    p = plan(ap, lambda al: kitting_schedule_problem(sc, states, al), solver=SOLVERS[0],
             schedule_options=FAST.schedule_options)  # fmt: skip
    sp, sched = p.schedule_problem, p.schedule
    assigns = [t for t in sp.tasks if t.id.startswith("a")]
    assert assigns, "a follower gets subtasks assigned"
    for a in assigns:
        assert a.agent == ROBOT and a.duration == 0.0 and a.lag == pytest.approx(sc.assign_time)
        assert sched.start[f"t{a.id[1:]}"] >= sched.start[a.id] + sc.assign_time - 1e-6
    assert check_schedule(sp, sched) == []


def test_simulated_human_starts_after_walking_and_r2_is_instant() -> None:
    sc = KittingScenario.default()
    res = simulate_episode(sc, SimulatedHuman(0.9, 0.4), FAST, seed=11)
    first_human = min(e.time for e in res.trace if e.agent == HUMAN)
    assert first_human >= sc.human_min_start
    robot = [e for e in res.trace if e.agent == ROBOT]
    # the robot's next action starts the moment an assignment does: R2 takes no time
    assert any(e.action == "R2" and nxt.time == e.time for e, nxt in itertools.pairwise(robot))
    assert any(e.action == "R2" and e.time < sc.human_min_start for e in robot)


def test_a_following_human_errs_far_less_than_a_leading_one() -> None:
    """Table III's shape: only leading actions can be wrong, so at P_error = 0.8 a human
    with P_follow = 0.9 makes few wrong actions (the paper: 1.33-1.67 per run) and one with
    P_follow = 0.3 many (9.2-10.9). Seeded episodes with node-limited solves replay
    exactly."""
    sc = KittingScenario.default()
    wrong = {}
    for pf in (0.9, 0.3):
        runs = [simulate_episode(sc, SimulatedHuman(pf, 0.8), PAPER, seed=s) for s in range(8)]
        wrong[pf] = [r.wrong_human_actions for r in runs]
        for r in runs:  # every wrong action is a leading one (H1 or H2)
            assert all(e.action in ("H1", "H2") for e in r.trace if not e.correct)
    mean = {pf: sum(w) / len(w) for pf, w in wrong.items()}
    assert mean[0.9] <= 3.0, wrong
    assert mean[0.3] >= 2 * mean[0.9], wrong
    assert mean[0.3] <= 12.0, wrong
