"""The allocation service's wire contract as declared types (docs/allocation.md).

Request bodies decode into msgspec Structs (typed validation; a wrong body raises
BadRequest naming the field by its path, e.g. ``problem.tasks[0].id``), then into the
planner's problems; results encode from Structs to the same plain maps as before.
The ``problem`` of a request is decoded by its form: ``schedule`` requests carry a
SchedulePart-only problem, the others ``form = "kitting"`` or ``"general"`` (default).
"""

from __future__ import annotations

import math
import re
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from teamtree.broker import (
    InfeasibleError,
    NoCapableAgentError,
    PlanningError,
    SolverLimitError,
    SpecificationError,
)
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
    SubtaskState,
    kitting_allocation_problem,
    kitting_schedule_problem,
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

T = TypeVar("T")


class BadRequest(ValueError):
    """A request body that does not match the contract; `field` names the culprit."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


# -- field types (NaN is never a number on this wire) -------------------------------

Number = Annotated[float, Meta(ge=-sys.float_info.max)]
NonNegative = Annotated[float, Meta(ge=0.0)]
Probability = Annotated[float, Meta(ge=0.0, le=1.0)]
Name = Annotated[str, Meta(min_length=1)]
Count = Annotated[int, Meta(ge=1, le=100)]


# -- request bodies ---------------------------------------------------------------------


class SolveLimits(Struct, frozen=True):
    """``options.allocation`` / ``options.schedule``; a key left out keeps the default,
    an explicit nil means no limit."""

    time_limit: Annotated[float, Meta(ge=0.001)] | UnsetType | None = UNSET
    mip_gap: Probability | UnsetType | None = UNSET


class Options(Struct, frozen=True):
    """``options``: solver choice and limits of one request."""

    solver: Literal["auto", "gurobi", "highs"] | None = None
    allocation: SolveLimits | None = None
    schedule: SolveLimits | None = None
    max_rounds: Annotated[int, Meta(ge=1, le=1000)] | None = None


class Scenario(Struct, frozen=True, forbid_unknown_fields=True):
    """``problem.scenario``: the kitting scenario; omitted = the paper's 4 × 5 kitting."""

    workspaces: Count = 4
    spots: Count = 5
    durations: dict[str, tuple[NonNegative, NonNegative]] | None = None
    assign_time: NonNegative | None = None
    assign_robot_time: NonNegative | None = None
    tray_return_time: NonNegative | None = None
    human_min_start: NonNegative | None = None
    c_h: NonNegative | None = None
    c_e: NonNegative | None = None
    c_r: NonNegative | None = None


class InProgressPart(Struct, frozen=True):
    """``problem.in_progress``: the human action under way."""

    task: Annotated[int, Meta(ge=0)]
    action: Name
    remaining: NonNegative


class KittingForm(Struct, frozen=True):
    """The kitting form: subtask states, E[α_f], E[α_e], the human action under way."""

    states: list[str]
    p_follow: Probability
    p_error: Probability
    form: Literal["kitting"] = "kitting"
    scenario: Scenario | None = None
    in_progress: InProgressPart | None = None


class SchedulePart(Struct, frozen=True):
    """Precedence, start-now groups and agent release times of a schedule problem."""

    precedence: list[tuple[str, str]] | None = None
    start_now: list[list[str]] | None = None
    agent_release: dict[str, NonNegative] | None = None


class GeneralSchedule(SchedulePart, frozen=True):
    """``problem.schedule`` of the general form (durations default to the costs)."""

    duration: list[list[NonNegative | None]] | None = None
    release: dict[str, NonNegative] | None = None
    deadline: dict[str, Number | None] | None = None


class GeneralForm(Struct, frozen=True):
    """The general form (eqs. 1-9) for n agents; a nil cost means "cannot"."""

    tasks: list[Name]
    agents: list[Name]
    cost: list[list[NonNegative | None]]
    form: Literal["general"] = "general"
    at_least_one: list[tuple[Name, list[str]]] | None = None
    excluded: list[dict[str, str]] | None = None
    tie_break: NonNegative | None = None
    schedule: GeneralSchedule | None = None


class ScheduleTaskPart(Struct, frozen=True):
    """One task of the schedule-only form."""

    id: Name
    agent: Name
    duration: NonNegative
    release: NonNegative | None = None
    deadline: Number | None = None
    lag: NonNegative | None = None


class ScheduleForm(SchedulePart, frozen=True):
    """The schedule-only form (``allocation.schedule``)."""

    tasks: list[ScheduleTaskPart] = []


