"""Scheduling MILP in its general form, seed 001 eqs. (5)-(9), for any number of agents.

    min z
    s.t. f_i = s_i + d_i                                       (8)
         s_j ≥ f_i + lag_i          for every precedence i→j   (6)
         s_j ≥ f_i − M_ij (1 − o_ij),  s_i ≥ f_j − M_ji o_ij    (7, same agent, unordered pair)
         Σ_{i∈V} b_i ≤ |V| − 1,  s_i ≤ M_i b_i                  (9, e.g. eqs. 21-22)
         s_i ≥ release_i,  f_i ≤ deadline_i,  z ≥ f_i           (9, 23)

A task's ``lag`` (default 0) is a wait between its end and its successors' starts that
does not occupy its agent (the authors' kitting scheduler lets the human start an
assigned subtask 2 s after the robot's instantaneous assignment). A task of zero
duration takes no time but still needs its agent: it is never placed strictly inside
another task of the same agent (eq. 7 with d = 0 on one side).

Formulated tightly, as measured during design: precedence is closed transitively and no
disjunction is built for a pair it already orders; a greedy list schedule gives a feasible
incumbent (the warm start when none is given) and the horizon ``H``; each start gets the
window [head, H − tail]; each pair gets its own big-M from those windows; pairs whose
windows allow only one order get a plain precedence row; ``z`` is bounded below by the
critical path and by each agent's load; a task that dominates another of its agent (same
duration and lag, no later release or deadline, fewer predecessors, more successors —
identical tasks included) is ordered first (symmetry breaking and dominance); and per
task, sequence-load cuts bound its start and the makespan by the work its agent does
before and after it (see ``_add_load_cuts``). Being tight, the model is solved with
presolve off. When the incumbent already reaches the lower bound on ``z``, no solver
runs at all (``solve_schedule``).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from teamtree.broker import InfeasibleError, SpecificationError
from teamtree.planners.allocation.model import (
    LinearModel,
    Sense,
    SolveResult,
    SolveStatus,
    Variable,
)
from teamtree.planners.allocation.solvers import SolveOptions, SolverName, SolverPool, solve_model

EPS = 1e-7
WEIGHT_NOISE = 1.5
"""How far the list schedule's random rules perturb each task's weight (its tail): by a
factor drawn from [1 - WEIGHT_NOISE / 2, 1 + WEIGHT_NOISE / 2]. Wide, so that a short
feeder of the busiest agent can go before a long one whose tail is twice its own;
every list schedule left above the makespan's bound costs a MILP."""


@dataclass(frozen=True)
class ScheduleTask:
    """One task of τ_new: who does it, how long it takes, when it may start and must end,
    and how long its successors wait after it ends (``lag``, not time of its agent)."""

    id: str
    agent: str
    duration: float
    release: float = 0.0
    deadline: float | None = None
    lag: float = 0.0


@dataclass(frozen=True)
class ScheduleProblem:
    """Tasks, precedence pairs ``(before, after)`` and the sets of which one must start at 0.

    ``agent_release`` gives the time from which each agent is free (default 0).
    """

    tasks: tuple[ScheduleTask, ...]
    precedence: tuple[tuple[str, str], ...] = ()
    start_now: tuple[frozenset[str], ...] = ()
    agent_release: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise SpecificationError("schedule task ids must be unique")
        known = set(ids)
        for a, b in self.precedence:
            if a not in known or b not in known:
                raise SpecificationError(f"precedence ({a!r}, {b!r}) names an unknown task")
        for s in self.start_now:
            if not set(s) <= known:
                raise SpecificationError(f"start_now names unknown tasks {sorted(set(s) - known)}")
        for t in self.tasks:
            if t.duration < 0:
                raise SpecificationError(f"task {t.id!r} has a negative duration")
            if t.lag < 0:
                raise SpecificationError(f"task {t.id!r} has a negative lag")


@dataclass(frozen=True)
class Schedule:
    """Start times by task, the makespan, each agent's sequence, and the solve record."""

    start: Mapping[str, float]
    finish: Mapping[str, float]
    makespan: float
    sequence: Mapping[str, tuple[str, ...]]
    result: SolveResult | None = field(default=None, compare=False)


