"""Re-planning fast without changing the answers: a Gurobi model kept between solves and
changed into the next gives the objective a fresh build gives; the list schedule is the
one the plain serial rules give; a schedule returned on its lower bound is optimal."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from teamtree.broker import InfeasibleError
from teamtree.planners.allocation import (
    Allocation,
    AllocationProblem,
    HumanAction,
    InProgress,
    KittingScenario,
    LinearModel,
    ScheduleProblem,
    ScheduleTask,
    SolveOptions,
    SolverPool,
    SubtaskState,
    build_allocation_model,
    build_schedule_model,
    check_schedule,
    gurobi_available,
    kitting_allocation_problem,
    kitting_schedule_problem,
    list_schedule,
    solve_allocation,
    solve_model,
    solve_schedule,
)
from teamtree.planners.allocation.scheduling import EPS, WEIGHT_NOISE, _analyse
from teamtree.planners.allocation.solvers import GurobiBackend
from tests.test_allocation_milp import _random_allocation, _random_schedule

EXACT = SolveOptions(time_limit=60.0, mip_gap=0.0)
needs_gurobi = pytest.mark.skipif(not gurobi_available(), reason="gurobipy missing")


def _kitting_states(rng: np.random.Generator, n: int) -> list[SubtaskState]:
    """A random table of subtask states with at least one subtask left."""
    choices = [SubtaskState.INITIAL, SubtaskState.PLACED_CORRECTLY, SubtaskState.MISPLACED,
               SubtaskState.ASSIGNED_TO_HUMAN, SubtaskState.ASSIGNED_TO_ROBOT_CORRECTLY]  # fmt: skip
    states = [choices[int(k)] for k in rng.choice(5, size=n, p=[0.45, 0.3, 0.1, 0.1, 0.05])]
    if all(s is SubtaskState.PLACED_CORRECTLY for s in states):
        states[int(rng.integers(n))] = SubtaskState.INITIAL
    return states


def _kitting_models(seed: int) -> list[LinearModel]:
    """The allocation and schedule models of one random mid-episode kitting request."""
    rng = np.random.default_rng(seed)
    scenario = KittingScenario.default()
    states = _kitting_states(rng, scenario.n)
    in_progress = None
    free = [i for i, s in enumerate(states) if s is SubtaskState.INITIAL]
    if free and rng.random() < 0.5:
        task = int(rng.choice(free))
        remaining = float(rng.uniform(0, scenario.subtasks[task].t_human))
        in_progress = InProgress(task, HumanAction.H1, remaining)
    p_follow, p_error = float(rng.uniform(0.2, 1.0)), float(rng.uniform(0.0, 0.6))
    problem = kitting_allocation_problem(scenario, states, p_follow, p_error, in_progress)
    alloc = build_allocation_model(problem)
    # a random allocation of the same tasks: another schedule model than the optimum's
    assignment = {t: str(rng.choice(problem.agents)) for t in problem.tasks}
    sp = kitting_schedule_problem(scenario, states, Allocation(assignment, {}, 0.0), in_progress)
    try:
        return [alloc, build_schedule_model(sp)]
    except InfeasibleError:
        return [alloc]


def _random_models(seed: int) -> list[LinearModel]:
    """A mix: kitting models (names recur between requests, as in an episode) and small
    general ones (other names, sizes and coefficients under the same model names)."""
    kind = seed % 3
    if kind == 0:
        return _kitting_models(seed)
    try:
        if kind == 1:
            return [build_allocation_model(_random_allocation(seed))]
        return [build_schedule_model(_random_schedule(seed))]
    except InfeasibleError:  # ruled out while building: nothing to solve
        return []


def _objective(backend: GurobiBackend, model: LinearModel) -> float | str:
    try:
        return backend.solve(model, EXACT).objective
    except InfeasibleError:
        return "infeasible"


@needs_gurobi
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=12))
def test_a_kept_gurobi_model_gives_the_objective_of_a_fresh_build(seeds: list[int]) -> None:
    """One kept backend solves a sequence of models; each objective equals a fresh build's."""
    note(f"seeds={seeds}")
    kept, fresh = GurobiBackend(reuse=True), GurobiBackend(reuse=False)
    for seed in seeds:
        for model in _random_models(seed):
            want = _objective(fresh, model)
            got = _objective(kept, model)
            if isinstance(want, str) or isinstance(got, str):
                assert got == want, f"seeds={seeds} seed={seed} model={model.name}"
                continue
            assert got == pytest.approx(want, rel=1e-9, abs=1e-6), (
                f"seeds={seeds} seed={seed} model={model.name}"
            )


