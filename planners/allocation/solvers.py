"""MILP backends behind one contract: Gurobi (gurobipy) and HiGHS (highspy).

``solve_model(model, solver="auto")`` picks Gurobi unless gurobipy is missing or the model is
larger than the pip wheel's size-limited licence (2,000 variables or 2,000 constraints),
then HiGHS. Both honour a time limit, a relative MIP gap and a warm start given as
values by variable name.

Raises :class:`InfeasibleError` when the model is proved infeasible and
:class:`SolverLimitError` when a limit stopped the solver before it had any solution.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import scipy.sparse as sp

from teamtree.broker import InfeasibleError, PlanningError, SolverLimitError
from teamtree.planners.allocation.kept_model import KeptModel, gurobi_vtype
from teamtree.planners.allocation.model import LinearModel, Sense, SolveResult, SolveStatus

GUROBI_SIZE_LIMIT = 2000
"""Largest variable and constraint count the gurobipy pip licence accepts."""

SolverName = Literal["auto", "gurobi", "highs"]


@dataclass(frozen=True)
class SolveOptions:
    """Limits for one solve: wall time (s), relative MIP gap, branch-and-bound nodes,
    and threads (0 = solver's choice).

    The default time limit (60 s) is a safety net, not the way to finish. A node limit
    is deterministic (with one thread the same model gives the same answer on a busy
    machine), which a wall-clock limit is not: use it where runs must replay exactly.
    """

    time_limit: float | None = 60.0
    mip_gap: float | None = None
    threads: int = 1
    node_limit: int | None = None


class Backend(Protocol):
    """What a backend offers: a name and ``solve``."""

    name: str

    def solve(
        self,
        model: LinearModel,
        options: SolveOptions,
        warm_start: Mapping[str, float] | None = None,
    ) -> SolveResult: ...


def gurobi_available() -> bool:
    """Whether gurobipy can be imported."""
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        return False
    return True


def fits_gurobi_licence(model: LinearModel, limit: int = GUROBI_SIZE_LIMIT) -> bool:
    """Whether ``model`` is within the size-limited licence (variables and rows ≤ limit)."""
    return model.num_vars <= limit and model.num_rows <= limit


class GurobiBackend:
    """Solve with gurobipy; one silent environment per backend instance (created lazily).

    With ``reuse``, the gurobipy model of each model name is kept between solves and
    changed into the next model of that name (:mod:`.kept_model`) instead of being
    built afresh; a backend is then for one thread at a time.
    """

    name = "gurobi"

    def __init__(self, reuse: bool = False, size_limit: int = GUROBI_SIZE_LIMIT) -> None:
        self._env = None
        self.reuse = reuse
        self.size_limit = size_limit
        self._kept: dict[str, KeptModel] = {}

    def _environment(self):  # type: ignore[no-untyped-def]
        import gurobipy as gp

        if self._env is None:
            env = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
            self._env = env
        return self._env

    def _fresh(self, model: LinearModel, warm_start: Mapping[str, float] | None):  # type: ignore[no-untyped-def]
        """A new gurobipy model of ``model``, passed as one sparse matrix, and its columns."""
        import gurobipy as gp
        from gurobipy import GRB

        arrays = model_arrays(model)
        m = gp.Model(model.name, env=self._environment())
        x = m.addMVar(
            model.num_vars,
            lb=np.maximum(arrays.lb, -GRB.INFINITY),
            ub=np.minimum(arrays.ub, GRB.INFINITY),
            vtype=[gurobi_vtype(v.integer, v.lb, v.ub) for v in model.variables],
        )
        if model.num_rows:
            matrix = sp.csr_matrix(
                (arrays.value, arrays.index, arrays.start),
                shape=(model.num_rows, model.num_vars),
            )
            sense = {Sense.LE: GRB.LESS_EQUAL, Sense.GE: GRB.GREATER_EQUAL, Sense.EQ: GRB.EQUAL}
            m.addMConstr(matrix, x, [sense[r.sense] for r in model.rows], arrays.rhs)
        x.Obj = arrays.cost
        m.ObjCon = model.objective_constant
        m.ModelSense = GRB.MINIMIZE
        if warm_start:
            x.Start = np.array(
                [warm_start.get(v.name, GRB.UNDEFINED) for v in model.variables], dtype=float
            )
        return m, x

    def _kept_model(self, model: LinearModel, warm_start: Mapping[str, float] | None):  # type: ignore[no-untyped-def]
        """The kept gurobipy model of ``model.name``, changed into ``model``, and its columns."""
        kept = self._kept.get(model.name)
        if kept is not None and kept.too_big_for(model, self.size_limit):
            kept.dispose()
            kept = None
        if kept is None:
            kept = self._kept[model.name] = KeptModel(self._environment(), model.name)
        try:
            columns = kept.take(model, warm_start)
        except Exception:
            del self._kept[model.name]  # half-changed: never use it again
            kept.dispose()
            raise
        return kept.model, columns

    def solve(
        self,
        model: LinearModel,
        options: SolveOptions,
        warm_start: Mapping[str, float] | None = None,
    ) -> SolveResult:
        """Pass the model to gurobipy (afresh, or into the kept model), optimise, and map
        the status; see the module doc."""
        import gurobipy as gp
        from gurobipy import GRB

        kept = self.reuse and len({r.name for r in model.rows}) == model.num_rows
        try:
            if kept:
                m, x = self._kept_model(model, warm_start)
            else:
                m, x = self._fresh(model, warm_start)
            p = m.Params
            p.TimeLimit = GRB.INFINITY if options.time_limit is None else options.time_limit
            p.MIPGap = 1e-4 if options.mip_gap is None else options.mip_gap
            p.Threads = options.threads
            p.NodeLimit = GRB.INFINITY if options.node_limit is None else options.node_limit
            p.Presolve = -1 if model.presolve else 0
            p.Heuristics = 0.05 if model.heuristics else 0.0
            m.optimize()
        except gp.GurobiError as exc:
            if exc.errno == 10010:  # model too large for the size-limited licence
                raise SolverLimitError(f"gurobi licence limit: {exc}") from exc
            raise PlanningError(f"gurobi failed: {exc}") from exc
        try:
            return self._result(model, m, x)
        finally:
            if not kept:
                m.dispose()

    @staticmethod
    def _result(model: LinearModel, m, x) -> SolveResult:  # type: ignore[no-untyped-def]
        from gurobipy import GRB

        status = m.Status
        runtime = float(m.Runtime)
        if status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
            raise InfeasibleError(f"model {model.name!r} is infeasible (gurobi)")
        if status == GRB.UNBOUNDED:
            raise PlanningError(f"model {model.name!r} is unbounded (gurobi)")
        if m.SolCount == 0:
            raise SolverLimitError(
                f"gurobi stopped with status {status} and no solution for {model.name!r}"
            )
        col = m.getAttr("X", x) if isinstance(x, list) else x.X.tolist()
        values = {v.name: float(col[v.index]) for v in model.variables}
        gap = 0.0 if model.num_integer == 0 else float(m.MIPGap)
        st = SolveStatus.OPTIMAL if status == GRB.OPTIMAL else SolveStatus.FEASIBLE
        return SolveResult("gurobi", st, float(m.ObjVal), gap, runtime, values)


@dataclass(frozen=True)
class ModelArrays:
    """A model's columns and rows as arrays: bounds, costs, and the row-wise (CSR) matrix
    ``start``/``index``/``value`` with each row's right-hand side — what both backends pass."""

    lb: np.ndarray
    ub: np.ndarray
    cost: np.ndarray
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    rhs: np.ndarray


def model_arrays(model: LinearModel) -> ModelArrays:
    """The arrays of ``model`` (see :class:`ModelArrays`)."""
    n = model.num_vars
    cost = np.zeros(n)
    for i, c in model.objective.items():
        cost[i] = c
    lengths = [len(r.cols) for r in model.rows]
    start = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=start[1:])
    index = np.fromiter(
        itertools.chain.from_iterable(r.cols for r in model.rows), np.int32, int(start[-1])
    )
    value = np.fromiter(
        itertools.chain.from_iterable(r.coefs for r in model.rows), float, int(start[-1])
    )
    return ModelArrays(
        np.array([v.lb for v in model.variables], dtype=float),
        np.array([v.ub for v in model.variables], dtype=float),
        cost,
        start,
        index,
        value,
        np.array([r.rhs for r in model.rows], dtype=float),
    )