@dataclass
class _Analysis:
    order: list[int]
    succ: list[set[int]]
    pred: list[set[int]]
    closure_succ: list[set[int]]
    closure_pred: list[set[int]]
    head: list[float]
    tail: list[float]
    agent: list[str]
    duration: list[float]
    lag: list[float]
    release: list[float]
    agent_free: dict[str, float]
    start_now: list[list[int]]
    by_agent: dict[str, list[int]]
    bound: float | None = None


def _analyse(problem: ScheduleProblem) -> _Analysis:
    n = len(problem.tasks)
    idx = {t.id: i for i, t in enumerate(problem.tasks)}
    succ: list[set[int]] = [set() for _ in range(n)]
    pred: list[set[int]] = [set() for _ in range(n)]
    for a, b in problem.precedence:
        if a == b:
            raise SpecificationError(f"task {a!r} precedes itself")
        succ[idx[a]].add(idx[b])
        pred[idx[b]].add(idx[a])
    indeg = [len(p) for p in pred]
    order = [i for i in range(n) if indeg[i] == 0]
    k = 0
    while k < len(order):
        for j in sorted(succ[order[k]]):
            indeg[j] -= 1
            if indeg[j] == 0:
                order.append(j)
        k += 1
    if len(order) != n:
        raise SpecificationError("the precedence graph has a cycle")
    closure: list[set[int]] = [set() for _ in range(n)]
    for i in reversed(order):
        for j in succ[i]:
            closure[i].add(j)
            closure[i] |= closure[j]
    closure_pred: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for j in closure[i]:
            closure_pred[j].add(i)
    head = [0.0] * n
    for i in order:
        t = problem.tasks[i]
        h = max(t.release, problem.agent_release.get(t.agent, 0.0))
        for p in pred[i]:
            h = max(h, head[p] + problem.tasks[p].duration + problem.tasks[p].lag)
        head[i] = h
    tail = [0.0] * n  # from a task's start to the end of its last successor
    for i in reversed(order):
        t = problem.tasks[i]
        tail[i] = t.duration + max((t.lag + tail[j] for j in succ[i]), default=0.0)
    free = {t.agent: problem.agent_release.get(t.agent, 0.0) for t in problem.tasks}
    by_agent: dict[str, list[int]] = {}
    for i, t in enumerate(problem.tasks):
        by_agent.setdefault(t.agent, []).append(i)
    return _Analysis(
        order,
        succ,
        pred,
        closure,
        closure_pred,
        head,
        tail,
        [t.agent for t in problem.tasks],
        [t.duration for t in problem.tasks],
        [t.lag for t in problem.tasks],
        [t.release for t in problem.tasks],
        free,
        [[i for i, t in enumerate(problem.tasks) if t.id in group] for group in problem.start_now],
        by_agent,
    )


def list_schedule(problem: ScheduleProblem, tries: int = 24) -> Schedule | None:
    """A feasible schedule by greedy serial rules, the best of several, or ``None``.

    Rules: earliest possible start then longest tail (a non-delay rule), longest tail first,
    and ``tries`` seeded random perturbations of them (``WEIGHT_NOISE``); each task goes
    into the first idle gap of its agent that fits it (serial generation with insertion).
    ``None`` when no rule meets every deadline and ``start_now``; the MILP does not need
    it then. Used as the horizon and the default warm start.
    """
    return _list_schedule(problem, _analyse(problem), tries)


def _list_schedule(problem: ScheduleProblem, an: _Analysis, tries: int = 24) -> Schedule | None:
    """:func:`list_schedule` on an analysed problem. It stops once a rule reaches the
    makespan's lower bound: a later rule replaces the best only when strictly shorter,
    which none can be, so the answer is the one all rules would give."""
    rng = random.Random(len(problem.tasks))
    best: dict[int, float] | None = None
    best_mk = math.inf
    bound = _makespan_bound(an)
    for k in range(2 + tries):
        mode = k % 2
        noise = 0.0 if k < 2 else WEIGHT_NOISE
        weight = [t * (1.0 + noise * (rng.random() - 0.5)) for t in an.tail]
        start = _serial(problem, an, mode, weight)
        if start is None:
            continue
        mk = max((start[i] + an.duration[i] for i in start), default=0.0)
        if mk < best_mk - EPS:
            best, best_mk = start, mk
            if best_mk <= bound + EPS:
                break
    if best is None:
        return None
    return _make_schedule(problem, {problem.tasks[i].id: v for i, v in best.items()})