@needs_gurobi
def test_a_kept_model_is_rebuilt_when_the_old_columns_outnumber_the_new() -> None:
    backend = GurobiBackend(reuse=True)
    tasks = tuple(f"b{i}" for i in range(60))
    cost = np.arange(180, dtype=float).reshape(60, 3) % 7 + 1
    big = build_allocation_model(AllocationProblem(tasks, ("a0", "a1", "a2"), cost))
    backend.solve(big, EXACT)
    first = backend._kept["allocation"]
    assert len(first.vars) == big.num_vars
    small = build_allocation_model(_random_allocation(5))
    got = backend.solve(small, EXACT).objective
    assert got == pytest.approx(GurobiBackend().solve(small, EXACT).objective, abs=1e-6)
    kept = backend._kept["allocation"]
    assert kept is not first and len(kept.vars) == small.num_vars


def test_the_service_pool_takes_reuse_models() -> None:
    assert SolverPool(reuse_models=True).reuse_models
    assert not SolverPool().reuse_models


def _reference_list_schedule(problem: ScheduleProblem, tries: int = 24) -> dict[str, float] | None:
    """The serial rules written plainly (every earliest start recomputed by trying each
    candidate time against every placed task of the agent, every rule run): the oracle
    for the list schedule."""
    an = _analyse(problem)
    tasks = problem.tasks
    n = len(tasks)
    rng = random.Random(n)
    best, best_mk = None, math.inf
    for k in range(2 + tries):
        mode, noise = k % 2, (0.0 if k < 2 else WEIGHT_NOISE)
        weight = [t * (1.0 + noise * (rng.random() - 0.5)) for t in an.tail]
        start: dict[int, float] = {}
        failed = False

        def overlaps(i: int, v: float, start: dict[int, float] = start) -> bool:
            d = tasks[i].duration
            return any(
                tasks[j].agent == tasks[i].agent
                and v < s + tasks[j].duration - EPS
                and s < v + d - EPS
                for j, s in start.items()
            )

        def earliest(i: int, start: dict[int, float] = start) -> float:
            e = max(tasks[i].release, problem.agent_release.get(tasks[i].agent, 0.0))
            for p in an.pred[i]:
                e = max(e, start[p] + tasks[p].duration + tasks[p].lag)
            # the earliest start is e or the end of a placed task of the agent
            ends = sorted(
                start[j] + tasks[j].duration
                for j in start
                if tasks[j].agent == tasks[i].agent and start[j] + tasks[j].duration > e
            )
            return next(v for v in [e, *ends] if not overlaps(i, v))

        for group in problem.start_now:
            members = [i for i in range(n) if tasks[i].id in group]
            if any(start.get(i) == 0.0 for i in members):
                continue
            cand = [
                i
                for i in members
                if i not in start and an.head[i] <= EPS and not an.pred[i] and not overlaps(i, 0.0)
            ]
            if not cand:
                failed = True
                break
            i = max(cand, key=lambda i, w=weight: (w[i], -i))
            start[i] = 0.0
        if failed:
            continue

        ready = {i for i in range(n) if i not in start and an.pred[i] <= set(start)}
        while ready:
            if mode == 0:
                i = min(ready, key=lambda i, w=weight: (round(earliest(i), 6), -w[i], i))
            else:
                i = max(ready, key=lambda i, w=weight: (w[i], -i))
            ready.remove(i)
            start[i] = earliest(i)
            for j in an.succ[i]:
                if j not in start and all(p in start for p in an.pred[j]):
                    ready.add(j)
        if any(
            t.deadline is not None and start[i] + t.duration > t.deadline + EPS
            for i, t in enumerate(tasks)
        ):
            continue
        mk = max((start[i] + tasks[i].duration for i in start), default=0.0)
        if mk < best_mk - EPS:
            best, best_mk = start, mk
    return None if best is None else {tasks[i].id: v for i, v in best.items()}


def _kitting_schedule(seed: int) -> ScheduleProblem:
    rng = np.random.default_rng(seed)
    scenario = KittingScenario.default()
    states = _kitting_states(rng, scenario.n)
    problem = kitting_allocation_problem(scenario, states, 0.7, 0.2)
    assignment = {t: str(rng.choice(problem.agents)) for t in problem.tasks}
    return kitting_schedule_problem(scenario, states, Allocation(assignment, {}, 0.0))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6))
