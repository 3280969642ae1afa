"""The allocation service: seed 001's allocation and scheduling MILPs behind request/reply.

Requests arrive on the team channel ``_/allocation`` (kinds ``allocation.solve``,
``allocation.allocate``, ``allocation.schedule``); each is answered on
``<service>/reply/<requester>`` with ``allocation.result`` or ``allocation.error``. The
wire contract (bodies, forms, error codes) is in docs/allocation.md.

Solves run in worker threads (``workers``, default 1) so heartbeats and presence keep
flowing, and each solve is bounded by the time left before the request's deadline.
With ``shared = true`` the service joins the shared subscription
``$share/<group>/…`` so replicas split the requests (mosquitto), and connects with a
clean session so a dead replica's share goes to the live ones once the broker notices
(1.5 × keepalive). Requests that carry a
``request_id`` are idempotent: a retry (same requester and id) gets the answer of the
first attempt, computed once. ``request_allocation`` is the requester's side of that.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from teamtree.agents.allocation.params import AllocatorParams
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.broker import (
    InfeasibleError,
    NoCapableAgentError,
    PlanningError,
    RequestError,
    RequestTimeoutError,
    SolverLimitError,
    SpecificationError,
)
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic
from teamtree.planners.allocation import (
    Allocation,
    AllocationProblem,
    HumanAction,
    InProgress,
    KittingScenario,
    Schedule,
    ScheduleProblem,
    ScheduleTask,
    SolveOptions,
    SolverPool,
    SolveStatus,
    SubtaskState,
    kitting_allocation_problem,
    kitting_schedule_problem,
    solve_allocation,
    solve_schedule,
)
from teamtree.planners.allocation.model import SolveResult

CHANNEL = "allocation"
SOLVE = "allocation.solve"
ALLOCATE = "allocation.allocate"
SCHEDULE = "allocation.schedule"
REQUEST_KINDS = (SOLVE, ALLOCATE, SCHEDULE)
RESULT = "allocation.result"
ERROR = "allocation.error"

#: the paper's limits (docs/scenarios.md): allocation 3 s; schedule 4 s with relative gap 0.004
DEFAULT_ALLOCATION_LIMIT = 3.0
DEFAULT_SCHEDULE_LIMIT = 4.0
DEFAULT_SCHEDULE_GAP = 0.004
ALLOCATION_OPTIONS = SolveOptions(time_limit=DEFAULT_ALLOCATION_LIMIT)
SCHEDULE_OPTIONS = SolveOptions(time_limit=DEFAULT_SCHEDULE_LIMIT, mip_gap=DEFAULT_SCHEDULE_GAP)
SOLVERS = ("auto", "gurobi", "highs")
MIN_BUDGET_S = 0.02  # below this, a solve is not attempted ("deadline" error)
SOLVE_SHARE = 0.85  # of the time left, what a solver's time limit may take


class BadRequest(ValueError):
    """A request body that does not match the contract; `field` names the culprit."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class AllocationRefused(RequestError):
    """The service answered ``allocation.error``; `code`, `field` and `replica` say why."""

    def __init__(self, body: Mapping[str, Any], *, replica: str):
        self.code = str(body.get("error", "unknown"))
        self.field = body.get("field")
        self.replica = replica
        self.body = dict(body)
        super().__init__(
            f"allocation service {replica!r} refused ({self.code}): {body.get('message', '')}",
            kind=ERROR,
        )


# -- parsing plain data --------------------------------------------------------------