def _makespan_bound(an: _Analysis) -> float:
    """A lower bound on every makespan: the critical path (head + tail) and, per agent,
    Jackson's preemptive bound over its tasks' heads, durations and tails (computed once
    per analysis)."""
    if an.bound is None:
        an.bound = _compute_bound(an)
    return an.bound


def _compute_bound(an: _Analysis) -> float:
    n = len(an.head)
    bound = max((an.head[i] + an.tail[i] for i in range(n)), default=0.0)
    for idxs in an.by_agent.values():
        jobs = [(an.head[i], an.duration[i], an.tail[i] - an.duration[i]) for i in idxs]
        bound = max(bound, _jackson_bound(jobs))
    return bound


def _fit(busy: list[tuple[float, float]], e: float, d: float) -> float:
    """The earliest start ``v ≥ e`` at which a task of duration ``d`` overlaps none of an
    agent's placed tasks ``busy`` (``(start, end)`` sorted by start; an instant inside a
    task counts as overlap, two instants never do — eq. 7)."""
    v = e
    for s, f in busy:
        if v < f - EPS and s < v + d - EPS:
            v = f
    return v


def _serial(
    problem: ScheduleProblem, an: _Analysis, mode: int, weight: list[float]
) -> dict[int, float] | None:
    """Serial schedule generation with insertion: mode 0 takes the ready task that can
    start earliest (ties: higher weight, then lower index), mode 1 the ready task of
    highest weight (ties: lower index). Each task starts at the earliest time its
    release, its predecessors' ends plus lags and its agent's placed tasks allow — in an
    idle gap of its agent when one fits (a zero-duration assignment slips in before the
    agent's long task instead of waiting for its end).

    A task's earliest start from its predecessors is kept per task as they are placed; a
    task at or after its agent's last end needs no gap search.
    """
    tasks = problem.tasks
    n = len(tasks)
    agent = an.agent
    dur = an.duration
    lag = an.lag
    rel = an.release
    succ = an.succ
    start: dict[int, float] = {}
    busy: dict[str, list[tuple[float, float]]] = {a: [] for a in an.agent_free}
    last = dict(an.agent_free)  # latest end over each agent's placed tasks (or its release)

    def place(i: int, v: float) -> None:
        start[i] = v
        a = agent[i]
        bisect.insort(busy[a], (v, v + dur[i]))
        if v + dur[i] > last[a]:
            last[a] = v + dur[i]

    for members in an.start_now:
        if any(start.get(i) == 0.0 for i in members):
            continue
        cand = [
            i
            for i in members
            if i not in start
            and an.head[i] <= EPS
            and not an.pred[i]
            and an.agent_free[agent[i]] <= EPS
            and _fit(busy[agent[i]], 0.0, dur[i]) <= EPS
        ]
        if not cand:
            return None
        place(max(cand, key=lambda i: (weight[i], -i)), 0.0)
    waiting = [len(p) for p in an.pred]
    after = [-math.inf] * n  # latest end plus lag over the placed predecessors
    for i, v in start.items():
        for j in succ[i]:
            waiting[j] -= 1
            end = v + dur[i] + lag[i]
            if end > after[j]:
                after[j] = end
    ready = [i for i in range(n) if i not in start and not waiting[i]]
    if mode == 1:
        heap = [(-weight[i], i) for i in ready]
        heapq.heapify(heap)

    def earliest(i: int) -> float:
        a = agent[i]
        e = rel[i] if rel[i] >= an.agent_free[a] else an.agent_free[a]
        if after[i] > e:
            e = after[i]
        return e if e >= last[a] else _fit(busy[a], e, dur[i])

    while ready if mode == 0 else heap:
        if mode == 0:
            # min over (round(earliest, 6), -weight, index); round only the near-ties
            # (rounding is monotonic, so nothing beyond them can round to the minimum)
            times = [earliest(i) for i in ready]
            low = min(times)
            key = round(low, 6)
            near = low + 2e-6
            pick = -1
            best_w = 0.0
            v = low
            for i, e in zip(ready, times, strict=True):
                if e == low or (e <= near and round(e, 6) == key):
                    w = weight[i]
                    if pick < 0 or w > best_w or (w == best_w and i < pick):
                        pick, best_w, v = i, w, e
            ready.remove(pick)
        else:
            pick = heapq.heappop(heap)[1]
            v = earliest(pick)
        i = pick
        place(i, v)
        end = v + dur[i] + lag[i]
        for j in succ[i]:
            waiting[j] -= 1
            if end > after[j]:
                after[j] = end
            if not waiting[j]:
                if mode == 0:
                    ready.append(j)
                else:
                    heapq.heappush(heap, (-weight[j], j))
    if len(start) != n:
        return None
    for i, t in enumerate(tasks):
        if t.deadline is not None and start[i] + t.duration > t.deadline + EPS:
            return None
    return start