def test_the_list_schedule_is_the_plain_serial_rules_answer(seed: int) -> None:
    problem = _kitting_schedule(seed) if seed % 2 else _random_schedule(seed)
    got = list_schedule(problem)
    want = _reference_list_schedule(problem)
    if want is None:
        assert got is None, f"seed={seed}"
        return
    assert got is not None, f"seed={seed}"
    assert list(got.start.items()) == list(want.items()), f"seed={seed}"


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6))
def test_the_list_schedule_is_feasible(seed: int) -> None:
    problem = _kitting_schedule(seed) if seed % 2 else _random_schedule(seed)
    got = list_schedule(problem)
    assert got is None or check_schedule(problem, got) == [], f"seed={seed}"


def test_a_zero_duration_assignment_starts_before_the_robots_long_task() -> None:
    """The robot must start something now (a 20 s correction); handing the human a block
    takes it no time, so it goes at 0 too and the human starts 2 s later, not after
    the correction."""
    problem = ScheduleProblem(
        (
            ScheduleTask("e5", "robot", 20.0),
            ScheduleTask("a4", "robot", 0.0, lag=2.0),
            ScheduleTask("t4", "human", 6.0),
            ScheduleTask("t5", "robot", 20.0),
        ),
        (("a4", "t4"), ("e5", "t5")),
        (frozenset({"e5", "a4"}),),
    )
    got = list_schedule(problem)
    assert got is not None and check_schedule(problem, got) == []
    assert got.start["a4"] == 0.0 and got.start["t4"] == 2.0
    assert got.makespan == 40.0


def test_a_short_feeder_of_the_busy_human_goes_first_and_no_solver_runs() -> None:
    """The human, free from 13 s, is the busiest agent. The robot feeds its two chains:
    a short task before 22 s of the human's work and a long one before 40.5 s. Both
    plain rules start the long one (its tail is twice as long) and the human idles
    until 20 s; a random rule must reach the other order, the makespan's bound, so no
    solver is needed."""
    tasks = [ScheduleTask("short", "robot", 12.0), ScheduleTask("long", "robot", 20.0)]
    precedence = []
    for k in range(4):
        tasks.append(ScheduleTask(f"h{k}", "human", 5.5))
        precedence.append(("short" if k == 0 else f"h{k - 1}", f"h{k}"))
    for k in range(3):
        tasks.append(ScheduleTask(f"g{k}", "human", 13.5))
        precedence.append(("long" if k == 0 else f"g{k - 1}", f"g{k}"))
    problem = ScheduleProblem(tuple(tasks), tuple(precedence), agent_release={"human": 13.0})
    got = solve_schedule(problem, solver="highs")
    assert got.result is not None and got.result.solver == "bound"
    assert got.start["short"] == 0.0 and got.start["h0"] == 13.0
    assert got.makespan == pytest.approx(13.0 + 4 * 5.5 + 3 * 13.5)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["highs", "gurobi"]))
def test_a_schedule_on_its_bound_is_the_milps_optimum(seed: int, solver: str) -> None:
    """Whether or not a solver ran, the makespan is the MILP's optimum."""
    if solver == "gurobi" and not gurobi_available():
        return
    problem = _kitting_schedule(seed) if seed % 2 else _random_schedule(seed)
    try:
        milp = solve_model(build_schedule_model(problem), solver=solver, options=EXACT)
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            solve_schedule(problem, solver=solver, options=EXACT)
        return
    sched = solve_schedule(problem, solver=solver, options=EXACT)
    assert check_schedule(problem, sched) == [], f"seed={seed}"
    assert sched.makespan == pytest.approx(milp.objective, abs=1e-5), f"seed={seed}"
    assert sched.result is not None and sched.result.solver in ("bound", solver), f"seed={seed}"
    assert sched.result.status.value == "optimal", f"seed={seed}"


def test_some_kitting_schedules_need_no_solver() -> None:
    bound = sum(
        solve_schedule(_kitting_schedule(seed), options=EXACT).result.solver == "bound"
        for seed in range(40)
    )
    assert 0 < bound < 40


def test_a_kitting_request_through_a_reusing_pool_matches_a_fresh_one() -> None:
    scenario = KittingScenario.default()
    states = [SubtaskState.INITIAL] * scenario.n
    fresh, reusing = SolverPool(), SolverPool(reuse_models=True)
    for k in range(scenario.n - 1):  # one subtask placed between re-plans
        states[k] = SubtaskState.PLACED_CORRECTLY
        problem = kitting_allocation_problem(scenario, states, 0.6, 0.1)
        a = solve_allocation(problem, options=EXACT, pool=fresh)
        b = solve_allocation(problem, options=EXACT, pool=reusing)
        assert b.objective == pytest.approx(a.objective, abs=1e-6), k