class HighsBackend:
    """Solve with highspy (the low-level ``_Highs`` class, which prints no banner)."""

    name = "highs"

    def solve(
        self,
        model: LinearModel,
        options: SolveOptions,
        warm_start: Mapping[str, float] | None = None,
    ) -> SolveResult:
        """Pass the model as a row-wise ``HighsLp``, run, and map the status."""
        from highspy import _core as hc

        h = hc._Highs()
        h.setOptionValue("output_flag", False)
        if options.time_limit is not None:
            h.setOptionValue("time_limit", float(options.time_limit))
        if options.mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(options.mip_gap))
        if options.threads:
            h.setOptionValue("threads", int(options.threads))
        if options.node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(options.node_limit))
        if not model.presolve:
            h.setOptionValue("presolve", "off")
        n = model.num_vars
        arrays = model_arrays(model)
        lp = hc.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = model.num_rows
        lp.col_cost_ = arrays.cost
        lp.offset_ = model.objective_constant
        lp.col_lower_ = arrays.lb
        lp.col_upper_ = arrays.ub
        le = np.array([r.sense is Sense.LE for r in model.rows], dtype=bool)
        ge = np.array([r.sense is Sense.GE for r in model.rows], dtype=bool)
        lp.row_lower_ = np.where(le, -np.inf, arrays.rhs)
        lp.row_upper_ = np.where(ge, np.inf, arrays.rhs)
        lp.a_matrix_.format_ = hc.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = arrays.start
        lp.a_matrix_.index_ = arrays.index
        lp.a_matrix_.value_ = arrays.value
        lp.a_matrix_.num_col_ = n
        lp.a_matrix_.num_row_ = model.num_rows
        if model.num_integer:
            lp.integrality_ = [
                hc.HighsVarType.kInteger if v.integer else hc.HighsVarType.kContinuous
                for v in model.variables
            ]
        if h.passModel(lp) == hc.HighsStatus.kError:  # a warning: e.g. a ~1e-15 dropped
            raise PlanningError(f"highs rejected model {model.name!r}")
        if warm_start and model.num_integer:
            sol = hc.HighsSolution()
            sol.col_value = [float(warm_start.get(v.name, v.lb)) for v in model.variables]
            sol.value_valid = True
            h.setSolution(sol)
        t0 = time.perf_counter()
        h.run()
        elapsed = time.perf_counter() - t0
        if warm_start and model.num_integer and not self._solution_matches(h, model):
            # highspy 1.16 can report the optimum's objective but hand back the user's start
            # as the solution (seen when presolve solves the model); solve again cold.
            return self.solve(model, options, None)
        status = h.getModelStatus()
        info = h.getInfo()
        if status == hc.HighsModelStatus.kInfeasible:
            raise InfeasibleError(f"model {model.name!r} is infeasible (highs)")
        if status in (hc.HighsModelStatus.kUnbounded, hc.HighsModelStatus.kUnboundedOrInfeasible):
            raise PlanningError(f"model {model.name!r} is unbounded or infeasible (highs)")
        if info.primal_solution_status != 2:  # kSolutionStatusFeasible
            raise SolverLimitError(
                f"highs stopped with {h.modelStatusToString(status)} and no solution "
                f"for {model.name!r}"
            )
        col = list(h.getSolution().col_value)
        values = {v.name: float(col[v.index]) for v in model.variables}
        gap = float(info.mip_gap) if model.num_integer else 0.0
        if not math.isfinite(gap):
            gap = math.inf
        st = SolveStatus.OPTIMAL if status == hc.HighsModelStatus.kOptimal else SolveStatus.FEASIBLE
        return SolveResult("highs", st, float(info.objective_function_value), gap, elapsed, values)

    @staticmethod
    def _solution_matches(h, model: LinearModel) -> bool:  # type: ignore[no-untyped-def]
        info = h.getInfo()
        if info.primal_solution_status != 2:
            return True
        col = h.getSolution().col_value
        value = model.objective_constant + sum(c * col[i] for i, c in model.objective.items())
        reported = float(info.objective_function_value)
        return abs(value - reported) <= 1e-6 * max(1.0, abs(reported))


