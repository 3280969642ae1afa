"""``teamtree study hospital``: seed 003's adversarial study (Zhou et al., §VI-B, Table
I) in-process: trials of the hospital mission with random disturbances, how often each
reactive strategy was triggered, local and global reallocation times and the success
rate, beside the paper's. Writes ``triggers.csv``, ``trials.csv`` and ``table.csv`` to
``--out``. The simulation and its choices: ``teamtree.planners.ltl.adversarial``.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from teamtree.agents.cli.args import log_flags
from teamtree.planners.ltl.adversarial import (
    PAPER_SUCCESS,
    StudyRow,
    TrialResult,
    run_trial,
    study_rows,
)

__all__ = ["format_table_i", "register_hospital", "run_hospital_study"]


def register_hospital(
    which: argparse._SubParsersAction,  # type: ignore[type-arg]
    count: Callable[[int], Callable[[str], int]],
) -> None:
    """Add ``study hospital`` to the ``study`` subcommands (`count(lo)`: a parser of whole
    numbers ≥ lo)."""
    h = which.add_parser(
        "hospital",
        help="seed 003 §VI-B: trials with random disturbances, Table I",
        description="Run seed 003's hospital mission (DR, A1, Wassi) in trials with random "
        "disturbances (falls, critical failures, lost loads, blocked corridors), count how "
        "often each reactive strategy R1-R4 is triggered, time the local and global "
        "reallocations and count the trials completed; print Table I beside the paper's "
        "and write triggers.csv, trials.csv and table.csv to --out.",
    )
    h.add_argument("--trials", type=count(1), default=10, help="trials (default: the paper's 10)")
    h.add_argument(
        "--disturbances", type=count(0), default=6,
        help="disturbances per trial (default: 6, about the paper's 57 over 10 trials)",
    )  # fmt: skip
    h.add_argument("--seed", type=count(0), default=0, help="base seed; trial k uses seed+k")
    h.add_argument(
        "--out", type=Path, default=Path("runs/study_hospital"),
        help="directory for the CSV files (default: runs/study_hospital)",
    )  # fmt: skip
    log_flags(h)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def format_table_i(rows: Sequence[StudyRow], results: Sequence[TrialResult]) -> str:
    """Table I, ours beside the paper's, with the success rates under it."""
    lines = [
        f"{'':28}" + "".join(f"{r.strategy:>18}" for r in rows),
        f"{'Triggered times (ours/paper)':28}"
        + "".join(f"{f'{r.triggered} / {r.paper_triggered}':>18}" for r in rows),
        f"{'Local realloc s (ours/paper)':28}"
        + "".join(f"{f'{_seconds(r.local_s)} / {_seconds(r.paper_local_s)}':>18}" for r in rows),
        f"{'Global realloc s (ours/paper)':28}"
        + "".join(f"{f'{_seconds(r.global_s)} / {_seconds(r.paper_global_s)}':>18}" for r in rows),
    ]
    done = sum(r.success for r in results)
    lines.append(
        f"\nmissions completed: {done}/{len(results)} ({100 * done / max(1, len(results)):.0f} %;"
        f" paper: {100 * PAPER_SUCCESS:.0f} % of 10)"
    )
    failed = [r for r in results if not r.success]
    two = sum(len(r.failed_robots) >= 2 for r in failed)
    if failed:
        lines.append(
            f"failed trials with two or more critical failures: {two}/{len(failed)} "
            "(the paper: all of its failures)"
        )
    return "\n".join(lines)


def _write(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


async def run_hospital_study(args: argparse.Namespace) -> int:
    """The ``study hospital`` handler: prints a line per trial, then the table."""
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        f"hospital study: {args.trials} trial(s), {args.disturbances} disturbance(s) each, "
        f"seeds {args.seed}..{args.seed + args.trials - 1}",
        flush=True,
    )
    results = []
    for k in range(args.trials):
        result = run_trial(k, args.seed + k, time.perf_counter, disturbances=args.disturbances)
        results.append(result)
        fired = ", ".join(f"{t.strategy} {t.scope}" for t in result.triggers) or "none"
        print(
            f"trial {k + 1}/{args.trials} (seed {result.seed}): "
            f"{'completed' if result.success else 'FAILED'}; {fired}"
            + ("" if result.success else f"\n    {result.reason}"),
            flush=True,
        )
    rows = study_rows(results)
    print("\nTable I (seed 003): ours / the paper's")
    print(format_table_i(rows, results))
    _write(
        args.out / "triggers.csv",
        ["trial", "seed", "at_s", "robot", "strategy", "scope", "took_s", "detail"],
        [
            (r.trial, r.seed, round(t.at_s, 2), t.robot, t.strategy, t.scope, t.took_s, t.detail)
            for r in results
            for t in r.triggers
        ],
    )
    _write(
        args.out / "trials.csv",
        ["trial", "seed", "success", "starts", "failed_robots", "not_fired", "finished_s",
         "offline_s", "reason"],
        [
            (r.trial, r.seed, r.success, " ".join(f"{k}={v}" for k, v in r.starts.items()),
             " ".join(r.failed_robots), r.not_fired, round(r.finished_s, 2), r.offline_s,
             r.reason)
            for r in results
        ],
    )  # fmt: skip
    _write(
        args.out / "table.csv",
        ["strategy", "triggered", "local_s", "global_s", "paper_triggered", "paper_local_s",
         "paper_global_s"],
        [(r.strategy, r.triggered, r.local_s, r.global_s, r.paper_triggered, r.paper_local_s,
          r.paper_global_s) for r in rows],
    )  # fmt: skip
    print(f"\nwrote triggers.csv, trials.csv and table.csv to {args.out}")
    return 0
