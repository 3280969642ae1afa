"""Answer one allocation request body: decode it, run the MILPs within the deadline's
budget, encode the answer (the service's work, without its request/reply bookkeeping)."""

from __future__ import annotations

import time
from typing import Any

from teamtree.agents.allocation.wire import (
    ALLOCATE,
    SCHEDULE,
    SOLVE,
    GeneralForm,
    KittingForm,
    ScheduleForm,
    allocation_body,
    decode,
    decode_request,
    general_problem,
    kitting_problem,
    limits_of,
    problem_form,
    schedule_body,
    schedule_problem,
    warm_of,
)
from teamtree.broker import InfeasibleError, SolverLimitError
from teamtree.planners.allocation import (
    SolveOptions,
    SolverPool,
    SolveStatus,
    solve_allocation,
    solve_schedule,
)

MIN_BUDGET_S = 0.02  # below this, a solve is not attempted ("deadline" error)
SOLVE_SHARE = 0.85  # of the time left, what a solver's time limit may take


def _bounded(options: SolveOptions, budget: float) -> SolveOptions:
    """`options` with the time limit cut to the solver's share of `budget` (the rest is
    for building the model before and encoding the answer after)."""
    budget *= SOLVE_SHARE
    limit = budget if options.time_limit is None else min(options.time_limit, budget)
    return SolveOptions(time_limit=max(MIN_BUDGET_S, limit), mip_gap=options.mip_gap, threads=1)


def solve_request(
    kind: str, body: Any, budget_s: float, pool: SolverPool | None = None
) -> dict[str, Any]:
    """Answer one request body (without ``request_id`` bookkeeping). Blocks for the solves,
    which together stay within `budget_s` seconds of wall time as far as the solvers honour
    their limits. Raises BadRequest, PlanningError (InfeasibleError, SolverLimitError,
    NoCapableAgentError), or TimeoutError when the budget runs out between rounds."""
    started = time.monotonic()

    def left() -> float:
        remaining = budget_s - (time.monotonic() - started)
        if remaining < MIN_BUDGET_S:
            raise TimeoutError(f"the deadline left no time to solve ({remaining:.3f} s)")
        return remaining

    request = decode_request(body)
    limits = limits_of(request.options)
    problem_data = request.problem
    warm_alloc, warm_sched = warm_of(request.warm_start)
    solver: Any = limits.solver
    if kind == SCHEDULE:
        sp = schedule_problem(decode(problem_data, ScheduleForm, "problem"))
        sched = solve_schedule(
            sp,
            solver=solver,
            options=_bounded(limits.schedule, left()),
            warm_start=warm_sched,
            pool=pool,
        )
        out = schedule_body(sched)
        out["warm_start"] = {"schedule": {"start": out["start"], "makespan": out["makespan"]}}
        return out
    if problem_form(problem_data) == "kitting":
        problem, build = kitting_problem(decode(problem_data, KittingForm, "problem"))
    else:
        form = decode(problem_data, GeneralForm, "problem")
        problem, build = general_problem(form, need_schedule=kind == SOLVE)
    if kind == ALLOCATE:
        al = solve_allocation(
            problem,
            solver=solver,
            options=_bounded(limits.allocation, left()),
            warm_start=warm_alloc,
            pool=pool,
        )
        out = allocation_body(al)
        out["warm_start"] = {"allocation": out["assignment"]}
        return out
    assert build is not None
    # Allocate, schedule, exclude unschedulable allocations (eq. 3) — planner.plan's loop,
    # here with the deadline's budget split between the two solves of every round.
    current = problem
    solve_time = 0.0
    for rounds in range(limits.max_rounds):
        al = solve_allocation(
            current,
            solver=solver,
            options=_bounded(limits.allocation, left() / 2),
            warm_start=warm_alloc,
            pool=pool,
        )
        solve_time += al.result.solve_time if al.result else 0.0
        sp = build(al)
        try:
            sched = solve_schedule(
                sp,
                solver=solver,
                options=_bounded(limits.schedule, left()),
                warm_start=warm_sched,
                pool=pool,
            )
        except (InfeasibleError, SolverLimitError):
            current = current.with_excluded(al.assignment)
            warm_alloc = None
            continue
        solve_time += sched.result.solve_time if sched.result else 0.0
        a_body, s_body = allocation_body(al), schedule_body(sched)
        statuses = {a_body["status"], s_body["status"]}
        solvers = dict.fromkeys([a_body["solver"], s_body["solver"]])
        return {
            "solver": "+".join(solvers),
            "status": SolveStatus.OPTIMAL.value if statuses == {"optimal"} else "feasible",
            "objective": s_body["objective"],
            "gap": max(a_body["gap"], s_body["gap"]),
            "solve_time": solve_time,
            "excluded": rounds,
            "allocation": a_body,
            "schedule": s_body,
            "warm_start": {
                "allocation": a_body["assignment"],
                "schedule": {"start": s_body["start"], "makespan": s_body["makespan"]},
            },
        }
    raise InfeasibleError(f"no schedulable allocation within {limits.max_rounds} rounds")
