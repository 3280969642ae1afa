"""A gurobipy model kept between solves and brought up to each new model by name.

Requests of one episode build models that differ a little: a few tasks gone or added,
other costs, bounds and big-Ms. Instead of passing every model to Gurobi afresh, the
backend keeps one gurobipy model per model name and changes it: columns and rows are
matched by name; a column the new model lacks is fixed at 0 and a row it lacks is made
non-binding (``≤ +∞``), which leaves exactly the new model's feasible set and objective
over its own columns; a changed coefficient is changed in place; columns and rows never
seen before are added. When the kept model has grown to more than twice the new one (or
past the licence's size), it is built afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from teamtree.planners.allocation.model import LinearModel, Sense

GROWTH = 2
"""The kept model is rebuilt once it holds more than GROWTH × the new model's columns
or rows (plus SLACK): the dead ones cost presolve time."""
SLACK = 64


def gurobi_vtype(integer: bool, lb: float, ub: float) -> str:
    """Gurobi's variable type for a column: binary, integer or continuous."""
    if not integer:
        return "C"
    return "B" if lb >= 0 and ub <= 1 else "I"


_SENSE = {Sense.LE: "<", Sense.GE: ">", Sense.EQ: "="}


class KeptModel:
    """One gurobipy model and the name → column and name → row maps that update it."""

    def __init__(self, env: Any, name: str) -> None:
        import gurobipy as gp

        self.model = gp.Model(name, env=env)
        self.vars: list[Any] = []
        self.var_at: dict[str, int] = {}
        self.vtype: list[str] = []
        self.constrs: list[Any] = []
        self.row_at: dict[str, int] = {}
        self.row_terms: list[dict[int, float]] = []
        self.sense: list[str] = []

    def dispose(self) -> None:
        """Free the gurobipy model."""
        self.model.dispose()

    def too_big_for(self, model: LinearModel, limit: int) -> bool:
        """Whether the kept model should be rebuilt before it takes ``model`` (see GROWTH)."""
        n_vars = len(self.var_at | {v.name: 0 for v in model.variables})
        n_rows = len(self.row_at | {r.name: 0 for r in model.rows})
        return (
            n_vars > GROWTH * model.num_vars + SLACK
            or n_rows > GROWTH * model.num_rows + SLACK
            or n_vars > limit
            or n_rows > limit
        )

    def take(self, model: LinearModel, warm_start: Mapping[str, float] | None) -> list[Any]:
        """Make the kept model equal to ``model`` over ``model``'s columns (module doc) and
        set the MIP start; returns the gurobipy variables of ``model``'s columns, in order."""
        import gurobipy as gp
        from gurobipy import GRB

        m = self.model
        cols: list[int] = []
        for v in model.variables:
            k = self.var_at.get(v.name)
            vt = gurobi_vtype(v.integer, v.lb, v.ub)
            if k is None:
                k = len(self.vars)
                self.var_at[v.name] = k
                self.vars.append(m.addVar(vtype=vt, name=v.name))
                self.vtype.append(vt)
            elif self.vtype[k] != vt:
                self.vars[k].VType = vt
                self.vtype[k] = vt
            cols.append(k)
        n = len(self.vars)
        lb = np.zeros(n)
        ub = np.zeros(n)
        obj = np.zeros(n)
        start = np.full(n, GRB.UNDEFINED)
        idx = np.array(cols, dtype=np.int64)
        lb[idx] = np.maximum([v.lb for v in model.variables], -GRB.INFINITY)
        ub[idx] = np.minimum([v.ub for v in model.variables], GRB.INFINITY)
        for i, c in model.objective.items():
            obj[cols[i]] = c
        if warm_start:
            for v, k in zip(model.variables, cols, strict=True):
                if v.name in warm_start:
                    start[k] = warm_start[v.name]
        rhs = [GRB.INFINITY] * len(self.constrs)
        sense = ["<"] * len(self.constrs)
        for r in model.rows:
            terms = {cols[c]: coef for c, coef in zip(r.cols, r.coefs, strict=True)}
            k = self.row_at.get(r.name)
            if k is None:
                expr = gp.LinExpr(list(terms.values()), [self.vars[c] for c in terms])
                self.row_at[r.name] = len(self.constrs)
                self.constrs.append(m.addLConstr(expr, _SENSE[r.sense], r.rhs, name=r.name))
                self.row_terms.append(terms)
                self.sense.append(_SENSE[r.sense])
                rhs.append(r.rhs)
                sense.append(_SENSE[r.sense])
                continue
            old = self.row_terms[k]
            if old != terms:
                row = self.constrs[k]
                for c, coef in terms.items():
                    if old.get(c) != coef:
                        m.chgCoeff(row, self.vars[c], coef)
                for c in old:
                    if c not in terms:
                        m.chgCoeff(row, self.vars[c], 0.0)
                self.row_terms[k] = terms
            rhs[k] = r.rhs
            sense[k] = _SENSE[r.sense]
        xs = gp.MVar.fromlist(self.vars)
        xs.LB = lb
        xs.UB = ub
        xs.Obj = obj
        xs.Start = start
        if self.constrs:
            changed = [k for k, s in enumerate(sense) if s != self.sense[k]]
            if changed:
                m.setAttr("Sense", [self.constrs[k] for k in changed], [sense[k] for k in changed])
                for k in changed:
                    self.sense[k] = sense[k]
            m.setAttr("RHS", self.constrs, rhs)
        m.ObjCon = model.objective_constant
        m.ModelSense = GRB.MINIMIZE
        m.reset(0)
        return [self.vars[k] for k in cols]
