"""``teamtree study kitting`` (seed 001's simulation study, §VI, Tables III and IV),
``teamtree study hospital`` (seed 003's adversarial study, ``study_hospital``),
``teamtree study factory`` (seed 002's working modes, ``study_factory``),
``teamtree study kitting-offline`` (seed 001 §V.3, ``study_offline``) and
``teamtree allocator`` (the allocation service on its own, without a config).

The study runs the P_follow × P_error grid, the adaptive planner against non-adaptive
ones, N runs each, in-process (``planners.allocation``'s study cases, optionally over
several processes); prints the tables, and writes ``runs.csv``, ``tables.csv`` and
``study.png`` to ``--out``. It does not touch the broker.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from teamtree.agents.allocation.allocator import AllocatorAgent
from teamtree.agents.cli.args import log_flags
from teamtree.agents.cli.args import seconds as _seconds
from teamtree.agents.cli.study_factory import register_factory, run_factory_study
from teamtree.agents.cli.study_hospital import register_hospital, run_hospital_study
from teamtree.agents.cli.study_offline import register_offline, run_offline_study
from teamtree.agents.cli.study_output import Progress, write_csv
from teamtree.agents.cli.study_series import plot_assigned, plot_beliefs
from teamtree.agents.runtime.config import RuntimeSettings
from teamtree.broker import ConfigError, TopicError
from teamtree.broker.endpoint import parse_endpoint
from teamtree.broker.topics import validate_id
from teamtree.planners.allocation import (
    P_ERROR_GRID,
    P_FOLLOW_GRID,
    PAPER_RUNS,
    BeliefConfig,
    CobotConfig,
    KittingScenario,
    RunRecord,
    SolveOptions,
    StudyCase,
    TableRow,
    format_directions,
    format_table,
    run_case,
    series_rows,
    side_by_side,
    study_cases,
    study_tables,
)

Handler = Callable[[argparse.Namespace], Awaitable[int]]

TABLES = (
    ("wrong_human_actions", "Table III: wrong human actions"),
    ("robot_to_human", "Table IV: subtasks the robot assigned to the human"),
    ("human_to_robot", "Subtasks the human assigned to the robot"),
    ("makespan", "Makespan (s)"),
    ("alpha_f", "Final E[alpha_f]"),
    ("alpha_e", "Final E[alpha_e]"),
)


def _floats(lo: float, hi: float) -> Callable[[str], tuple[float, ...]]:
    def parse(value: str) -> tuple[float, ...]:
        try:
            out = tuple(float(v) for v in value.split(",") if v.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list") from None
        if not out or any(not lo <= v <= hi for v in out):
            raise argparse.ArgumentTypeError(f"{value!r}: every value must be in [{lo}, {hi}]")
        return out

    return parse


def _count(lo: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        if not value.isdigit() or int(value) < lo:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number ≥ {lo}")
        return int(value)

    return parse


def register(subparsers: argparse._SubParsersAction) -> dict[str, Handler]:  # type: ignore[type-arg]
    """Add ``study`` (its kitting, hospital, factory and offline studies) to the CLI; returns
    {command: handler}."""
    study = subparsers.add_parser(
        "study",
        help="reproduce a paper's simulation study",
        description="Reproduce a paper's simulation study in-process (no broker).",
    )
    which = study.add_subparsers(dest="study", metavar="STUDY", required=True)
    k = which.add_parser(
        "kitting",
        help="seed 001 §VI: adaptive vs non-adaptive over P_follow x P_error",
        description="Simulate the kitting study of seed 001 (§VI): every P_follow x P_error "
        "cell, the adaptive planner and non-adaptive ones that assume the human follows, "
        "N runs each; print tables like III and IV plus makespan and final beliefs; write "
        "runs.csv, tables.csv, study.png, series.csv and Figs. 16 and 17 (beliefs.png, "
        "assigned.png) to --out.",
    )
    k.add_argument(
        "--runs", type=_count(1), default=PAPER_RUNS,
        help=f"runs per cell and planner (default: the paper's {PAPER_RUNS})",
    )  # fmt: skip
    k.add_argument(
        "--p-follow", type=_floats(0, 1), default=P_FOLLOW_GRID, metavar="LIST",
        help="P_follow values, comma-separated (default: 0.9,0.6,0.3)",
    )  # fmt: skip
    k.add_argument(
        "--p-error", type=_floats(0, 1), default=P_ERROR_GRID, metavar="LIST",
        help="P_error values, comma-separated (default: 0.1,0.4,0.8)",
    )  # fmt: skip
    k.add_argument(
        "--fixed-alpha-e", type=_floats(0, 1), default=(0.0, 0.35), metavar="LIST",
        help="alpha_e of each non-adaptive planner (default: 0,0.35)",
    )  # fmt: skip
    k.add_argument("--seed", type=_count(0), default=0, help="base seed (default: 0)")
    k.add_argument(
        "--solver", choices=["auto", "gurobi", "highs"], default="auto",
        help="MILP backend (default: auto = Gurobi within its pip licence, else HiGHS)",
    )  # fmt: skip
    k.add_argument(
        "--allocation-time-limit", type=_seconds, default=3.0, metavar="S",
        help="allocation MILP time limit (default: the paper's 3 s)",
    )  # fmt: skip
    k.add_argument(
        "--schedule-time-limit", type=_seconds, default=4.0, metavar="S",
        help="scheduling MILP time limit (default: the paper's 4 s)",
    )  # fmt: skip
    k.add_argument(
        "--schedule-gap", type=_floats(0, 1), default=(0.004,), metavar="GAP",
        help="scheduling MILP relative gap (default: the paper's 0.004)",
    )  # fmt: skip
    k.add_argument(
        "--follow-prior", choices=["code", "text"], default="code",
        help="alpha_f prior: the authors' code Binomial(5, 0.8) or the text's Binomial(10, 0.7)",
    )  # fmt: skip
    k.add_argument(
        "--jobs", type=_count(1), default=1,
        help="worker processes (default: 1; results do not depend on it)",
    )  # fmt: skip
    k.add_argument(
        "--out", type=Path, default=Path("runs/study_kitting"),
        help="directory for runs.csv, tables.csv and study.png (default: runs/study_kitting)",
    )  # fmt: skip
    k.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    log_flags(k)
    register_hospital(which, _count)
    register_factory(which, _count)
    register_offline(which, _count)
    _register_allocator(subparsers)
    return {"study": _study, "allocator": _allocator}


def _ident(what: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        try:
            return validate_id(value, what)
        except TopicError as exc:
            raise argparse.ArgumentTypeError(exc.reason) from None

    return parse


def _url(value: str) -> str:
    try:
        parse_endpoint(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("[broker] ")) from None
    return value


def _register_allocator(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    a = subparsers.add_parser(
        "allocator",
        help="run the allocation service (seed 001 MILPs) for a team",
        description="Serve allocation.solve / .allocate / .schedule requests on the team "
        "channel _/allocation of --team until Ctrl-C (see docs/allocation.md). Start "
        "several with --shared to split the requests (mosquitto).",
    )
    a.add_argument("--broker", type=_url, required=True, help="e.g. mqtt://127.0.0.1:1883")
    a.add_argument("--team", type=_ident("team"), required=True, help="team id")
    a.add_argument("--id", type=_ident("agent id"), default="allocator", help="agent id")
    a.add_argument("--shared", action="store_true", help="join $share/<group>/ (replicas)")
    a.add_argument("--group", type=_ident("share group"), default="allocators")
    a.add_argument("--workers", type=_count(1), default=1, help="solver threads (default: 1)")
    a.add_argument("--keepalive", type=_count(1), default=5, help="MQTT keepalive (s)")
    log_flags(a, "info")


async def _allocator(args: argparse.Namespace) -> int:
    agent = AllocatorAgent(
        args.id,
        team=args.team,
        endpoint=parse_endpoint(args.broker),
        runtime=RuntimeSettings(keepalive_s=args.keepalive),
        shared=args.shared,
        group=args.group,
        workers=args.workers,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, agent.request_stop)
    async with agent:
        return await agent.run_until_stopped()


def cobot_config(args: argparse.Namespace) -> CobotConfig:
    """The planner settings the flags describe."""
    return CobotConfig(
        beliefs=BeliefConfig.paper_text() if args.follow_prior == "text" else BeliefConfig(),
        solver=args.solver,
        allocation_options=SolveOptions(time_limit=args.allocation_time_limit),
        schedule_options=SolveOptions(
            time_limit=args.schedule_time_limit, mip_gap=args.schedule_gap[0]
        ),
    )


def run_cases(
    cases: Sequence[StudyCase], jobs: int, progress: Callable[[int, int], None] | None
) -> list[RunRecord]:
    """Simulate `cases` (in order), over `jobs` processes. Blocks until all are done."""
    scenario = KittingScenario.default()
    if jobs <= 1:
        out = []
        for case in cases:
            out.append(run_case(case, scenario))
            if progress:
                progress(len(out), len(cases))
        return out
    results: list[RunRecord | None] = [None] * len(cases)
    with ProcessPoolExecutor(jobs) as pool:
        futures = {pool.submit(run_case, c, scenario): k for k, c in enumerate(cases)}
        for n, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if progress:
                progress(n, len(cases))
    return [r for r in results if r is not None]


def plot(rows: Sequence[TableRow], path: Path, runs: int) -> None:
    """One bar chart per metric: a group per (P_follow, P_error) cell, a bar per planner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cells = list(dict.fromkeys((r.p_follow, r.p_error) for r in rows))
    names = list(dict.fromkeys(r.planner for r in rows))
    value = {(r.p_follow, r.p_error, r.planner): r for r in rows}
    fig, axes = plt.subplots(2, 3, figsize=(15, 7.5))
    x = np.arange(len(cells))
    width = 0.8 / max(1, len(names))
    for ax, (metric, title) in zip(axes.flat, TABLES, strict=True):
        for k, name in enumerate(names):
            ys = [
                getattr(value[(pf, pe, name)], metric) if (pf, pe, name) in value else np.nan
                for pf, pe in cells
            ]
            ax.bar(x + (k - (len(names) - 1) / 2) * width, ys, width, label=name)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(x, [f"{pf:g}/{pe:g}" for pf, pe in cells], rotation=45, fontsize=8)
        ax.set_xlabel("P_follow / P_error", fontsize=8)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"Kitting study (seed 001 §VI), mean of {runs} run(s) per cell and planner")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def _study(args: argparse.Namespace) -> int:
    if args.study == "hospital":
        return await run_hospital_study(args)
    if args.study == "factory":
        return await run_factory_study(args)
    if args.study == "kitting-offline":
        return await run_offline_study(args)
    cases = study_cases(
        p_follow=args.p_follow,
        p_error=args.p_error,
        runs=args.runs,
        cobot=cobot_config(args),
        fixed_alpha_e=args.fixed_alpha_e,
        seed=args.seed,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        f"kitting study: {len(args.p_follow)} x {len(args.p_error)} cells, "
        f"{len(cases) // (len(args.p_follow) * len(args.p_error) * args.runs)} planners, "
        f"{args.runs} run(s) each = {len(cases)} episodes",
        flush=True,
    )
    progress = None if args.no_progress else Progress(len(cases))
    records = run_cases(cases, args.jobs, progress)
    rows = study_tables(records)
    for metric, title in TABLES:
        print(f"\n{title} (mean of {args.runs} run(s))")
        print(format_table(rows, metric))
    for metric in ("wrong_human_actions", "robot_to_human"):  # next to the paper's
        print()
        print(side_by_side(records, metric))
    print()
    print(format_directions(records))
    failed = [r for r in records if not r.pattern_correct]
    print(f"\n{len(records) - len(failed)}/{len(records)} runs ended with the correct pattern")
    write_csv(args.out / "runs.csv", records)
    write_csv(args.out / "tables.csv", rows)
    plot(rows, args.out / "study.png", args.runs)
    series = series_rows(records)
    write_csv(args.out / "series.csv", series)
    written = ["runs.csv", "tables.csv", "study.png", "series.csv"]
    if any(r.planner == "adaptive" for r in series):
        plot_beliefs(series, args.out / "beliefs.png", args.runs)
        plot_assigned(series, args.out / "assigned.png", args.runs)
        written += ["beliefs.png (Fig. 16)", "assigned.png (Fig. 17)"]
    print(f"wrote {', '.join(written)} to {args.out}")
    return 0 if not failed else 1


__all__ = ["cobot_config", "register", "run_cases"]