def _resequence(
    problem: ScheduleProblem, previous: Schedule, heur: Schedule | None
) -> Schedule | None:
    """A feasible schedule that keeps ``previous``'s order (warm start from the last plan).

    Tasks are taken in the order of their previous start (tasks new to this problem at
    their start in ``heur``, the list schedule) and each is started as early as it can; the previous
    plan's times are in another time frame (it was planned earlier) and need not fit
    this problem's releases, but its order does. ``None`` when that order misses a
    deadline or a start-now set.
    """
    an = _analyse(problem)
    return _resequenced(problem, an, previous, heur)


def _resequenced(
    problem: ScheduleProblem, an: _Analysis, previous: Schedule, heur: Schedule | None
) -> Schedule | None:
    key = []
    for t in problem.tasks:
        if t.id in previous.start:
            key.append(float(previous.start[t.id]))
        elif heur is not None:
            key.append(heur.start[t.id])
        else:
            key.append(math.inf)
    start = _serial(problem, an, 1, [-k for k in key])
    if start is None:
        return None
    return _make_schedule(problem, {problem.tasks[i].id: v for i, v in start.items()})


def _make_schedule(
    problem: ScheduleProblem, start: Mapping[str, float], result: SolveResult | None = None
) -> Schedule:
    finish = {t.id: start[t.id] + t.duration for t in problem.tasks}
    seq: dict[str, list[str]] = {}
    for t in sorted(problem.tasks, key=lambda t: (start[t.id], t.duration > 0, t.id)):
        seq.setdefault(t.agent, []).append(t.id)
    makespan = max(finish.values(), default=0.0)
    return Schedule(dict(start), finish, makespan, {a: tuple(s) for a, s in seq.items()}, result)


def _sname(tid: str) -> str:
    return f"s[{tid}]"


def _oname(a: str, b: str) -> str:
    return f"o[{a}|{b}]"


def _bname(tid: str) -> str:
    return f"b[{tid}]"


def _jackson_bound(jobs: list[tuple[float, float, float]]) -> float:
    """One-agent lower bound: Jackson's preemptive schedule over (head, duration, tail).

    It bounds the makespan of the agent's tasks with their heads and tails (it includes the
    plain load bound min head + Σ durations).
    """
    pending = sorted(jobs)
    remaining: list[list[float]] = []  # [tail, left]
    t = 0.0
    k = 0
    best = 0.0
    while k < len(pending) or remaining:
        if not remaining:
            t = max(t, pending[k][0])
        while k < len(pending) and pending[k][0] <= t + EPS:
            remaining.append([pending[k][2], pending[k][1]])
            k += 1
        remaining.sort(key=lambda x: -x[0])
        job = remaining[0]
        horizon = pending[k][0] if k < len(pending) else math.inf
        run = min(job[1], horizon - t)
        t += run
        job[1] -= run
        if job[1] <= EPS:
            best = max(best, t + job[0])
            remaining.pop(0)
    return best


