"""Task allocation MILP in its general form, seed 001 eqs. (1)-(4), for any number of agents.

    min  z + ε·Σ_{i,a} X_ia C_ia
    s.t. z ≥ Σ_i X_ia C_ia            ∀a            (1, epigraph of the min-max)
         Σ_a X_ia = 1                  ∀i            (2)
         Σ_i X_{i,a_i} ≤ n − 1         ∀ excluded    (3, a no-good cut per allocation in F)
         Σ_{i∈U} X_ia ≥ 1              ∀ (a, U)      (4, e.g. eq. 14: the robot gets a task
                                                      it can start)

Choice: the paper's min-max objective has many optima; a small tie-break ε (default 1e-3)
on the total cost picks, among them, the one cheapest overall. ``objective`` reports the
whole minimised value; ``max_load`` the min-max part alone. The costs ``C_ia`` are
expectations over the beliefs; since eq. (10) is linear in α_f and α_e, ``E[C] = C(E[α])``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from teamtree.broker import InfeasibleError, NoCapableAgentError, SpecificationError
from teamtree.planners.allocation.model import LinearModel, Sense, SolveResult
from teamtree.planners.allocation.solvers import SolveOptions, SolverName, SolverPool, solve_model


@dataclass(frozen=True)
class AllocationProblem:
    """Tasks, agents and the cost matrix ``cost[i, a]`` (``inf`` = agent cannot do the task).

    ``at_least_one`` holds ``(agent, tasks)`` pairs: the agent gets at least one of the tasks
    (eq. 14 generalised). ``excluded`` holds allocations (task → agent) that must not be
    chosen again (eq. 3).
    """

    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    cost: np.ndarray
    at_least_one: tuple[tuple[str, frozenset[str]], ...] = ()
    excluded: tuple[Mapping[str, str], ...] = ()
    tie_break: float = 1e-3

    def __post_init__(self) -> None:
        cost = np.asarray(self.cost, dtype=float)
        object.__setattr__(self, "cost", cost)
        if cost.shape != (len(self.tasks), len(self.agents)):
            raise SpecificationError(
                f"cost has shape {cost.shape}, expected {(len(self.tasks), len(self.agents))}"
            )
        if len(set(self.tasks)) != len(self.tasks) or len(set(self.agents)) != len(self.agents):
            raise SpecificationError("task and agent ids must be unique")
        if np.isnan(cost).any() or (cost == -math.inf).any():
            raise SpecificationError("costs must be finite numbers or +inf (incapable)")
        for i, t in enumerate(self.tasks):
            if not np.isfinite(cost[i]).any():
                raise NoCapableAgentError(f"no agent can do task {t!r}")
        for agent, ts in self.at_least_one:
            if agent not in self.agents:
                raise SpecificationError(f"at_least_one names unknown agent {agent!r}")
            unknown = set(ts) - set(self.tasks)
            if unknown:
                raise SpecificationError(f"at_least_one names unknown tasks {sorted(unknown)}")

    def with_excluded(self, allocation: Mapping[str, str]) -> AllocationProblem:
        """The same problem with one more allocation excluded (eq. 3)."""
        return AllocationProblem(
            self.tasks,
            self.agents,
            self.cost,
            self.at_least_one,
            (*self.excluded, dict(allocation)),
            self.tie_break,
        )


@dataclass(frozen=True)
class Allocation:
    """A solved allocation: task → agent, each agent's summed cost, and the solve record."""

    assignment: Mapping[str, str]
    loads: Mapping[str, float]
    objective: float
    result: SolveResult | None = field(default=None, compare=False)

    @property
    def max_load(self) -> float:
        """The min-max part of the objective, eq. (1)."""
        return max(self.loads.values(), default=0.0)

    def tasks_of(self, agent: str) -> list[str]:
        """Tasks allocated to ``agent`` (in problem order)."""
        return [t for t, a in self.assignment.items() if a == agent]


def _xname(task: str, agent: str) -> str:
    return f"x[{task}|{agent}]"


