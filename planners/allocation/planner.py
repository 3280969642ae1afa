"""Two-step planning with feedback, seed 001 §III.C and Algorithm 1 lines 8-11.

Allocate (eqs. 1-4), build τ_new for the allocation, schedule it (eqs. 5-9); when the
schedule is infeasible, exclude that allocation (eq. 3, a no-good cut) and allocate again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from teamtree.broker import InfeasibleError, SolverLimitError
from teamtree.planners.allocation.allocation import Allocation, AllocationProblem, solve_allocation
from teamtree.planners.allocation.scheduling import Schedule, ScheduleProblem, solve_schedule
from teamtree.planners.allocation.solvers import SolveOptions, SolverName, SolverPool


@dataclass(frozen=True)
class Plan:
    """An allocation, the schedule problem built from it, its schedule, and the exclusions."""

    allocation: Allocation
    schedule_problem: ScheduleProblem
    schedule: Schedule
    excluded: int

    @property
    def solve_time(self) -> float:
        """Solver time of the final allocation and schedule solves, in seconds."""
        t = 0.0
        for r in (self.allocation.result, self.schedule.result):
            if r is not None:
                t += r.solve_time
        return t


def plan(
    problem: AllocationProblem,
    make_schedule: Callable[[Allocation], ScheduleProblem],
    *,
    solver: SolverName = "auto",
    allocation_options: SolveOptions | None = None,
    schedule_options: SolveOptions | None = None,
    warm_allocation: Allocation | None = None,
    warm_schedule: Schedule | None = None,
    max_rounds: int = 50,
    pool: SolverPool | None = None,
) -> Plan:
    """Allocate and schedule, excluding allocations whose schedule fails. Blocks for the solves.

    Choice: a schedule that hits a solver limit without a solution counts as "not found"
    and excludes its allocation too, as Algorithm 1 line 8 loops until a schedule is found.
    Raises ``InfeasibleError`` when no allocation is left (or ``max_rounds`` is spent).
    """
    current = problem
    for rounds in range(max_rounds):
        alloc = solve_allocation(
            current,
            solver=solver,
            options=allocation_options,
            warm_start=warm_allocation,
            pool=pool,
        )
        sp = make_schedule(alloc)
        try:
            sched = solve_schedule(
                sp, solver=solver, options=schedule_options, warm_start=warm_schedule, pool=pool
            )
        except (InfeasibleError, SolverLimitError):
            current = current.with_excluded(alloc.assignment)
            warm_allocation = None
            continue
        return Plan(alloc, sp, sched, rounds)
    raise InfeasibleError(f"no schedulable allocation within {max_rounds} rounds")