def _dominance(problem: ScheduleProblem, an: _Analysis, i: int, j: int) -> int | None:
    """Which of two same-agent tasks may go first without loss (symmetry/dominance), if any.

    ``i`` may go first when both have the same duration and lag, i's release and deadline
    are no later, i's predecessors are among j's, j's successors among i's, and i is in
    every start-now set j is in: swapping them in any schedule keeps it feasible and no
    longer.
    Ties (identical tasks) go to the lower index.
    """

    def dom(a: int, b: int) -> bool:
        ta, tb = problem.tasks[a], problem.tasks[b]
        if ta.duration != tb.duration or ta.lag != tb.lag or ta.release > tb.release:
            return False
        da = math.inf if ta.deadline is None else ta.deadline
        db = math.inf if tb.deadline is None else tb.deadline
        if da > db:
            return False
        if not (an.closure_pred[a] <= an.closure_pred[b]):
            return False
        if not (an.closure_succ[b] <= an.closure_succ[a]):
            return False
        return all(ta.id in g for g in problem.start_now if tb.id in g)

    if dom(i, j):
        return i
    if dom(j, i):
        return j
    return None


def build_schedule_model(problem: ScheduleProblem, horizon: float | None = None) -> LinearModel:
    """The solver-neutral MILP of eqs. (5)-(9) (with the tightenings of the module doc).

    ``horizon`` bounds the makespan (default: the list schedule's, else the serial bound).
    Raises ``InfeasibleError`` when the time windows already rule every schedule out.
    """
    return _build_schedule_model(problem, _analyse(problem), horizon)


def _build_schedule_model(
    problem: ScheduleProblem, an: _Analysis, horizon: float | None
) -> LinearModel:
    tasks = problem.tasks
    n = len(tasks)
    serial = max([t.release for t in tasks] + list(problem.agent_release.values()) + [0.0])
    serial += sum(t.duration + t.lag for t in tasks)
    if horizon is None:
        heur = _list_schedule(problem, an)
        horizon = heur.makespan if heur is not None else serial
    H = float(horizon)
    # latest finish: horizon, deadlines, propagated backwards through successors
    lf = [H] * n
    for i in reversed(an.order):
        t = tasks[i]
        v = H if t.deadline is None else min(H, t.deadline)
        for j in an.succ[i]:
            v = min(v, lf[j] - tasks[j].duration - t.lag)
        lf[i] = v
    lb = an.head
    ub = [lf[i] - tasks[i].duration for i in range(n)]
    for i in range(n):
        if lb[i] > ub[i] + EPS:
            raise InfeasibleError(
                f"task {tasks[i].id!r} cannot fit: earliest start {lb[i]:g} > latest {ub[i]:g}"
            )
    m = LinearModel("schedule", presolve=False)  # tight already; measured: presolve
    # doubled Gurobi's time on kitting schedules and cost HiGHS a third more
    s: list[Variable] = [
        m.add_var(_sname(t.id), lb[i], max(lb[i], ub[i])) for i, t in enumerate(tasks)
    ]
    # (6) precedence: only the direct edges (the closure follows from them)
    for i in range(n):
        for j in an.succ[i]:
            m.add_row(
                {s[j]: 1.0, s[i]: -1.0},
                Sense.GE,
                tasks[i].duration + tasks[i].lag,
                f"prec[{tasks[i].id}|{tasks[j].id}]",
            )
    # (7) one task at a time per agent; ``first_of[i, j]`` records how "i before j" is known:
    # a constant (precedence, dominance, windows) or an order binary
    by_agent = an.by_agent
    first_of: dict[tuple[int, int], _Order] = {}
    for idxs in by_agent.values():
        for i, j in itertools.combinations(idxs, 2):
            if j in an.closure_succ[i] or i in an.closure_succ[j]:
                _known(first_of, i, j, j in an.closure_succ[i])
                continue
            ti, tj = tasks[i], tasks[j]
            if ti.duration <= 0 and tj.duration <= 0:
                continue  # two instants never overlap
            can_ij = lb[i] + ti.duration <= ub[j] + EPS
            can_ji = lb[j] + tj.duration <= ub[i] + EPS
            if not can_ij and not can_ji:
                raise InfeasibleError(f"tasks {ti.id!r} and {tj.id!r} cannot both fit")
            if not can_ij:
                first: int | None = j
            elif not can_ji:
                first = i
            else:
                first = _dominance(problem, an, i, j)
            if first is not None:
                a_, b_ = (i, j) if first == i else (j, i)
                ta, tb = tasks[a_], tasks[b_]
                _known(first_of, i, j, first == i)
                if ub[a_] + ta.duration > lb[b_] + EPS:  # else always satisfied
                    m.add_row(
                        {s[b_]: 1.0, s[a_]: -1.0}, Sense.GE, ta.duration, f"seq[{ta.id}|{tb.id}]"
                    )
                continue
            if ub[i] + ti.duration <= lb[j] + EPS or ub[j] + tj.duration <= lb[i] + EPS:
                _known(first_of, i, j, ub[i] + ti.duration <= lb[j] + EPS)
                continue  # the windows already separate them
            o = m.add_binary(_oname(ti.id, tj.id))
            first_of[i, j] = (o, 1.0, 0.0)  # i before j  <=>  o = 1
            first_of[j, i] = (o, -1.0, 1.0)
            m_ij = ub[i] + ti.duration - lb[j]  # enough to relax s_j ≥ s_i + d_i
            m_ji = ub[j] + tj.duration - lb[i]
            # o = 1: i before j  (s_j - s_i + M_ij (1 - o) ≥ d_i)
            m.add_row(
                {s[j]: 1.0, s[i]: -1.0, o: -m_ij},
                Sense.GE,
                ti.duration - m_ij,
                f"dis1[{ti.id}|{tj.id}]",
            )
            # o = 0: j before i  (s_i - s_j + M_ji o ≥ d_j)
            m.add_row(
                {s[i]: 1.0, s[j]: -1.0, o: m_ji}, Sense.GE, tj.duration, f"dis2[{ti.id}|{tj.id}]"
            )
    # (9) eqs. 21-22: at least one task of each set starts at 0
    idx = {t.id: i for i, t in enumerate(tasks)}
    for k, group in enumerate(problem.start_now):
        members = sorted((idx[tid] for tid in group if lb[idx[tid]] <= EPS), key=str)
        if not members:
            raise InfeasibleError(f"no task of start_now set {sorted(group)} can start at 0")
        if any(ub[i] <= EPS for i in members):
            continue  # its window already starts that member at 0 (and a big-M of ~1e-15
            # would be a coefficient the solvers drop)
        if len(members) == 1:
            m.add_row({s[members[0]]: 1.0}, Sense.LE, 0.0, f"now[{k}]")
            continue
        bs = []
        for i in members:
            b = (
                m.add_binary(_bname(tasks[i].id))
                if not m.has_var(_bname(tasks[i].id))
                else m.var(_bname(tasks[i].id))
            )
            bs.append(b)
            m.add_row({s[i]: 1.0, b: -max(ub[i], 0.0)}, Sense.LE, 0.0, f"nowb[{k}|{tasks[i].id}]")
        m.add_row({b: 1.0 for b in bs}, Sense.LE, len(bs) - 1, f"now[{k}]")
    # (23) makespan, with critical-path and per-agent load lower bounds
    z_lb = _makespan_bound(an)
    z = m.add_var("z", z_lb, max(z_lb, H))
    for i in range(n):
        if not an.succ[i]:
            m.add_row({z: 1.0, s[i]: -1.0}, Sense.GE, tasks[i].duration, f"mk[{tasks[i].id}]")
    _add_load_cuts(m, problem, by_agent, first_of, s, z, lb)
    m.set_objective({z: 1.0})
    return m