def _map(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(field, f"expected a map, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise BadRequest(field, f"expected a list, got {type(value).__name__}")
    return list(value)


def _num(value: Any, field: str, *, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise BadRequest(field, f"expected a number, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BadRequest(field, f"{value!r} is outside [{lo}, {hi}]")
    return float(value)


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(field, f"expected a non-empty string, got {value!r}")
    return value


def _opt(body: Mapping[str, Any], key: str, default: Any) -> Any:
    value = body.get(key)
    return default if value is None else value


@dataclass(frozen=True)
class Limits:
    """Solver choice and limits of one request (``options`` in the body)."""

    solver: str = "auto"
    allocation: SolveOptions = ALLOCATION_OPTIONS
    schedule: SolveOptions = SCHEDULE_OPTIONS
    max_rounds: int = 50


def _solve_options(data: Any, field: str, default: SolveOptions) -> SolveOptions:
    if data is None:
        return default
    data = _map(data, field)
    limit = data.get("time_limit", default.time_limit)
    gap = data.get("mip_gap", default.mip_gap)
    return SolveOptions(
        time_limit=None if limit is None else _num(limit, f"{field}.time_limit", lo=0.001),
        mip_gap=None if gap is None else _num(gap, f"{field}.mip_gap", lo=0.0, hi=1.0),
        threads=1,
    )


def parse_limits(data: Any) -> Limits:
    """``options``: ``{solver, allocation: {time_limit, mip_gap}, schedule: {...}, max_rounds}``."""
    if data is None:
        return Limits()
    data = _map(data, "options")
    solver = _opt(data, "solver", "auto")
    if solver not in SOLVERS:
        raise BadRequest("options.solver", f"{solver!r} is not one of {', '.join(SOLVERS)}")
    rounds = _opt(data, "max_rounds", 50)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 1000:
        raise BadRequest("options.max_rounds", f"expected a whole number 1-1000, got {rounds!r}")
    base = Limits()
    return Limits(
        solver,
        _solve_options(data.get("allocation"), "options.allocation", base.allocation),
        _solve_options(data.get("schedule"), "options.schedule", base.schedule),
        rounds,
    )


def _cost_matrix(data: Any, field: str, rows: int, cols: int) -> list[list[float]]:
    matrix = _list(data, field)
    if len(matrix) != rows:
        raise BadRequest(field, f"has {len(matrix)} rows, expected one per task ({rows})")
    out = []
    for i, row in enumerate(matrix):
        row = _list(row, f"{field}[{i}]")
        if len(row) != cols:
            raise BadRequest(f"{field}[{i}]", f"has {len(row)} entries, expected {cols}")
        out.append(
            [
                math.inf if v is None else _num(v, f"{field}[{i}][{k}]", lo=0.0)
                for k, v in enumerate(row)
            ]
        )
    return out


_SCENARIO_NUMBERS = (
    "assign_time",
    "assign_robot_time",
    "tray_return_time",
    "human_min_start",
    "c_h",
    "c_e",
    "c_r",
)
_scenarios: dict[str, KittingScenario] = {}
_scenarios_lock = threading.Lock()


def parse_scenario(data: Any) -> KittingScenario:
    """``scenario``: ``{workspaces, spots, durations: {"1": [t_h, t_r], …}, assign_time, …}``;
    omitted = the paper's 4 × 5 kitting. Built scenarios are cached by their description."""
    if data is None:
        data = {}
    data = _map(data, "problem.scenario")
    key = repr(sorted(data.items()))
    with _scenarios_lock:
        if key in _scenarios:
            return _scenarios[key]
    ws = data.get("workspaces", 4)
    sp = data.get("spots", 5)
    for name, v in (("workspaces", ws), ("spots", sp)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100:
            raise BadRequest(
                f"problem.scenario.{name}", f"expected a whole number 1-100, got {v!r}"
            )
    durations = None
    if data.get("durations") is not None:
        durations = {}
        for w, pair in _map(data["durations"], "problem.scenario.durations").items():
            f = f"problem.scenario.durations.{w}"
            pair = _list(pair, f)
            if not str(w).isdigit() or len(pair) != 2:
                raise BadRequest(f, "expected workspace number → [t_human, t_robot]")
            durations[int(w)] = (_num(pair[0], f, lo=0.0), _num(pair[1], f, lo=0.0))
        if sorted(durations) != list(range(1, len(durations) + 1)):
            raise BadRequest("problem.scenario.durations", "workspaces must be numbered 1..k")
    extra = {
        k: _num(data[k], f"problem.scenario.{k}", lo=0.0)
        for k in _SCENARIO_NUMBERS
        if data.get(k) is not None
    }
    unknown = set(data) - {"workspaces", "spots", "durations", *_SCENARIO_NUMBERS}
    if unknown:
        raise BadRequest("problem.scenario", f"unknown key(s) {', '.join(sorted(unknown))}")
    scenario = KittingScenario.build(ws, sp, durations=durations, **extra)
    with _scenarios_lock:
        _scenarios[key] = scenario
    return scenario


ScheduleBuilder = Callable[[Allocation], ScheduleProblem]


def parse_kitting(data: Mapping[str, Any]) -> tuple[AllocationProblem, ScheduleBuilder]:
    """The kitting form: subtask states, E[α_f], E[α_e], the human action under way."""
    scenario = parse_scenario(data.get("scenario"))
    states_raw = _list(data.get("states"), "problem.states")
    if len(states_raw) != scenario.n:
        raise BadRequest(
            "problem.states", f"has {len(states_raw)} entries, the scenario has {scenario.n}"
        )
    try:
        states = [SubtaskState(s) for s in states_raw]
    except ValueError:
        names = ", ".join(s.value for s in SubtaskState)
        raise BadRequest("problem.states", f"entries must be one of {names}") from None
    p_follow = _num(data.get("p_follow"), "problem.p_follow", lo=0.0, hi=1.0)
    p_error = _num(data.get("p_error"), "problem.p_error", lo=0.0, hi=1.0)
    in_progress = None
    if data.get("in_progress") is not None:
        ip = _map(data["in_progress"], "problem.in_progress")
        task = ip.get("task")
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < scenario.n:
            raise BadRequest("problem.in_progress.task", f"expected 0..{scenario.n - 1}")
        try:
            action = HumanAction[_str(ip.get("action"), "problem.in_progress.action")]
        except KeyError:
            raise BadRequest("problem.in_progress.action", "expected H1..H6") from None
        remaining = _num(ip.get("remaining"), "problem.in_progress.remaining", lo=0.0)
        in_progress = InProgress(task, action, remaining)
    try:
        problem = kitting_allocation_problem(scenario, states, p_follow, p_error, in_progress)
    except SpecificationError as exc:
        raise BadRequest("problem", str(exc)) from None
    return problem, lambda al: kitting_schedule_problem(scenario, states, al, in_progress)


def parse_general(
    data: Mapping[str, Any], *, need_schedule: bool
) -> tuple[AllocationProblem, ScheduleBuilder | None]:
    """The general form (eqs. 1-9) for n agents; see docs/allocation.md."""
    tasks = [
        _str(t, f"problem.tasks[{i}]")
        for i, t in enumerate(_list(data.get("tasks"), "problem.tasks"))
    ]
    agents = [
        _str(a, f"problem.agents[{i}]")
        for i, a in enumerate(_list(data.get("agents"), "problem.agents"))
    ]
    if not tasks or not agents:
        raise BadRequest("problem", "needs at least one task and one agent")
    cost = _cost_matrix(data.get("cost"), "problem.cost", len(tasks), len(agents))
    at_least = []
    for k, pair in enumerate(_list(_opt(data, "at_least_one", []), "problem.at_least_one")):
        pair = _list(pair, f"problem.at_least_one[{k}]")
        if len(pair) != 2:
            raise BadRequest(f"problem.at_least_one[{k}]", "expected [agent, [tasks]]")
        at_least.append(
            (
                _str(pair[0], f"problem.at_least_one[{k}]"),
                frozenset(_list(pair[1], f"problem.at_least_one[{k}][1]")),
            )
        )
    excluded = []
    for k, ex in enumerate(_list(_opt(data, "excluded", []), "problem.excluded")):
        excluded.append({str(t): str(a) for t, a in _map(ex, f"problem.excluded[{k}]").items()})
    tie = _num(_opt(data, "tie_break", 1e-3), "problem.tie_break", lo=0.0)
    try:
        problem = AllocationProblem(
            tuple(tasks), tuple(agents), cost, tuple(at_least), tuple(excluded), tie
        )
    except SpecificationError as exc:
        raise BadRequest("problem", str(exc)) from None
    if not need_schedule:
        return problem, None
    sched = _map(_opt(data, "schedule", {}), "problem.schedule")
    dur = (
        _cost_matrix(sched["duration"], "problem.schedule.duration", len(tasks), len(agents))
        if sched.get("duration") is not None
        else cost
    )
    release = _map(_opt(sched, "release", {}), "problem.schedule.release")
    deadline = _map(_opt(sched, "deadline", {}), "problem.schedule.deadline")
    base = _schedule_parts(sched, "problem.schedule")
    aidx = {a: k for k, a in enumerate(agents)}

    def build(al: Allocation) -> ScheduleProblem:
        out = []
        for i, t in enumerate(tasks):
            agent = al.assignment[t]
            d = dur[i][aidx[agent]]
            if not math.isfinite(d):
                raise BadRequest("problem.schedule.duration", f"no duration for {t!r} on {agent!r}")
            out.append(
                ScheduleTask(
                    t,
                    agent,
                    d,
                    _num(release.get(t, 0.0), f"problem.schedule.release.{t}", lo=0.0),
                    None
                    if deadline.get(t) is None
                    else _num(deadline[t], f"problem.schedule.deadline.{t}"),
                )
            )
        return _make_schedule_problem(out, base, "problem.schedule")

    return problem, build


def _schedule_parts(data: Mapping[str, Any], field: str) -> dict[str, Any]:
    prec = []
    for k, pair in enumerate(_list(_opt(data, "precedence", []), f"{field}.precedence")):
        pair = _list(pair, f"{field}.precedence[{k}]")
        if len(pair) != 2:
            raise BadRequest(f"{field}.precedence[{k}]", "expected [before, after]")
        prec.append((str(pair[0]), str(pair[1])))
    start_now = [
        frozenset(str(t) for t in _list(s, f"{field}.start_now[{k}]"))
        for k, s in enumerate(_list(_opt(data, "start_now", []), f"{field}.start_now"))
    ]
    release = {
        str(a): _num(v, f"{field}.agent_release.{a}", lo=0.0)
        for a, v in _map(_opt(data, "agent_release", {}), f"{field}.agent_release").items()
    }
    return {"precedence": tuple(prec), "start_now": tuple(start_now), "agent_release": release}


def _make_schedule_problem(
    tasks: list[ScheduleTask], parts: Mapping[str, Any], field: str
) -> ScheduleProblem:
    try:
        return ScheduleProblem(tuple(tasks), **parts)
    except SpecificationError as exc:
        raise BadRequest(field, str(exc)) from None


def parse_schedule(data: Mapping[str, Any]) -> ScheduleProblem:
    """The schedule-only form: ``{tasks: [{id, agent, duration, release, deadline, lag}],
    …}``."""
    tasks = []
    for k, t in enumerate(_list(data.get("tasks"), "problem.tasks")):
        t = _map(t, f"problem.tasks[{k}]")
        f = f"problem.tasks[{k}]"
        tasks.append(
            ScheduleTask(
                _str(t.get("id"), f"{f}.id"),
                _str(t.get("agent"), f"{f}.agent"),
                _num(t.get("duration"), f"{f}.duration", lo=0.0),
                _num(_opt(t, "release", 0.0), f"{f}.release", lo=0.0),
                None if t.get("deadline") is None else _num(t["deadline"], f"{f}.deadline"),
                _num(_opt(t, "lag", 0.0), f"{f}.lag", lo=0.0),
            )
        )
    if not tasks:
        raise BadRequest("problem.tasks", "is empty")
    return _make_schedule_problem(tasks, _schedule_parts(data, "problem"), "problem")


def _warm(body: Mapping[str, Any]) -> tuple[dict[str, str] | None, Schedule | None]:
    warm = body.get("warm_start")
    if warm is None:
        return None, None
    warm = _map(warm, "warm_start")
    alloc = None
    if warm.get("allocation") is not None:
        alloc = {
            str(t): str(a) for t, a in _map(warm["allocation"], "warm_start.allocation").items()
        }
    sched = None
    if warm.get("schedule") is not None:
        s = _map(warm["schedule"], "warm_start.schedule")
        start = {
            str(t): _num(v, f"warm_start.schedule.start.{t}")
            for t, v in _map(s.get("start"), "warm_start.schedule.start").items()
        }
        makespan = _num(
            _opt(s, "makespan", max(start.values(), default=0.0)), "warm_start.schedule.makespan"
        )
        sched = Schedule(start, {}, makespan, {})
    return alloc, sched


# -- encoding results ------------------------------------------------------------


def _result_fields(result: SolveResult | None) -> dict[str, Any]:
    if result is None:
        return {"solver": "none", "status": "optimal", "gap": 0.0, "solve_time": 0.0}
    return {
        "solver": result.solver,
        "status": result.status.value,
        "objective": result.objective,
        "gap": result.gap,
        "solve_time": result.solve_time,
    }


def allocation_body(al: Allocation) -> dict[str, Any]:
    """An Allocation as plain data."""
    return {
        **_result_fields(al.result),
        "objective": al.objective,
        "assignment": dict(al.assignment),
        "loads": dict(al.loads),
        "max_load": al.max_load,
    }


def schedule_body(s: Schedule) -> dict[str, Any]:
    """A Schedule as plain data."""
    return {
        **_result_fields(s.result),
        "objective": s.makespan if s.result is None else s.result.objective,
        "start": dict(s.start),
        "finish": dict(s.finish),
        "makespan": s.makespan,
        "sequence": {a: list(seq) for a, seq in s.sequence.items()},
    }


def schedule_from_body(body: Mapping[str, Any]) -> Schedule:
    """A reply's ``schedule`` back as a Schedule (no solve record)."""
    return Schedule(
        dict(body["start"]),
        dict(body["finish"]),
        float(body["makespan"]),
        {a: tuple(seq) for a, seq in body["sequence"].items()},
    )


# -- solving ----------------------------------------------------------------------


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

    body = _map(body, "body")
    limits = parse_limits(body.get("options"))
    problem_data = _map(body.get("problem"), "problem")
    warm_alloc, warm_sched = _warm(body)
    solver: Any = limits.solver
    if kind == SCHEDULE:
        sp = parse_schedule(problem_data)
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
    form = _opt(problem_data, "form", "general")
    if form == "kitting":
        problem, build = parse_kitting(problem_data)
    elif form == "general":
        problem, build = parse_general(problem_data, need_schedule=kind == SOLVE)
    else:
        raise BadRequest("problem.form", f"{form!r} is not 'kitting' or 'general'")
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


def error_body(exc: BaseException) -> dict[str, Any]:
    """The ``allocation.error`` body for a failed request."""
    if isinstance(exc, BadRequest):
        return {"error": "bad_request", "message": str(exc), "field": exc.field}
    code = {
        InfeasibleError: "infeasible",
        SolverLimitError: "solver_limit",
        NoCapableAgentError: "no_capable_agent",
        SpecificationError: "bad_request",
        TimeoutError: "deadline",
    }.get(type(exc))
    if code is None:
        code = "planning" if isinstance(exc, PlanningError) else "internal"
    return {"error": code, "message": str(exc) or type(exc).__name__, "field": None}


# -- the service --------------------------------------------------------------------


class AllocatorAgent(Agent):
    """Serve ``allocation.*`` requests; see the module docstring."""

    kind = "allocator"

    def __init__(
        self,
        *args: Any,
        shared: bool = False,
        group: str = "allocators",
        workers: int = 1,
        cache_size: int = 512,
        margin_ms: int = 30,
        **kwargs: Any,
    ):
        # A replica's subscription must die with it: with a persistent session the
        # broker keeps routing its share of the requests to the dead session's queue.
        kwargs.setdefault("clean_session", shared)
        super().__init__(*args, **kwargs)
        self.shared = shared
        self.group = group
        self.workers = workers
        self.cache_size = cache_size
        self.margin_ms = margin_ms
        self._executor: ThreadPoolExecutor | None = None
        self._slots: asyncio.Semaphore | None = None
        self._local = threading.local()
        self._done: OrderedDict[tuple[str, str], tuple[str, dict[str, Any]]] = OrderedDict()
        self._inflight: dict[
            tuple[str, str], asyncio.Future[tuple[str, dict[str, Any]] | None]
        ] = {}

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``shared``, ``group``, ``workers``, ``cache_size``, ``margin_ms``."""
        return params_dict(decode_params(spec, config, AllocatorParams))

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "channel": CHANNEL,
            "requests": list(REQUEST_KINDS),
            "shared": self.group if self.shared else None,
            "workers": self.workers,
        }

    async def setup(self) -> None:
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=f"solve-{self.id}")
        self._slots = asyncio.Semaphore(self.workers)
        share = self.group if self.shared else None
        for kind in REQUEST_KINDS:
            self.on_team(CHANNEL, self._on_request, kind=kind, share=share)

    async def on_stop(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _pool(self) -> SolverPool:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = SolverPool()
        return pool

    def _solve_blocking(self, kind: str, body: Any, budget: float) -> tuple[str, dict[str, Any]]:
        try:
            return RESULT, solve_request(kind, body, budget, self._pool())
        except (BadRequest, PlanningError, TimeoutError) as exc:
            return ERROR, error_body(exc)
        except Exception as exc:  # a solver bug must not take the service down
            self.log.error("allocation.solver_failed", error=repr(exc), exc_info=True)
            return ERROR, error_body(exc)

    async def _on_request(self, env: Envelope, topic: Topic) -> None:
        if env.reply_to is None or env.corr is None:
            self.stats["allocation.unaddressed"] += 1
            self.log.warning("allocation.no_reply_address", sender=env.sender, kind=env.kind)
            return
        self.spawn(self._serve(env), "serve")

    async def _serve(self, env: Envelope) -> None:
        received = time.monotonic()
        rid = env.body.get("request_id") if isinstance(env.body, dict) else None
        key = (env.sender, rid) if isinstance(rid, str) and rid else None
        if key is not None and key in self._done:
            self.stats["allocation.cached"] += 1
            kind, body = self._done[key]
            await self.reply(env, kind, body)
            return
        if key is not None and key in self._inflight:
            self.stats["allocation.joined"] += 1
            joined = await asyncio.shield(self._inflight[key])
            if joined is not None:  # None: the first attempt expired unanswered
                await self.reply(env, *joined)
            return
        future: asyncio.Future[tuple[str, dict[str, Any]] | None] = (
            asyncio.get_running_loop().create_future()
        )
        if key is not None:
            self._inflight[key] = future
        try:
            answer = await self._compute(env, received)
            future.set_result(answer)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: joiners re-raise it
            raise
        finally:
            if key is not None:
                self._inflight.pop(key, None)
        if answer is None:
            return
        kind, body = answer
        if key is not None and self.cache_size and body.get("error") != "deadline":
            self._done[key] = answer
            while len(self._done) > self.cache_size:
                self._done.popitem(last=False)
        await self.reply(env, kind, body)

    async def _compute(self, env: Envelope, received: float) -> tuple[str, dict[str, Any]] | None:
        assert self._slots is not None and self._executor is not None
        async with self._slots:
            queued = time.monotonic() - received
            budget = None
            if env.deadline is not None:
                budget = (env.deadline - wall_ms() - self.margin_ms) / 1000.0
                if budget <= 0:
                    self.stats["allocation.expired"] += 1
                    self.log.warning(
                        "allocation.expired", sender=env.sender, corr=env.corr, queued_s=queued
                    )
                    return None
            loop = asyncio.get_running_loop()
            t0 = time.monotonic()
            kind, body = await loop.run_in_executor(
                self._executor,
                self._solve_blocking,
                env.kind,
                env.body,
                budget if budget is not None else 3600.0,
            )
        service = time.monotonic() - t0
        rid = env.body.get("request_id") if isinstance(env.body, dict) else None
        body = {
            **body,
            "request_id": rid if isinstance(rid, str) else None,
            "replica": self.id,
            "timing": {"queued_s": queued, "service_s": service},
        }
        self.stats[f"allocation.{'answered' if kind == RESULT else 'refused'}"] += 1
        if kind == RESULT:
            self.log.info(
                "allocation.answered",
                kind=env.kind,
                requester=env.sender,
                solver=body.get("solver"),
                status=body.get("status"),
                solve_s=round(body.get("solve_time", 0.0), 4),
                service_s=round(service, 4),
            )
        else:
            self.log.warning(
                "allocation.refused",
                kind=env.kind,
                requester=env.sender,
                error=body["error"],
                field=body.get("field"),
                detail=body.get("message"),
            )
        return kind, body


# -- the requester's side --------------------------------------------------------------


async def request_allocation(
    agent: Agent,
    kind: str,
    body: Mapping[str, Any],
    *,
    timeout: float,
    attempts: int = 3,
    request_id: str | None = None,
    to: str | None = None,
) -> Envelope:
    """Ask the allocation service; returns the ``allocation.result`` envelope.

    Every attempt carries the same ``request_id`` (made here unless given), so a retry
    after a timeout is answered once even if the first attempt is still being solved by
    a replica that is alive. Blocks up to ``attempts × timeout`` seconds. Raises
    AllocationRefused for an ``allocation.error`` reply, RequestTimeoutError when no
    attempt was answered, ConnectionLostError if the connection drops.
    """
    if kind not in REQUEST_KINDS:
        raise ValueError(f"unknown allocation request kind {kind!r}")
    payload = {**body, "request_id": request_id or uuid.uuid4().hex}
    last: RequestTimeoutError | None = None
    for attempt in range(attempts):
        try:
            reply = await agent.request(CHANNEL, kind, payload, to=to, timeout=timeout)
        except RequestTimeoutError as exc:
            last = exc
            agent.stats["allocation.retries"] += 1
            agent.log.warning(
                "allocation.retry", request_id=payload["request_id"], attempt=attempt + 1
            )
            continue
        if reply.kind == ERROR:
            raise AllocationRefused(reply.body or {}, replica=reply.sender)
        return reply
    raise RequestTimeoutError(
        f"no allocation service answered {kind!r} in {attempts} attempt(s) of {timeout} s",
        kind=kind,
    ) from last