class WarmSchedule(Struct, frozen=True):
    """``warm_start.schedule``: start times (and makespan) of a previous answer."""

    start: dict[str, Number]
    makespan: Number | None = None


class WarmStart(Struct, frozen=True):
    """``warm_start``: a previous answer to start the solvers from."""

    allocation: dict[str, str] | None = None
    schedule: WarmSchedule | None = None


class Request(Struct, frozen=True):
    """A request body; ``problem`` is decoded by its form (see `decode_problem`)."""

    problem: dict[str, Any]
    options: Options | None = None
    warm_start: WarmStart | None = None
    request_id: str | None = None


# -- reply bodies -----------------------------------------------------------------------


class AllocationResult(Struct, frozen=True):
    """An Allocation on the wire."""

    solver: str
    status: str
    objective: float | None
    gap: float | None
    solve_time: float
    assignment: dict[str, str]
    loads: dict[str, float]
    max_load: float


class ScheduleResult(Struct, frozen=True):
    """A Schedule on the wire."""

    solver: str
    status: str
    objective: float | None
    gap: float | None
    solve_time: float
    start: dict[str, float]
    finish: dict[str, float]
    makespan: float
    sequence: dict[str, list[str]]


class ErrorReply(Struct, frozen=True):
    """The ``allocation.error`` body."""

    error: str
    message: str
    field: str | None


# -- decoding ---------------------------------------------------------------------------

_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")


def decode(data: Any, typ: type[T], field: str) -> T:
    """`data` as a `typ`; raises BadRequest naming the field (`field` + msgspec's path)."""
    try:
        return msgspec.convert(data, typ, strict=True)
    except msgspec.ValidationError as exc:
        match = _AT.match(str(exc))
        assert match is not None
        path = (match["path"] or "").lstrip(".")
        missing = _MISSING.match(match["message"])
        if missing:
            path = f"{path}.{missing['name']}".lstrip(".")
        if path.startswith("[") or not path:
            where = f"{field}{path}"
        else:
            where = f"{field}.{path}" if field else path
        message = match["message"]
        raise BadRequest(where or "body", message[:1].lower() + message[1:]) from None


def decode_request(body: Any) -> Request:
    """A request body (a map with ``problem``); raises BadRequest."""
    if not isinstance(body, dict):
        raise BadRequest("body", f"expected a map, got {type(body).__name__}")
    return decode(body, Request, "")


@dataclass(frozen=True)
class Limits:
    """Solver choice and limits of one request (``options`` in the body)."""

    solver: str = "auto"
    allocation: SolveOptions = ALLOCATION_OPTIONS
    schedule: SolveOptions = SCHEDULE_OPTIONS
    max_rounds: int = 50


def _solve_options(part: SolveLimits | None, default: SolveOptions) -> SolveOptions:
    if part is None:
        return default
    limit = default.time_limit if part.time_limit is UNSET else part.time_limit
    gap = default.mip_gap if part.mip_gap is UNSET else part.mip_gap
    return SolveOptions(time_limit=limit, mip_gap=gap, threads=1)


def limits_of(options: Options | None) -> Limits:
    """The solver limits of a request's ``options`` (defaults where left out)."""
    if options is None:
        return Limits()
    base = Limits()
    return Limits(
        options.solver or "auto",
        _solve_options(options.allocation, base.allocation),
        _solve_options(options.schedule, base.schedule),
        options.max_rounds or 50,
    )


def parse_limits(data: Any) -> Limits:
    """``options``: ``{solver, allocation: {time_limit, mip_gap}, schedule: {...}, max_rounds}``."""
    return limits_of(None if data is None else decode(data, Options, "options"))


def _cost_matrix(
    matrix: list[list[float | None]], field: str, rows: int, cols: int
) -> list[list[float]]:
    if len(matrix) != rows:
        raise BadRequest(field, f"has {len(matrix)} rows, expected one per task ({rows})")
    for i, row in enumerate(matrix):
        if len(row) != cols:
            raise BadRequest(f"{field}[{i}]", f"has {len(row)} entries, expected {cols}")
    return [[math.inf if v is None else v for v in row] for row in matrix]


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