_Order = tuple[Variable | None, float, float]
"""How "i before j" is known in the model: ``coef * var + const`` (var None: a constant)."""


def _known(first_of: dict[tuple[int, int], _Order], i: int, j: int, i_first: bool) -> None:
    first_of[i, j] = (None, 0.0, 1.0 if i_first else 0.0)
    first_of[j, i] = (None, 0.0, 0.0 if i_first else 1.0)


def _add_load_cuts(
    m: LinearModel,
    problem: ScheduleProblem,
    by_agent: Mapping[str, list[int]],
    first_of: Mapping[tuple[int, int], _Order],
    s: list[Variable],
    z: Variable,
    lb: list[float],
) -> None:
    """Sequence-load cuts: what an agent does before (after) a task fits before its start
    (after its end).

        s_i ≥ min_lb + Σ_j d_j·[j before i]      z ≥ s_i + d_i + Σ_j d_j·[i before j]

    over the agent's other tasks, with ``[·]`` an order binary or a known constant. Both
    hold in every schedule; with them the LP relaxation charges a fractional order with
    the work it puts in between, which the big-M rows alone never do (measured on
    mid-episode kitting schedules: Gurobi proved every one optimal instead of stalling at
    a 1-3 % gap for minutes; see benchmarks/bench_allocation.py). Only rows that involve
    an order binary are added.
    """
    tasks = problem.tasks
    for idxs in by_agent.values():
        busy = [i for i in idxs if tasks[i].duration > 0]
        if not busy or len(idxs) < 2:
            continue
        start = min(lb[i] for i in idxs)
        for i in idxs:
            before: dict[Variable, float] = {}
            after: dict[Variable, float] = {}
            const_before = const_after = 0.0
            complete = True
            for j in busy:
                if j == i:
                    continue
                rel = first_of.get((j, i))
                if rel is None:  # not expected: every positive pair is ordered somehow
                    complete = False
                    break
                var, coef, const = rel  # [j before i] = coef * var + const
                dj = tasks[j].duration
                const_before += dj * const
                const_after += dj * (1.0 - const)
                if var is not None:
                    before[var] = before.get(var, 0.0) + dj * coef
                    after[var] = after.get(var, 0.0) - dj * coef
            if not complete or not before:
                continue
            tid = tasks[i].id
            row = {s[i]: 1.0, **{v: -c for v, c in before.items()}}
            m.add_row(row, Sense.GE, start + const_before, f"load_before[{tid}]")
            row = {z: 1.0, s[i]: -1.0, **{v: -c for v, c in after.items()}}
            m.add_row(row, Sense.GE, tasks[i].duration + const_after, f"load_after[{tid}]")