class SolverPool:
    """Holds backends (so Gurobi's environment is made once) and applies the choice rule."""

    def __init__(
        self, gurobi_size_limit: int = GUROBI_SIZE_LIMIT, *, reuse_models: bool = False
    ) -> None:
        self.gurobi_size_limit = gurobi_size_limit
        self.reuse_models = reuse_models
        self._gurobi: GurobiBackend | None = None
        self._highs = HighsBackend()

    def choose(self, model: LinearModel, solver: SolverName = "auto") -> Backend:
        """The backend for ``model``: an explicit name, or the automatic rule of the module doc."""
        if solver == "highs":
            return self._highs
        if solver == "gurobi":
            if not gurobi_available():
                raise SolverLimitError("gurobipy is not installed")
            return self._gurobi_backend()
        if solver != "auto":
            raise ValueError(f"unknown solver {solver!r}; use 'auto', 'gurobi' or 'highs'")
        if gurobi_available() and fits_gurobi_licence(model, self.gurobi_size_limit):
            return self._gurobi_backend()
        return self._highs

    def _gurobi_backend(self) -> GurobiBackend:
        if self._gurobi is None:
            self._gurobi = GurobiBackend(self.reuse_models, self.gurobi_size_limit)
        return self._gurobi

    def solve(
        self,
        model: LinearModel,
        *,
        solver: SolverName = "auto",
        options: SolveOptions | None = None,
        warm_start: Mapping[str, float] | None = None,
    ) -> SolveResult:
        """Solve ``model``; in ``auto`` mode a Gurobi licence refusal falls back to HiGHS."""
        opts = options or SolveOptions()
        backend = self.choose(model, solver)
        try:
            return backend.solve(model, opts, warm_start)
        except SolverLimitError as exc:
            if solver == "auto" and backend.name == "gurobi" and "licence" in str(exc):
                return self._highs.solve(model, opts, warm_start)
            raise


_DEFAULT_POOL: SolverPool | None = None


def default_pool() -> SolverPool:
    """A process-wide pool (lazily made); planners accept their own pool too."""
    global _DEFAULT_POOL
    if _DEFAULT_POOL is None:
        _DEFAULT_POOL = SolverPool()
    return _DEFAULT_POOL


def solve_model(
    model: LinearModel,
    *,
    solver: SolverName = "auto",
    options: SolveOptions | None = None,
    warm_start: Mapping[str, float] | None = None,
    pool: SolverPool | None = None,
) -> SolveResult:
    """Solve ``model`` with the chosen backend. Blocks for the solve; raises as the module says."""
    return (pool or default_pool()).solve(
        model, solver=solver, options=options, warm_start=warm_start
    )