def scenario_of(data: Scenario | None) -> KittingScenario:
    """The KittingScenario a ``problem.scenario`` describes; cached by its description."""
    data = data or Scenario()
    key = repr(data)
    with _scenarios_lock:
        if key in _scenarios:
            return _scenarios[key]
    durations = None
    if data.durations is not None:
        durations = {}
        for w, pair in data.durations.items():
            if not w.isdigit():
                raise BadRequest(
                    f"problem.scenario.durations.{w}", "expected workspace number → [t_h, t_r]"
                )
            durations[int(w)] = (float(pair[0]), float(pair[1]))
        if sorted(durations) != list(range(1, len(durations) + 1)):
            raise BadRequest("problem.scenario.durations", "workspaces must be numbered 1..k")
    extra = {k: getattr(data, k) for k in _SCENARIO_NUMBERS if getattr(data, k) is not None}
    scenario = KittingScenario.build(data.workspaces, data.spots, durations=durations, **extra)
    with _scenarios_lock:
        _scenarios[key] = scenario
    return scenario


def parse_scenario(data: Any) -> KittingScenario:
    """``scenario``: ``{workspaces, spots, durations: {"1": [t_h, t_r], …}, assign_time, …}``;
    omitted = the paper's 4 × 5 kitting."""
    return scenario_of(None if data is None else decode(data, Scenario, "problem.scenario"))


ScheduleBuilder = Callable[[Allocation], ScheduleProblem]


def kitting_problem(form: KittingForm) -> tuple[AllocationProblem, ScheduleBuilder]:
    """The planner's problem (and schedule builder) of a kitting-form request."""
    scenario = scenario_of(form.scenario)
    if len(form.states) != scenario.n:
        raise BadRequest(
            "problem.states", f"has {len(form.states)} entries, the scenario has {scenario.n}"
        )
    try:
        states = [SubtaskState(s) for s in form.states]
    except ValueError:
        names = ", ".join(s.value for s in SubtaskState)
        raise BadRequest("problem.states", f"entries must be one of {names}") from None
    in_progress = None
    if form.in_progress is not None:
        ip = form.in_progress
        if ip.task >= scenario.n:
            raise BadRequest("problem.in_progress.task", f"expected 0..{scenario.n - 1}")
        try:
            action = HumanAction[ip.action]
        except KeyError:
            raise BadRequest("problem.in_progress.action", "expected H1..H6") from None
        in_progress = InProgress(ip.task, action, ip.remaining)
    try:
        problem = kitting_allocation_problem(
            scenario, states, form.p_follow, form.p_error, in_progress
        )
    except SpecificationError as exc:
        raise BadRequest("problem", str(exc)) from None
    return problem, lambda al: kitting_schedule_problem(scenario, states, al, in_progress)


def parse_kitting(data: Mapping[str, Any]) -> tuple[AllocationProblem, ScheduleBuilder]:
    """The kitting form from plain data; raises BadRequest."""
    return kitting_problem(decode(data, KittingForm, "problem"))


def general_problem(
    form: GeneralForm, *, need_schedule: bool
) -> tuple[AllocationProblem, ScheduleBuilder | None]:
    """The planner's problem (and schedule builder) of a general-form request."""
    tasks, agents = form.tasks, form.agents
    if not tasks or not agents:
        raise BadRequest("problem", "needs at least one task and one agent")
    cost = _cost_matrix(form.cost, "problem.cost", len(tasks), len(agents))
    at_least = tuple((agent, frozenset(ts)) for agent, ts in form.at_least_one or [])
    excluded = tuple(dict(ex) for ex in form.excluded or [])
    tie = 1e-3 if form.tie_break is None else form.tie_break
    try:
        problem = AllocationProblem(tuple(tasks), tuple(agents), cost, at_least, excluded, tie)
    except SpecificationError as exc:
        raise BadRequest("problem", str(exc)) from None
    if not need_schedule:
        return problem, None
    sched = form.schedule or GeneralSchedule()
    dur = (
        _cost_matrix(sched.duration, "problem.schedule.duration", len(tasks), len(agents))
        if sched.duration is not None
        else cost
    )
    release = sched.release or {}
    deadline = sched.deadline or {}
    base = _schedule_parts(sched)
    aidx = {a: k for k, a in enumerate(agents)}

    def build(al: Allocation) -> ScheduleProblem:
        out = []
        for i, t in enumerate(tasks):
            agent = al.assignment[t]
            d = dur[i][aidx[agent]]
            if not math.isfinite(d):
                raise BadRequest("problem.schedule.duration", f"no duration for {t!r} on {agent!r}")
            out.append(ScheduleTask(t, agent, d, release.get(t, 0.0), deadline.get(t)))
        return _make_schedule_problem(out, base, "problem.schedule")

    return problem, build


def parse_general(
    data: Mapping[str, Any], *, need_schedule: bool
) -> tuple[AllocationProblem, ScheduleBuilder | None]:
    """The general form (eqs. 1-9) from plain data; see docs/allocation.md."""
    return general_problem(decode(data, GeneralForm, "problem"), need_schedule=need_schedule)