def schedule_values(problem: ScheduleProblem, schedule: Schedule) -> dict[str, float]:
    """Model values (starts, order binaries, start-now binaries, z) of a given schedule."""
    vals = {_sname(t.id): schedule.start[t.id] for t in problem.tasks}
    for a, b in itertools.combinations(problem.tasks, 2):  # o = 1: a ends before b starts
        first = schedule.start[a.id] + a.duration <= schedule.start[b.id] + EPS
        vals[_oname(a.id, b.id)] = 1.0 if first else 0.0
    for t in problem.tasks:
        vals[_bname(t.id)] = 0.0 if schedule.start[t.id] <= EPS else 1.0
    vals["z"] = schedule.makespan
    return vals


def solve_schedule(
    problem: ScheduleProblem,
    *,
    solver: SolverName = "auto",
    options: SolveOptions | None = None,
    warm_start: Schedule | Mapping[str, float] | None = None,
    pool: SolverPool | None = None,
) -> Schedule:
    """Solve eqs. (5)-(9). Blocks for the solve.

    ``warm_start`` is a previous schedule (e.g. the last plan's, whose tasks and times
    may differ: its order is kept, see :func:`_resequence`) or model values by name. The
    solver starts from the better of that and the list schedule, whose makespan is also
    the horizon of the model's time windows and big-Ms. When that start already reaches
    the makespan's lower bound (within ``options.mip_gap``), it is the optimum and no
    solver runs: its record says solver ``"bound"``. Raises ``InfeasibleError`` or
    ``SolverLimitError``.
    """
    an = _analyse(problem)
    heur = _list_schedule(problem, an)
    candidates = [heur]
    if isinstance(warm_start, Schedule):
        candidates.append(_resequenced(problem, an, warm_start, heur))
    found = [c for c in candidates if c is not None]
    best = min(found, key=lambda c: c.makespan) if found else None
    if best is not None:
        proved = _proved_by_bound(best, _makespan_bound(an), options)
        if proved is not None:
            return _make_schedule(problem, best.start, proved)
    model = _build_schedule_model(problem, an, None if best is None else best.makespan)
    start: dict[str, float] | None = None
    if warm_start is not None and not isinstance(warm_start, Schedule):
        start = dict(warm_start)
    elif best is not None:
        start = schedule_values(problem, best)
    if start is not None:
        start = {k: v for k, v in start.items() if model.has_var(k)}
    res = solve_model(model, solver=solver, options=options, warm_start=start, pool=pool)
    starts = {t.id: max(0.0, res.values[_sname(t.id)]) for t in problem.tasks}
    return _make_schedule(problem, starts, res)


