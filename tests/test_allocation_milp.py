"""MILPs of seed 001 (eqs. 1-9): brute force agreement, Gurobi = HiGHS, the no-good loop."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from teamtree.broker import InfeasibleError, SpecificationError
from teamtree.planners.allocation import (
    GUROBI_SIZE_LIMIT,
    AllocationProblem,
    LinearModel,
    Schedule,
    ScheduleProblem,
    ScheduleTask,
    Sense,
    SolveOptions,
    SolverPool,
    brute_force_allocation,
    brute_force_schedule,
    build_allocation_model,
    build_schedule_model,
    check_schedule,
    gurobi_available,
    plan,
    solve_allocation,
    solve_model,
    solve_schedule,
)

SOLVERS = ["gurobi", "highs"] if gurobi_available() else ["highs"]
EXACT = SolveOptions(mip_gap=0.0)


def _random_allocation(seed: int) -> AllocationProblem:
    rng = np.random.default_rng(seed)
    n, na = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    cost = rng.integers(1, 20, size=(n, na)).astype(float)
    cost[rng.random((n, na)) < 0.2] = math.inf
    for i in range(n):
        if not np.isfinite(cost[i]).any():
            cost[i, 0] = 3.0
    tasks = tuple(f"t{i}" for i in range(n))
    agents = tuple(f"a{j}" for j in range(na))
    al = ((agents[-1], frozenset(tasks[:2])),) if rng.random() < 0.5 else ()
    return AllocationProblem(tasks, agents, cost, al)


def _random_schedule(seed: int) -> ScheduleProblem:
    rng = random.Random(seed)
    n = rng.randint(1, 6)
    agents = ["h", "r", "x"][: rng.randint(1, 3)]
    tasks = tuple(
        ScheduleTask(
            f"t{i}",
            rng.choice(agents),
            rng.choice([0.0, 1.5, 2.0, 2.0, 3.0, 5.0]),
            rng.choice([0.0, 0.0, 0.0, 2.0]),
            rng.choice([None, None, None, 9.0, 12.0]),
            lag=rng.choice([0.0, 0.0, 0.0, 1.0, 2.0]),
        )
        for i in range(n)
    )
    prec = tuple(
        (f"t{i}", f"t{j}") for i in range(n) for j in range(i + 1, n) if rng.random() < 0.25
    )
    start_now: tuple[frozenset[str], ...] = ()
    if rng.random() < 0.5:
        group = frozenset(t.id for t in tasks if t.agent == agents[0] and rng.random() < 0.7)
        if group:
            start_now = (group,)
    return ScheduleProblem(tasks, prec, start_now, {agents[-1]: rng.choice([0.0, 0.0, 1.0])})


def _outcome(fn):  # type: ignore[no-untyped-def]
    try:
        return fn()
    except InfeasibleError:
        return "infeasible"


@pytest.mark.parametrize("seed", range(120))
def test_allocation_equals_brute_force_on_both_solvers(seed: int) -> None:
    problem = _random_allocation(seed)
    for _k in range(seed % 3):  # exclude the best allocations found so far (eq. 3)
        best = _outcome(lambda p=problem: brute_force_allocation(p))
        if best == "infeasible":
            break
        problem = problem.with_excluded(best.assignment)
    expected = _outcome(lambda: brute_force_allocation(problem).objective)
    for solver in SOLVERS:
        got = _outcome(
            lambda s=solver: solve_allocation(problem, solver=s, options=EXACT).objective
        )
        if expected == "infeasible" or got == "infeasible":
            assert got == expected, f"seed={seed} solver={solver}"
        else:
            assert got == pytest.approx(expected, abs=1e-6), f"seed={seed} solver={solver}"


@pytest.mark.parametrize("seed", range(400))
def test_schedule_equals_brute_force_on_both_solvers(seed: int) -> None:
    problem = _random_schedule(seed)
    expected = _outcome(lambda: brute_force_schedule(problem).makespan)
    for solver in SOLVERS:
        sched = _outcome(lambda s=solver: solve_schedule(problem, solver=s, options=EXACT))
        if expected == "infeasible" or sched == "infeasible":
            assert sched == expected, f"seed={seed} solver={solver}"
            continue
        assert not check_schedule(problem, sched), f"seed={seed} solver={solver}"
        assert sched.makespan == pytest.approx(expected, abs=1e-5), f"seed={seed} {solver}"


def test_schedule_respects_precedence_one_task_per_agent_and_start_now() -> None:
    tasks = (
        ScheduleTask("a", "r", 3.0),
        ScheduleTask("b", "r", 2.0),
        ScheduleTask("c", "h", 4.0, release=3.0),
        ScheduleTask("d", "h", 1.0),
        ScheduleTask("e", "r", 2.0),
    )
    problem = ScheduleProblem(tasks, (("a", "c"), ("c", "b"), ("d", "e")), (frozenset("abe"),))
    for solver in SOLVERS:
        sched = solve_schedule(problem, solver=solver)
        assert check_schedule(problem, sched) == []
        assert min(sched.start[t] for t in "abe") == 0.0  # eqs. 21-22
        assert sched.start["c"] >= sched.finish["a"]
        assert sched.start["b"] >= sched.finish["c"]
        r = sorted(("a", "b", "e"), key=sched.start.__getitem__)
        for x, y in itertools.pairwise(r):
            assert sched.finish[x] <= sched.start[y] + 1e-9  # eqs. 17-20


def test_an_instant_needs_its_agent_and_a_lag_does_not_occupy_it() -> None:
    # y takes no time but cannot happen while h is busy with x (x must end by 3)
    instant = ScheduleProblem(
        (
            ScheduleTask("x", "h", 3.0, deadline=3.0),
            ScheduleTask("y", "h", 0.0, release=1.0),
            ScheduleTask("z", "r", 4.0),
        ),
        (("y", "z"),),
    )
    # a (the robot's instantaneous assignment) lets b start 2 s later; c keeps the robot
    lagged = ScheduleProblem(
        (
            ScheduleTask("a", "r", 0.0, lag=2.0),
            ScheduleTask("b", "h", 1.0),
            ScheduleTask("c", "r", 3.0),
        ),
        (("a", "b"),),
    )
    for solver in SOLVERS:
        sched = solve_schedule(instant, solver=solver, options=EXACT)
        assert check_schedule(instant, sched) == []
        assert sched.start["y"] == pytest.approx(3.0) and sched.makespan == pytest.approx(7.0)
        sched = solve_schedule(lagged, solver=solver, options=EXACT)
        assert check_schedule(lagged, sched) == []
        assert sched.start["b"] >= sched.start["a"] + 2.0 - 1e-6
        assert sched.makespan == pytest.approx(3.0)
    inside = Schedule({"x": 0.0, "y": 1.0, "z": 1.0}, {"x": 3.0, "y": 1.0, "z": 5.0}, 5.0, {})
    assert any("overlap" in v for v in check_schedule(instant, inside))
    with pytest.raises(SpecificationError):
        ScheduleProblem((ScheduleTask("a", "r", 1.0, lag=-1.0),))


def test_allocation_respects_at_least_one_row() -> None:
    cost = np.array([[1.0, 10.0], [1.0, 10.0], [1.0, 10.0]])
    problem = AllocationProblem(("x", "y", "z"), ("h", "r"), cost, (("r", frozenset({"y"})),))
    for solver in SOLVERS:
        alloc = solve_allocation(problem, solver=solver)
        assert alloc.assignment["y"] == "r"


def test_infeasible_schedule_excludes_allocation_and_resolves() -> None:
    # cheapest allocation gives both tasks to "r", but then one misses its deadline
    cost = np.array([[1.0, 5.0], [1.0, 5.0]])
    problem = AllocationProblem(("p", "q"), ("r", "h"), cost)

    def make(alloc):  # type: ignore[no-untyped-def]
        return ScheduleProblem(
            tuple(ScheduleTask(t, a, 4.0, deadline=5.0) for t, a in alloc.assignment.items())
        )

    for solver in SOLVERS:
        result = plan(problem, make, solver=solver)
        assert sorted(result.allocation.assignment.values()) == ["h", "r"]
        assert result.excluded >= 1
        assert check_schedule(result.schedule_problem, result.schedule) == []


def test_every_allocation_excluded_is_infeasible() -> None:
    problem = AllocationProblem(("p",), ("r",), np.array([[1.0]]))
    problem = problem.with_excluded({"p": "r"})
    with pytest.raises(InfeasibleError):
        solve_allocation(problem, solver=SOLVERS[0])


def test_model_over_the_licence_limit_solves_with_highs() -> None:
    n = GUROBI_SIZE_LIMIT // 2 + 10  # two agents: more than 2,000 binaries
    cost = np.tile([[2.0, 3.0]], (n, 1))
    problem = AllocationProblem(tuple(f"t{i}" for i in range(n)), ("h", "r"), cost)
    model = build_allocation_model(problem)
    assert model.num_vars > GUROBI_SIZE_LIMIT
    pool = SolverPool()
    assert pool.choose(model).name == "highs"
    alloc = solve_allocation(problem, pool=pool, options=SolveOptions(mip_gap=0.01))
    assert alloc.result is not None and alloc.result.solver == "highs"
    assert alloc.max_load <= 0.61 * n * 2.0 + 3.0


@pytest.mark.skipif(not gurobi_available(), reason="gurobipy missing")
def test_small_model_uses_gurobi_and_result_carries_solve_record() -> None:
    m = LinearModel("t")
    x = m.add_binary("x")
    y = m.add_var("y", 0, 3, integer=True)
    m.add_row({x: 1, y: 1}, Sense.LE, 2.5)
    m.set_objective({x: -2, y: -1})
    res = solve_model(m, warm_start={"x": 1, "y": 1})
    assert res.solver == "gurobi" and res.status.value == "optimal"
    assert res.objective == pytest.approx(-3.0) and res.gap == pytest.approx(0.0)
    assert res.solve_time >= 0.0
    h = solve_model(m, solver="highs", warm_start={"x": 1, "y": 1})
    assert h.objective == pytest.approx(res.objective)


def test_bad_specifications_are_rejected() -> None:
    with pytest.raises(SpecificationError):
        ScheduleProblem((ScheduleTask("a", "r", 1.0),), (("a", "b"),))
    cyc = ScheduleProblem(
        (ScheduleTask("a", "r", 1.0), ScheduleTask("b", "r", 1.0)), (("a", "b"), ("b", "a"))
    )
    with pytest.raises(SpecificationError):
        build_schedule_model(cyc)
    with pytest.raises(SpecificationError):
        AllocationProblem(("a",), ("r",), np.ones((2, 1)))


def _mid_episode_schedule() -> ScheduleProblem:
    """A mid-episode kitting schedule (τ_new after 3 spots were placed) that the big-M
    rows alone leave at a 1.5 % gap for over a minute."""
    th = {1: 5.567, 2: 13.515, 3: 13.552, 4: 7.547}
    tr = {1: 11.982, 2: 20.087, 3: 20.044, 4: 9.479}
    human = [1, 2, 3, 4, 6, 7, 8, 9, 14, 19]
    robot = [11, 12, 13, 15, 16, 17, 18]
    tasks = [ScheduleTask("t0", "robot", tr[1], release=2.7835)]
    for i in human:
        tasks.append(ScheduleTask(f"t{i}", "human", th[i // 5 + 1], release=3.0))
        if i != 6:  # t6 is already on the human's tray
            tasks.append(ScheduleTask(f"a{i}", "robot", 2.0))
    tasks += [ScheduleTask(f"t{i}", "robot", tr[i // 5 + 1]) for i in robot]
    ids = {t.id for t in tasks}
    prec = [(f"a{i}", f"t{i}") for i in human if f"a{i}" in ids]
    prec += [
        (f"t{i - 1}", f"t{i}") for i in range(1, 20) if i % 5 and {f"t{i - 1}", f"t{i}"} <= ids
    ]
    now = frozenset(t.id for t in tasks if t.agent == "robot")
    return ScheduleProblem(tuple(tasks), tuple(prec), (now,), {"human": 2.7835, "robot": 0.0})


@pytest.mark.parametrize("solver", SOLVERS)
def test_mid_episode_schedule_is_proved_optimal(solver: str) -> None:
    problem = _mid_episode_schedule()
    model = build_schedule_model(problem)
    assert any(r.name.startswith("load_after[") for r in model.rows)
    # a node limit, not a time limit: the same answer on a busy machine
    options = SolveOptions(time_limit=120.0, mip_gap=0.004, node_limit=5000)
    sched = solve_schedule(problem, solver=solver, options=options)
    assert sched.result is not None and sched.result.status.value == "optimal", solver
    assert check_schedule(problem, sched) == []
    assert sched.makespan == pytest.approx(135.577, abs=0.6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_previous_plan_order_warm_starts_and_tightens_the_horizon(solver: str) -> None:
    """The last plan (other tasks, an older time frame) is re-sequenced into a start that
    beats the list schedule here; its horizon leaves t8 a window of [0, ~1e-15], which
    must not become a ~1e-15 big-M (HiGHS refused such a model)."""
    th, tr = 13.515, 20.087
    problem = ScheduleProblem(
        (
            ScheduleTask("t8", "robot", tr),
            ScheduleTask("t9", "human", th, release=3.0),
            ScheduleTask("a9", "robot", 0.0, lag=2.0),
        ),
        (("a9", "t9"), ("t8", "t9")),
        (frozenset({"t8", "a9"}),),
    )
    previous = Schedule(
        {"t4": 3.3635, "t7": 0.0, "t8": 20.087, "a8": 0.0, "t9": 33.602, "a9": 0.0},
        {},
        47.117,
        {},
    )
    sched = solve_schedule(problem, solver=solver, options=EXACT, warm_start=previous)
    assert check_schedule(problem, sched) == []
    assert sched.makespan == pytest.approx(tr + th)
    assert sched.start["a9"] == pytest.approx(0.0) and sched.start["t8"] == pytest.approx(0.0)