def _schedule_parts(part: SchedulePart) -> dict[str, Any]:
    return {
        "precedence": tuple(part.precedence or ()),
        "start_now": tuple(frozenset(s) for s in part.start_now or ()),
        "agent_release": dict(part.agent_release or {}),
    }


def _make_schedule_problem(
    tasks: list[ScheduleTask], parts: Mapping[str, Any], field: str
) -> ScheduleProblem:
    try:
        return ScheduleProblem(tuple(tasks), **parts)
    except SpecificationError as exc:
        raise BadRequest(field, str(exc)) from None


def schedule_problem(form: ScheduleForm) -> ScheduleProblem:
    """The planner's problem of a schedule-only request."""
    tasks = [
        ScheduleTask(t.id, t.agent, t.duration, t.release or 0.0, t.deadline, t.lag or 0.0)
        for t in form.tasks
    ]
    if not tasks:
        raise BadRequest("problem.tasks", "is empty")
    return _make_schedule_problem(tasks, _schedule_parts(form), "problem")


def parse_schedule(data: Mapping[str, Any]) -> ScheduleProblem:
    """The schedule-only form: ``{tasks: [{id, agent, duration, release, deadline, lag}],
    …}``."""
    return schedule_problem(decode(data, ScheduleForm, "problem"))


def problem_form(problem: Mapping[str, Any]) -> str:
    """``problem.form`` ("general" when left out); raises BadRequest for another."""
    form = problem.get("form")
    form = "general" if form is None else form
    if form not in ("kitting", "general"):
        raise BadRequest("problem.form", f"{form!r} is not 'kitting' or 'general'")
    return form


def warm_of(warm: WarmStart | None) -> tuple[dict[str, str] | None, Schedule | None]:
    """The warm start of a request: an assignment and/or a schedule (start times)."""
    if warm is None:
        return None, None
    sched = None
    if warm.schedule is not None:
        start = dict(warm.schedule.start)
        makespan = warm.schedule.makespan
        if makespan is None:
            makespan = max(start.values(), default=0.0)
        sched = Schedule(start, {}, makespan, {})
    return warm.allocation, sched


# -- encoding results -------------------------------------------------------------------


def _result_fields(result: SolveResult | None) -> dict[str, Any]:
    if result is None:
        return {"solver": "none", "status": "optimal", "gap": 0.0, "solve_time": 0.0}
    return {
        "solver": result.solver,
        "status": result.status.value,
        "gap": result.gap,
        "solve_time": result.solve_time,
    }


def allocation_result(al: Allocation) -> AllocationResult:
    """An Allocation as its wire type."""
    return AllocationResult(
        **_result_fields(al.result),
        objective=al.objective,
        assignment=dict(al.assignment),
        loads=dict(al.loads),
        max_load=al.max_load,
    )


def schedule_result(s: Schedule) -> ScheduleResult:
    """A Schedule as its wire type."""
    return ScheduleResult(
        **_result_fields(s.result),
        objective=s.makespan if s.result is None else s.result.objective,
        start=dict(s.start),
        finish=dict(s.finish),
        makespan=s.makespan,
        sequence={a: list(seq) for a, seq in s.sequence.items()},
    )


def allocation_body(al: Allocation) -> dict[str, Any]:
    """An Allocation as plain data."""
    return msgspec.structs.asdict(allocation_result(al))


def schedule_body(s: Schedule) -> dict[str, Any]:
    """A Schedule as plain data."""
    return msgspec.structs.asdict(schedule_result(s))


def schedule_from_body(body: Mapping[str, Any]) -> Schedule:
    """A reply's ``schedule`` back as a Schedule (no solve record)."""
    return Schedule(
        dict(body["start"]),
        dict(body["finish"]),
        float(body["makespan"]),
        {a: tuple(seq) for a, seq in body["sequence"].items()},
    )


def error_body(exc: BaseException) -> dict[str, Any]:
    """The ``allocation.error`` body for a failed request."""
    if isinstance(exc, BadRequest):
        reply = ErrorReply("bad_request", str(exc), exc.field)
    else:
        code = {
            InfeasibleError: "infeasible",
            SolverLimitError: "solver_limit",
            NoCapableAgentError: "no_capable_agent",
            SpecificationError: "bad_request",
            TimeoutError: "deadline",
        }.get(type(exc))
        if code is None:
            code = "planning" if isinstance(exc, PlanningError) else "internal"
        reply = ErrorReply(code, str(exc) or type(exc).__name__, None)
    return msgspec.structs.asdict(reply)