def _proved_by_bound(
    schedule: Schedule, bound: float, options: SolveOptions | None
) -> SolveResult | None:
    """The solve record of ``schedule`` when its makespan is within the requested MIP gap
    (else 1e-7) of ``bound``, a lower bound on every makespan; else ``None``."""
    gap = options.mip_gap if options is not None and options.mip_gap else 0.0
    mk = schedule.makespan
    if mk > bound + max(EPS, gap * abs(mk)):
        return None
    rel = (mk - bound) / abs(mk) if mk and mk > bound else 0.0
    return SolveResult("bound", SolveStatus.OPTIMAL, mk, rel, 0.0, {})


def check_schedule(problem: ScheduleProblem, schedule: Schedule, tol: float = 1e-5) -> list[str]:
    """Human-readable violations of eqs. (6)-(9) and (21)-(22) by ``schedule`` (empty = valid)."""
    bad: list[str] = []
    st, fi = schedule.start, schedule.finish
    for t in problem.tasks:
        if st[t.id] < t.release - tol:
            bad.append(f"{t.id} starts before its release")
        if st[t.id] < problem.agent_release.get(t.agent, 0.0) - tol:
            bad.append(f"{t.id} starts before {t.agent} is free")
        if t.deadline is not None and fi[t.id] > t.deadline + tol:
            bad.append(f"{t.id} misses its deadline")
    lag = {t.id: t.lag for t in problem.tasks}
    for a, b in problem.precedence:
        if st[b] < fi[a] + lag[a] - tol:
            bad.append(f"precedence {a}->{b} violated")
    for x, y in itertools.combinations(problem.tasks, 2):
        if x.agent != y.agent:
            continue
        # (an instant inside a task counts; two instants never overlap)
        if st[x.id] < fi[y.id] - tol and st[y.id] < fi[x.id] - tol:
            bad.append(f"{x.id} and {y.id} overlap on {x.agent}")
    for group in problem.start_now:
        if not any(st[t] <= tol for t in group):
            bad.append(f"no task of {sorted(group)} starts at 0")
    if abs(schedule.makespan - max(fi.values(), default=0.0)) > tol:
        bad.append("makespan is not the latest finish")
    return bad


def brute_force_schedule(problem: ScheduleProblem) -> Schedule:
    """Enumerate every per-agent sequence and left-justify it (tests, small instances only).

    Semi-active schedules suffice: left-shifting never breaks precedence, deadlines or a
    start at 0. Raises ``InfeasibleError`` when no sequence is feasible.
    """
    agents: dict[str, list[str]] = {}
    for t in problem.tasks:
        agents.setdefault(t.agent, []).append(t.id)
    names = list(agents)
    best: Schedule | None = None
    for perms in itertools.product(*(itertools.permutations(agents[a]) for a in names)):
        sched = _left_justify(problem, dict(zip(names, perms, strict=True)))
        if sched is None or check_schedule(problem, sched):
            continue
        if best is None or sched.makespan < best.makespan - 1e-9:
            best = sched
    if best is None:
        raise InfeasibleError("no sequence satisfies the constraints")
    return best


def _left_justify(problem: ScheduleProblem, seqs: Mapping[str, Iterable[str]]) -> Schedule | None:
    by_id = {t.id: t for t in problem.tasks}
    preds: dict[str, dict[str, float]] = {t.id: {} for t in problem.tasks}  # pred -> gap
    for seq in seqs.values():
        for a, b in itertools.pairwise(list(seq)):
            preds[b][a] = by_id[a].duration
    for a, b in problem.precedence:
        preds[b][a] = by_id[a].duration + by_id[a].lag
    start: dict[str, float] = {}
    pending = set(by_id)
    while pending:
        ready = [t for t in pending if set(preds[t]) <= set(start)]
        if not ready:
            return None  # the sequences contradict the precedence
        for tid in ready:
            t = by_id[tid]
            s = max(t.release, problem.agent_release.get(t.agent, 0.0))
            for p, gap in preds[tid].items():
                s = max(s, start[p] + gap)
            start[tid] = s
            pending.discard(tid)
    return _make_schedule(problem, start)


def critical_path_length(problem: ScheduleProblem) -> float:
    """Longest head + tail over tasks: a lower bound on any makespan."""
    an = _analyse(problem)
    return max((an.head[i] + an.tail[i] for i in range(len(problem.tasks))), default=0.0)
