"""A solver-neutral mixed-integer linear model: variables, linear rows, a linear objective.

Planners build a :class:`LinearModel`; a backend (:mod:`.solvers`) solves it. Nothing here
imports a solver.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

INF = math.inf


class Sense(enum.Enum):
    """The sense of a linear row ``sum(coef * var) <sense> rhs``."""

    LE = "<="
    GE = ">="
    EQ = "=="


class SolveStatus(enum.Enum):
    """What a backend reports about a solve that produced a usable answer.

    OPTIMAL   proved optimal within the requested MIP gap.
    FEASIBLE  a limit (time) stopped the search with an incumbent; ``gap`` says how good.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"


@dataclass(frozen=True, slots=True, eq=False)
class Variable:
    """A column: its index in the model, name, bounds and whether it is integer.

    Compared and hashed by identity (one object per column of a model): rows are built
    as dicts keyed by variables, and hashing every field made that a measurable cost."""

    index: int
    name: str
    lb: float
    ub: float
    integer: bool


@dataclass(frozen=True, slots=True)
class Row:
    """One linear row: ``sum(coefs[k] * x[cols[k]]) <sense> rhs``."""

    cols: tuple[int, ...]
    coefs: tuple[float, ...]
    sense: Sense
    rhs: float
    name: str


@dataclass
class LinearModel:
    """A minimisation MILP built independently of any solver.

    Variables are addressed by name (names must be unique, so a previous solution can warm
    start a re-built model); rows by insertion order.
    """

    name: str = "model"
    variables: list[Variable] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    objective: dict[int, float] = field(default_factory=dict)
    objective_constant: float = 0.0
    presolve: bool = True
    """False: the builder has already tightened the model (bounds, big-Ms, implied rows
    left out), so the solvers skip presolve, which then costs more than it saves."""
    heuristics: bool = True
    """False: the model's optimum is usually found by its warm start or the first LP
    solutions, and the solver's primal heuristics only delay the proof (Gurobi; HiGHS
    keeps its own, measured no faster without them)."""
    _by_name: dict[str, int] = field(default_factory=dict, repr=False)

    def add_var(
        self, name: str, lb: float = 0.0, ub: float = INF, *, integer: bool = False
    ) -> Variable:
        """Add a column; raises ``ValueError`` on a duplicate name or empty domain."""
        if name in self._by_name:
            raise ValueError(f"variable {name!r} already exists in model {self.name!r}")
        if lb > ub:
            raise ValueError(f"variable {name!r} has lb {lb} > ub {ub}")
        var = Variable(len(self.variables), name, float(lb), float(ub), integer)
        self.variables.append(var)
        self._by_name[name] = var.index
        return var

    def add_binary(self, name: str) -> Variable:
        """Add a 0/1 column."""
        return self.add_var(name, 0.0, 1.0, integer=True)

    def add_row(
        self,
        terms: Mapping[Variable, float] | list[tuple[Variable, float]],
        sense: Sense,
        rhs: float,
        name: str = "",
    ) -> Row:
        """Add ``sum(coef * var) <sense> rhs``; repeated variables are summed."""
        acc: dict[int, float] = {}
        items = terms.items() if isinstance(terms, Mapping) else terms
        for var, coef in items:
            acc[var.index] = acc.get(var.index, 0.0) + float(coef)
        acc = {k: v for k, v in acc.items() if v != 0.0}
        row = Row(tuple(acc), tuple(acc.values()), sense, float(rhs), name or f"r{len(self.rows)}")
        self.rows.append(row)
        return row

    def set_objective(self, terms: Mapping[Variable, float], constant: float = 0.0) -> None:
        """Set the (minimised) objective ``constant + sum(coef * var)``."""
        self.objective = {v.index: float(c) for v, c in terms.items() if c != 0.0}
        self.objective_constant = float(constant)

    def var(self, name: str) -> Variable:
        """The variable called ``name``; ``KeyError`` if absent."""
        return self.variables[self._by_name[name]]

    def has_var(self, name: str) -> bool:
        """Whether a variable called ``name`` exists."""
        return name in self._by_name

    @property
    def num_vars(self) -> int:
        """Number of columns."""
        return len(self.variables)

    @property
    def num_rows(self) -> int:
        """Number of linear rows (bounds are not rows)."""
        return len(self.rows)

    @property
    def num_integer(self) -> int:
        """Number of integer columns."""
        return sum(1 for v in self.variables if v.integer)

    def evaluate(self, values: Mapping[str, float], tol: float = 1e-6) -> list[str]:
        """Names of rows and bounds that ``values`` violates (empty when feasible)."""
        x = [values.get(v.name, 0.0) for v in self.variables]
        bad = [
            v.name
            for v, xv in zip(self.variables, x, strict=True)
            if xv < v.lb - tol or xv > v.ub + tol
        ]
        for r in self.rows:
            lhs = sum(c * x[i] for i, c in zip(r.cols, r.coefs, strict=True))
            if (
                (r.sense is Sense.LE and lhs > r.rhs + tol)
                or (r.sense is Sense.GE and lhs < r.rhs - tol)
                or (r.sense is Sense.EQ and abs(lhs - r.rhs) > tol)
            ):
                bad.append(r.name)
        return bad


@dataclass(frozen=True)
class SolveResult:
    """What a solve produced: who solved it, how it ended, and the values by name.

    ``gap`` is the relative MIP gap the solver reports (0 for a proved optimum);
    ``solve_time`` is the solver's own wall time in seconds.
    """

    solver: str
    status: SolveStatus
    objective: float
    gap: float
    solve_time: float
    values: Mapping[str, float]

    def __getitem__(self, name: str) -> float:
        return self.values[name]
