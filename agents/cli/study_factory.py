"""``teamtree study factory``: seed 002's working-mode study (Lee et al., §VII.C)
in-process: Fig. 16, the task efficiency of jobs 1-4 in each working mode over
repeated runs (mean, min and max, or infeasible), and Fig. 17 as a table, the jobs a
method without assembly cannot do. Writes ``runs.csv``, ``summary.csv``,
``reach.csv`` and ``efficiency.png`` to ``--out``. The simulation and its choices:
``teamtree.planners.capability.mode_study`` and ``mode_timing``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from teamtree.agents.cli.args import log_flags
from teamtree.agents.cli.study_output import Progress, write_csv
from teamtree.broker import InfeasibleError
from teamtree.hardware import factory_robots
from teamtree.planners.capability import (
    FIG16_JOBS,
    JOBS,
    PAPER_RUNS,
    STUDY_MODES,
    FloorModel,
    ModeRun,
    ModeSummary,
    ReachRow,
    reach_rows,
    study_runs,
)

__all__ = ["format_reach", "format_summary", "register_factory", "run_factory_study"]


def _job_list(value: str) -> tuple[str, ...]:
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [n for n in names if n not in JOBS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"{value!r}: use job names from {', '.join(sorted(JOBS))}, comma-separated"
        )
    return names


def _metres(value: str) -> float:
    try:
        out = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of metres") from None
    if not 0 < out < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: the range must be positive")
    return out


def register_factory(
    which: argparse._SubParsersAction,  # type: ignore[type-arg]
    count: Callable[[int], Callable[[str], int]],
) -> None:
    """Add ``study factory`` to the ``study`` subcommands (`count(lo)`: a parser of whole
    numbers ≥ lo)."""
    f = which.add_parser(
        "factory",
        help="seed 002 §VII.C: task efficiency per working mode (Figs. 16, 17)",
        description="Do seed 002's jobs in each working mode (solo, partnership, "
        "subcontract, assembly) with Table II's twelve robots placed at random, N runs "
        "each; print the task efficiency per job and mode (mean, min, max, or "
        "infeasible) and which jobs a method without assembly cannot do (Fig. 17); "
        "write runs.csv, summary.csv, reach.csv and efficiency.png (Fig. 16) to --out.",
    )
    f.add_argument(
        "--runs", type=count(1), default=PAPER_RUNS,
        help=f"runs per job and mode (default: the paper's {PAPER_RUNS})",
    )  # fmt: skip
    f.add_argument("--seed", type=count(0), default=0, help="base seed (default: 0)")
    f.add_argument(
        "--jobs", type=_job_list, default=FIG16_JOBS, metavar="LIST",
        help=f"jobs, comma-separated (default: Fig. 16's {','.join(FIG16_JOBS)})",
    )  # fmt: skip
    f.add_argument(
        "--boxes", type=count(1), default=FloorModel.boxes,
        help=f"boxes each job moves (default: {FloorModel.boxes})",
    )  # fmt: skip
    f.add_argument(
        "--comm-range", type=_metres, default=FloorModel.comm_range_m, metavar="M",
        help=f"communication range in metres (default: {FloorModel.comm_range_m:g})",
    )  # fmt: skip
    f.add_argument(
        "--out", type=Path, default=Path("runs/study_factory"),
        help="directory for the CSV files and the figure (default: runs/study_factory)",
    )  # fmt: skip
    f.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    log_flags(f)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def format_summary(rows: Sequence[ModeSummary], runs: int) -> str:
    """Fig. 16 as a table: a line per job and mode."""
    lines = [
        f"Fig. 16 (seed 002): task efficiency in boxes placed per minute, {runs} run(s)",
        f"{'job':7}{'mode':13}{'mean':>7}{'min':>7}{'max':>7}  agents that can",
    ]
    for r in rows:
        if r.feasible:
            figures = f"{_num(r.mean):>7}{_num(r.low):>7}{_num(r.high):>7}"
        else:
            figures = f"{'infeasible':>21}"
        lines.append(f"{r.job:7}{r.mode:13}{figures}  {r.agents or '-'}")
    return "\n".join(lines)


def format_reach(rows: Sequence[ReachRow], n_robots: int) -> str:
    """Fig. 17 as a table: agents with a team, state of the art vs ours."""
    lines = [
        f"Fig. 17 (seed 002): agents of {n_robots} that get a team, every robot idle",
        f"{'job':7}{'no assembly':>12}{'method 1':>10}{'method 2':>10}  ours where it has none",
    ]
    for r in rows:
        lines.append(
            f"{r.job:7}{r.state_of_the_art:>12}{r.method_1:>10}{r.method_2:>10}  {r.example}"
        )
        lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)


def plot_efficiency(
    runs: Sequence[ModeRun], rows: Sequence[ModeSummary], path: Path, n_runs: int
) -> None:
    """Fig. 16: a panel per job, each mode's efficiency per run as a line and its
    min-max band shaded; infeasible modes named in the panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = list(dict.fromkeys(r.job for r in rows))
    modes = list(dict.fromkeys(r.mode for r in rows))
    colour = {m: f"C{k}" for k, m in enumerate(modes)}
    fig, grid = plt.subplots(
        1, len(jobs), figsize=(4.2 * len(jobs), 4.6), squeeze=False, sharey=True
    )
    xs = list(range(1, n_runs + 1))
    for ax, job in zip(grid[0], jobs, strict=True):
        missing = []
        for summary in (r for r in rows if r.job == job):
            if not summary.feasible:
                missing.append(summary.mode)
                continue
            ys = [r.efficiency for r in runs if r.job == job and r.mode == summary.mode]
            c = colour[summary.mode]
            ax.fill_between(xs, summary.low, summary.high, color=c, alpha=0.18, linewidth=0)
            ax.plot(xs, ys, marker="o", markersize=3, color=c, label=summary.mode)
        ax.set_title(f"{job}: {JOBS[job].description}", fontsize=9)
        ax.set_xlabel("run")
        ax.grid(alpha=0.3)
        if missing:
            ax.text(0.03, 0.03, "infeasible: " + ", ".join(missing), transform=ax.transAxes,
                    fontsize=8, va="bottom", color="0.3")  # fmt: skip
    top = max((r.high for r in rows if r.high is not None), default=1.0)
    grid[0][0].set_ylim(0, 1.1 * top)
    grid[0][0].set_ylabel("task efficiency (boxes per minute)")
    handles = {}
    for ax in grid[0]:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    fig.legend(
        [handles[m] for m in modes if m in handles],
        [m for m in modes if m in handles],
        loc="upper center",
        ncol=len(modes),
        bbox_to_anchor=(0.5, 0.94),
        fontsize=9,
    )
    fig.suptitle(
        f"Fig. 16 (seed 002): task efficiency per working mode, {n_runs} run(s); shaded: min to max"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def run_factory_study(args: argparse.Namespace) -> int:
    """The ``study factory`` handler: the tables on stdout, the files in ``--out``."""
    model = FloorModel(boxes=args.boxes, comm_range_m=args.comm_range)
    print(
        f"factory study: jobs {', '.join(args.jobs)}, {len(STUDY_MODES)} working modes, "
        f"{args.runs} run(s) each, {model.boxes} box(es) a job, "
        f"range {model.comm_range_m:g} m, seed {args.seed}",
        flush=True,
    )
    most = len(args.jobs) * len(STUDY_MODES) * args.runs  # infeasible modes do not run
    progress = None if args.no_progress else Progress(most)
    try:
        runs, rows = study_runs(args.jobs, args.runs, args.seed, model, progress)
    except InfeasibleError as exc:
        print(f"\nstudy factory: {exc}")
        return 1
    print()
    print(format_summary(rows, args.runs))
    reach = reach_rows()
    print()
    print(format_reach(reach, len(factory_robots())))
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "runs.csv", runs)
    write_csv(args.out / "summary.csv", rows)
    write_csv(args.out / "reach.csv", reach)
    plot_efficiency(runs, rows, args.out / "efficiency.png", args.runs)
    print(f"\nwrote runs.csv, summary.csv, reach.csv and efficiency.png (Fig. 16) to {args.out}")
    return 0
