"""``teamtree study kitting-offline``: seed 001 §V.3, the allocation on time alone at
two human walking speeds, beside the paper's, for robots of several paces.

The paper reports that the robot gets four pink subtasks at 1.2 m/s and five pink and
one green at 0.7 m/s. It gives neither distances nor the robot's times, so the study
runs the paper's planner (preference and performance set aside) for each robot pace
(the authors' simulation's times multiplied by a factor), each human speed and several
colour patterns, and says which paces give the paper's answer. The readings behind it:
``teamtree.planners.allocation.offline``. Writes ``offline.csv`` to ``--out``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from teamtree.agents.cli.args import log_flags, seconds_or_zero
from teamtree.agents.cli.study_output import Progress, write_csv
from teamtree.planners.allocation import (
    DEFAULT_PATTERN,
    NORMAL_SPEED,
    PAPER_OFFLINE,
    SLOW_SPEED,
    ColourTimes,
    colour_summary,
    offline_allocation,
    random_pattern,
)

__all__ = [
    "OfflineRow",
    "format_offline",
    "offline_rows",
    "register_offline",
    "run_offline_study",
]

ROBOT_FACTORS = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)


@dataclass(frozen=True)
class OfflineRow:
    """One plan: the robot's pace factor, the human's speed, the pattern (0: the
    default, then seeded random ones), what the robot gets and the makespan."""

    robot_factor: float
    speed: float
    pattern: int
    robot_gets: str
    robot_subtasks: int
    makespan: float
    paper: str
    matches_paper: bool


def _positive_list(value: str) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list") from None
    if not out or any(not 0 < v < float("inf") for v in out):
        raise argparse.ArgumentTypeError(f"{value!r}: every value must be a positive number")
    return out


def register_offline(
    which: argparse._SubParsersAction,  # type: ignore[type-arg]
    count: Callable[[int], Callable[[str], int]],
) -> None:
    """Add ``study kitting-offline`` to the ``study`` subcommands (`count(lo)`: a parser
    of whole numbers ≥ lo)."""
    o = which.add_parser(
        "kitting-offline",
        help="seed 001 §V.3: the allocation on time alone at 1.2 and 0.7 m/s",
        description="Plan the kitting task on time alone (seed 001 §V.3) for a human "
        "walking at each speed and a robot at each pace (the authors' simulation's times "
        "times a factor), on the default pattern and seeded random ones; print which "
        "colours the robot gets beside the paper's answer and write offline.csv to --out.",
    )
    o.add_argument(
        "--robot-factor", type=_positive_list, default=ROBOT_FACTORS, metavar="LIST",
        help="robot paces: multiples of the simulation's robot times, comma-separated "
        f"(default: {','.join(f'{f:g}' for f in ROBOT_FACTORS)})",
    )  # fmt: skip
    o.add_argument(
        "--speeds", type=_positive_list, default=(NORMAL_SPEED, SLOW_SPEED), metavar="LIST",
        help=f"human walking speeds in m/s (default: the paper's {NORMAL_SPEED},{SLOW_SPEED})",
    )  # fmt: skip
    o.add_argument(
        "--patterns", type=count(1), default=3,
        help="colour patterns: the default one, then seeded random ones (default: 3, "
        "as the paper's B, C and D)",
    )  # fmt: skip
    o.add_argument(
        "--handling", type=seconds_or_zero, default=0.0, metavar="S",
        help="seconds of each human subtask that do not depend on walking speed (default: 0)",
    )  # fmt: skip
    o.add_argument("--seed", type=count(0), default=0, help="base seed of the patterns")
    o.add_argument(
        "--solver", choices=["auto", "gurobi", "highs"], default="auto",
        help="MILP backend (default: auto = Gurobi within its pip licence, else HiGHS)",
    )  # fmt: skip
    o.add_argument(
        "--out", type=Path, default=Path("runs/study_kitting_offline"),
        help="directory for offline.csv (default: runs/study_kitting_offline)",
    )  # fmt: skip
    o.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    log_flags(o)


def offline_rows(
    factors: Sequence[float],
    speeds: Sequence[float],
    patterns: int,
    *,
    handling: float = 0.0,
    seed: int = 0,
    solver: str = "auto",
    progress: Progress | None = None,
) -> list[OfflineRow]:
    """Every plan of the study, in factor, speed, pattern order."""
    base = ColourTimes.from_workspaces()
    base = ColourTimes(base.human, base.robot, handling)
    shapes = [DEFAULT_PATTERN, *(random_pattern(seed + k) for k in range(1, patterns))]
    rows = []
    for factor in factors:
        for speed in speeds:
            paper = PAPER_OFFLINE.get(speed)
            for k, pattern in enumerate(shapes):
                plan = offline_allocation(
                    base.scaled_robot(factor),
                    speed,
                    pattern,
                    solver=solver,  # type: ignore[arg-type]
                )
                rows.append(
                    OfflineRow(
                        factor,
                        speed,
                        k,
                        plan.robot_summary(),
                        sum(plan.robot_colours.values()),
                        plan.makespan,
                        colour_summary(paper) if paper else "",
                        paper is not None and dict(paper) == dict(plan.robot_colours),
                    )
                )
                if progress is not None:
                    progress(len(rows))
    return rows


def format_offline(rows: Sequence[OfflineRow], speeds: Sequence[float]) -> str:
    """A line per robot pace: what the robot gets at each speed (one entry when every
    pattern agrees, else per pattern), ``=`` where it is the paper's answer."""
    head = "".join(f"  {f'human {s:g} m/s':<36}" for s in speeds)
    lines = [f"{'robot x':>8}{head}"]
    for factor in dict.fromkeys(r.robot_factor for r in rows):
        cells = []
        for speed in speeds:
            mine = [r for r in rows if r.robot_factor == factor and r.speed == speed]
            gets = list(dict.fromkeys(r.robot_gets for r in mine))
            text = gets[0] if len(gets) == 1 else " | ".join(r.robot_gets for r in mine)
            mark = "= " if mine and all(r.matches_paper for r in mine) else "  "
            cells.append(f"  {mark + text:<36}")
        lines.append(f"{factor:>8g}{''.join(cells)}")
    paper = "".join(
        f"  {'= ' + colour_summary(PAPER_OFFLINE[s]) if s in PAPER_OFFLINE else '':<36}"
        for s in speeds
    )
    lines.append(f"{'paper':>8}{paper}")
    return "\n".join(lines)


