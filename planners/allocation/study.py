"""The simulation study of seed 001 §VI: P_follow × P_error grid, adaptive vs non-adaptive.

``run_study`` returns one :class:`RunRecord` per episode; ``study_tables`` averages them into
rows shaped like Tables III (wrong human actions) and IV (subtasks the robot assigned to the
human), plus the human's assignments to the robot, makespan and final beliefs. The
non-adaptive planner assumes the human follows (E[α_f] = 1 in this module's convention,
where 1 means "follows"; the paper writes α_f = 0 for it) with a fixed α_e (0 or 0.35).
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

from teamtree.planners.allocation.kitting import KittingScenario
from teamtree.planners.allocation.simulation import (
    BeliefPoint,
    CobotConfig,
    EpisodeResult,
    SimulatedHuman,
    simulate_episode,
)
from teamtree.planners.allocation.solvers import SolverPool

P_FOLLOW_GRID = (0.9, 0.6, 0.3)
P_ERROR_GRID = (0.1, 0.4, 0.8)
NON_ADAPTIVE_ALPHA_E = (0.0, 0.35)
PAPER_RUNS = 15

METRICS = (
    "wrong_human_actions",
    "robot_to_human",
    "human_to_robot",
    "makespan",
    "alpha_f",
    "alpha_e",
)


@dataclass(frozen=True)
class RunRecord:
    """One episode of the study: the cell, the planner, the seed and its metrics."""

    p_follow: float
    p_error: float
    planner: str  # "adaptive" or "fixed(alpha_e=...)"
    seed: int
    wrong_human_actions: int
    robot_to_human: int
    human_to_robot: int
    makespan: float
    alpha_f: float
    alpha_e: float
    pattern_correct: bool
    solve_time: float
    #: the cobot's beliefs and C_r^h over the episode (not a CSV column: ``series_rows``)
    series: tuple[BeliefPoint, ...] = field(default=(), compare=False, metadata={"csv": False})

    def as_dict(self) -> dict[str, object]:
        """Plain values, e.g. for a CSV row (without the series)."""
        out = asdict(self)
        out.pop("series")
        return out


def planners(
    base: CobotConfig, fixed_alpha_e: Sequence[float] = NON_ADAPTIVE_ALPHA_E
) -> dict[str, CobotConfig]:
    """The adaptive planner and one non-adaptive planner per fixed α_e."""
    out = {"adaptive": replace(base, adaptive=True)}
    for ae in fixed_alpha_e:
        out[f"fixed(alpha_e={ae:g})"] = replace(
            base, adaptive=False, fixed_p_follow=1.0, fixed_p_error=ae
        )
    return out


@dataclass(frozen=True)
class StudyCase:
    """One episode to simulate: the cell, the planner's name and config, and the seed."""

    p_follow: float
    p_error: float
    planner: str
    cobot: CobotConfig
    seed: int


def study_cases(
    *,
    p_follow: Iterable[float] = P_FOLLOW_GRID,
    p_error: Iterable[float] = P_ERROR_GRID,
    runs: int = PAPER_RUNS,
    cobot: CobotConfig | None = None,
    fixed_alpha_e: Sequence[float] = NON_ADAPTIVE_ALPHA_E,
    seed: int = 0,
) -> list[StudyCase]:
    """Every cell × planner × run, in ``run_study``'s order. Runs of one cell share seeds
    across planners (common random numbers)."""
    confs = planners(cobot or CobotConfig(), fixed_alpha_e)
    out = []
    for a, pf in enumerate(p_follow):
        for b, pe in enumerate(p_error):
            for name, conf in confs.items():
                for r in range(runs):
                    s = seed * 1_000_003 + (a * 97 + b) * 10_007 + r
                    out.append(StudyCase(pf, pe, name, conf, s))
    return out


def run_case(
    case: StudyCase, scenario: KittingScenario | None = None, pool: SolverPool | None = None
) -> RunRecord:
    """Simulate one case. Blocks for the episode (in-process solves)."""
    sc = scenario or KittingScenario.default()
    human = SimulatedHuman(case.p_follow, case.p_error)
    res: EpisodeResult = simulate_episode(sc, human, case.cobot, seed=case.seed, pool=pool)
    return RunRecord(
        case.p_follow,
        case.p_error,
        case.planner,
        case.seed,
        res.wrong_human_actions,
        res.robot_to_human,
        res.human_to_robot,
        res.makespan,
        res.alpha_f,
        res.alpha_e,
        res.pattern_correct,
        res.solve_time,
        res.series,
    )