def build_allocation_model(problem: AllocationProblem) -> LinearModel:
    """The solver-neutral MILP of eqs. (1)-(4) for ``problem``."""
    # measured on kitting requests: Gurobi's heuristics off cut its p99 by half
    m = LinearModel("allocation", heuristics=False)
    cost = problem.cost
    x: dict[tuple[int, int], object] = {}
    for i, t in enumerate(problem.tasks):
        for a, ag in enumerate(problem.agents):
            if math.isfinite(cost[i, a]):
                x[i, a] = m.add_binary(_xname(t, ag))
    finite = cost[np.isfinite(cost)]
    z = m.add_var("z", 0.0 if finite.min(initial=0.0) >= 0 else -math.inf)
    for i, t in enumerate(problem.tasks):
        m.add_row(
            {x[i, a]: 1.0 for a in range(len(problem.agents)) if (i, a) in x},
            Sense.EQ,
            1.0,
            f"assign[{t}]",
        )
    for a, ag in enumerate(problem.agents):
        terms: dict = {z: 1.0}
        for i in range(len(problem.tasks)):
            if (i, a) in x:
                terms[x[i, a]] = -cost[i, a]
        m.add_row(terms, Sense.GE, 0.0, f"load[{ag}]")
    tidx = {t: i for i, t in enumerate(problem.tasks)}
    aidx = {ag: a for a, ag in enumerate(problem.agents)}
    for k, (agent, ts) in enumerate(problem.at_least_one):
        a = aidx[agent]
        terms = {x[tidx[t], a]: 1.0 for t in ts if (tidx[t], a) in x}
        if not terms:
            raise InfeasibleError(f"agent {agent!r} can do none of the tasks it must get one of")
        m.add_row(terms, Sense.GE, 1.0, f"atleast[{k}]")
    for k, alloc in enumerate(problem.excluded):
        terms = {}
        for t, ag in alloc.items():
            key = (tidx[t], aidx[ag])
            if key in x:
                terms[x[key]] = 1.0
        if len(terms) == len(problem.tasks):
            m.add_row(terms, Sense.LE, len(terms) - 1, f"nogood[{k}]")
    obj: dict = {z: 1.0}
    if problem.tie_break:
        for (i, a), v in x.items():
            obj[v] = problem.tie_break * cost[i, a]
    m.set_objective(obj)
    return m


def allocation_objective(problem: AllocationProblem, assignment: Mapping[str, str]) -> float:
    """The value of eq. (1) (plus the tie-break) for a given assignment."""
    loads = _loads(problem, assignment)
    total = sum(loads.values())
    return max(loads.values(), default=0.0) + problem.tie_break * total


def _loads(problem: AllocationProblem, assignment: Mapping[str, str]) -> dict[str, float]:
    aidx = {ag: a for a, ag in enumerate(problem.agents)}
    loads = dict.fromkeys(problem.agents, 0.0)
    for i, t in enumerate(problem.tasks):
        ag = assignment[t]
        loads[ag] += float(problem.cost[i, aidx[ag]])
    return loads


def solve_allocation(
    problem: AllocationProblem,
    *,
    solver: SolverName = "auto",
    options: SolveOptions | None = None,
    warm_start: Allocation | Mapping[str, str] | None = None,
    pool: SolverPool | None = None,
) -> Allocation:
    """Solve eqs. (1)-(4). Blocks for the solve.

    ``warm_start`` is a previous allocation (task → agent); tasks it does not mention are
    left to the solver. Raises ``InfeasibleError`` (e.g. every allocation excluded) or
    ``SolverLimitError``.
    """
    model = build_allocation_model(problem)
    start: dict[str, float] | None = None
    if warm_start is not None:
        prev = warm_start.assignment if isinstance(warm_start, Allocation) else warm_start
        start = {}
        for t in problem.tasks:
            if t in prev:
                for ag in problem.agents:
                    if model.has_var(_xname(t, ag)):
                        start[_xname(t, ag)] = 1.0 if prev[t] == ag else 0.0
    res = solve_model(model, solver=solver, options=options, warm_start=start, pool=pool)
    assignment = {}
    for t in problem.tasks:
        best = max(
            (ag for ag in problem.agents if model.has_var(_xname(t, ag))),
            key=lambda ag, t=t: res.values[_xname(t, ag)],
        )
        assignment[t] = best
    return Allocation(assignment, _loads(problem, assignment), res.objective, res)


def brute_force_allocation(problem: AllocationProblem) -> Allocation:
    """Enumerate every allocation (for tests on small instances); raises ``InfeasibleError``."""
    choices: list[Sequence[str]] = []
    for i in range(len(problem.tasks)):
        choices.append(
            [ag for a, ag in enumerate(problem.agents) if math.isfinite(problem.cost[i, a])]
        )
    excluded = [dict(e) for e in problem.excluded]
    best: tuple[float, dict[str, str]] | None = None
    for combo in itertools.product(*choices):
        assignment = dict(zip(problem.tasks, combo, strict=True))
        if assignment in excluded:
            continue
        if any(not any(assignment[t] == agent for t in ts) for agent, ts in problem.at_least_one):
            continue
        val = allocation_objective(problem, assignment)
        if best is None or val < best[0] - 1e-12:
            best = (val, assignment)
    if best is None:
        raise InfeasibleError("no allocation satisfies the constraints")
    return Allocation(best[1], _loads(problem, best[1]), best[0])