def _matches_at_both(rows: Sequence[OfflineRow], factor: float) -> bool:
    """Robot pace `factor` was run at both of the paper's speeds and gives the paper's
    answer at each."""
    paced = [r for r in rows if r.robot_factor == factor and r.speed in PAPER_OFFLINE]
    return {r.speed for r in paced} >= set(PAPER_OFFLINE) and all(r.matches_paper for r in paced)


async def run_offline_study(args: argparse.Namespace) -> int:
    """Run ``study kitting-offline``; 0 when it ran (whether or not a pace matches)."""
    n = len(args.robot_factor) * len(args.speeds) * args.patterns
    print(
        f"kitting offline allocation (seed 001 §V.3): {len(args.robot_factor)} robot "
        f"pace(s) x {len(args.speeds)} speed(s) x {args.patterns} pattern(s) = {n} plans",
        flush=True,
    )
    progress = None if args.no_progress else Progress(n)
    rows = offline_rows(
        args.robot_factor,
        args.speeds,
        args.patterns,
        handling=args.handling,
        seed=args.seed,
        solver=args.solver,
        progress=progress,
    )
    print("\nWhat the robot gets (robot x: its times against the authors' simulation's)")
    print(format_offline(rows, args.speeds))
    both = [f for f in dict.fromkeys(r.robot_factor for r in rows) if _matches_at_both(rows, f)]
    if both:
        print(f"\nthe paper's answer at both speeds: robot x {', '.join(f'{f:g}' for f in both)}")
    else:
        print("\nno robot pace gives the paper's answer at both speeds")
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "offline.csv", rows)
    print(f"wrote offline.csv to {args.out}")
    return 0