def run_study(
    *,
    scenario: KittingScenario | None = None,
    p_follow: Iterable[float] = P_FOLLOW_GRID,
    p_error: Iterable[float] = P_ERROR_GRID,
    runs: int = PAPER_RUNS,
    cobot: CobotConfig | None = None,
    fixed_alpha_e: Sequence[float] = NON_ADAPTIVE_ALPHA_E,
    seed: int = 0,
    pool: SolverPool | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[RunRecord]:
    """Simulate every cell × planner × run. Blocks for all episodes (in-process solves).

    Runs of one cell share seeds across planners (common random numbers). ``progress``
    is called with (done, total) after each episode.
    """
    sc = scenario or KittingScenario.default()
    cases = study_cases(
        p_follow=list(p_follow),
        p_error=list(p_error),
        runs=runs,
        cobot=cobot,
        fixed_alpha_e=fixed_alpha_e,
        seed=seed,
    )
    out: list[RunRecord] = []
    for case in cases:
        out.append(run_case(case, sc, pool))
        if progress is not None:
            progress(len(out), len(cases))
    return out


@dataclass(frozen=True)
class TableRow:
    """Means over the runs of one cell and planner (a cell half of Tables III / IV)."""

    p_follow: float
    p_error: float
    planner: str
    runs: int
    wrong_human_actions: float
    robot_to_human: float
    human_to_robot: float
    makespan: float
    alpha_f: float
    alpha_e: float


def study_tables(records: Sequence[RunRecord]) -> list[TableRow]:
    """Average the records per (P_follow, P_error, planner), in first-seen order."""
    groups: dict[tuple[float, float, str], list[RunRecord]] = {}
    for rec in records:
        groups.setdefault((rec.p_follow, rec.p_error, rec.planner), []).append(rec)
    rows = []
    for (pf, pe, name), recs in groups.items():
        means = {m: statistics.fmean(float(getattr(r, m)) for r in recs) for m in METRICS}
        rows.append(TableRow(pf, pe, name, len(recs), **means))
    return rows


@dataclass(frozen=True)
class SeriesRow:
    """Figs. 16 and 17 at one time: the means over the runs of a cell and planner of
    E[α_f], E[α_e] and C_r^h (each run holding its last value after it ended)."""

    p_follow: float
    p_error: float
    planner: str
    time: float
    alpha_f: float
    alpha_e: float
    robot_to_human: float


def _value_at(series: Sequence[BeliefPoint], t: float) -> BeliefPoint:
    """The last point at or before `t` (the series is a step function)."""
    k = bisect.bisect_right([p.time for p in series], t) - 1
    return series[max(k, 0)]


def series_rows(records: Sequence[RunRecord], step_s: float = 10.0) -> list[SeriesRow]:
    """Figs. 16 and 17 of the study: per cell and planner, the mean over its runs of the
    cobot's beliefs and of the subtasks it assigned to the human, every ``step_s``
    seconds from 0 to the longest run's makespan. The paper does not say what its x
    axis is; time within the episode is this reading's."""
    if step_s <= 0:
        raise ValueError(f"step_s must be > 0, not {step_s}")
    groups: dict[tuple[float, float, str], list[RunRecord]] = {}
    for rec in records:
        if rec.series:
            groups.setdefault((rec.p_follow, rec.p_error, rec.planner), []).append(rec)
    rows = []
    for (pf, pe, name), recs in groups.items():
        end = max(r.makespan for r in recs)
        for i in range(int(end // step_s) + 1):
            t = i * step_s
            points = [_value_at(r.series, t) for r in recs]
            rows.append(
                SeriesRow(
                    pf,
                    pe,
                    name,
                    t,
                    statistics.fmean(p.alpha_f for p in points),
                    statistics.fmean(p.alpha_e for p in points),
                    statistics.fmean(p.robot_to_human for p in points),
                )
            )
    return rows


def format_table(rows: Sequence[TableRow], metric: str) -> str:
    """A text table: one line per P_follow, one column per (planner, P_error), like III/IV."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {METRICS}")
    pfs = sorted({r.p_follow for r in rows}, reverse=False)
    pes = sorted({r.p_error for r in rows})
    names = list(dict.fromkeys(r.planner for r in rows))
    cell = {(r.p_follow, r.p_error, r.planner): getattr(r, metric) for r in rows}
    head = ["P_follow"] + [f"{n} Pe={pe:g}" for n in names for pe in pes]
    lines = [" | ".join(head)]
    for pf in pfs:
        vals = [f"{pf:g}"]
        for n in names:
            for pe in pes:
                v = cell.get((pf, pe, n))
                vals.append("-" if v is None else f"{v:.2f}")
        lines.append(" | ".join(vals))
    return "\n".join(lines)
