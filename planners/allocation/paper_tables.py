"""Tables III and IV of seed 001 (Noormohammadi-Asl et al., *To Lead or to Follow?*)
next to teamtree's study, with mean and spread.

The paper prints, per P_follow x P_error cell, the mean over 15 runs of the non-adaptive
planner (above) and the adaptive one (below), once for a non-adaptive α_e = 0 and once
for α_e = 0.35. The adaptive rows should be the same runs in both halves; they are,
except Table IV at P_follow 0.9, P_error 0.1 (9.86 beside α_e = 0, 8.86 beside 0.35):
:data:`PAPER` keeps both as printed and :func:`side_by_side` compares teamtree's
adaptive planner with each. The paper gives no spread; a cell is flagged when the
paper's mean lies outside teamtree's mean ± one standard deviation. ``directions``
compares the sign of adaptive − non-adaptive per cell, the paper's against teamtree's,
with Welch's t on teamtree's runs. Pure: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teamtree.planners.allocation.study import RunRecord

P_FOLLOW = (0.3, 0.6, 0.9)
P_ERROR = (0.1, 0.4, 0.8)

# {metric: {non-adaptive alpha_e: {(p_follow, "fixed" | "adaptive"): (Pe 0.1, 0.4, 0.8)}}}
PAPER: Mapping[str, Mapping[float, Mapping[tuple[float, str], tuple[float, float, float]]]] = {
    "wrong_human_actions": {  # Table III
        0.0: {
            (0.3, "fixed"): (1.07, 4.53, 10.93), (0.3, "adaptive"): (1.0, 2.8, 9.2),
            (0.6, "fixed"): (0.27, 2.67, 4.87), (0.6, "adaptive"): (0.47, 1.87, 4.0),
            (0.9, "fixed"): (0.2, 0.6, 1.33), (0.9, "adaptive"): (0.2, 0.78, 1.67),
        },
        0.35: {
            (0.3, "fixed"): (1.13, 3.8, 7.86), (0.3, "adaptive"): (1.0, 2.8, 9.2),
            (0.6, "fixed"): (0.67, 1.73, 4.8), (0.6, "adaptive"): (0.47, 1.87, 4.0),
            (0.9, "fixed"): (0.0, 0.2, 1.27), (0.9, "adaptive"): (0.2, 0.78, 1.67),
        },
    },
    "robot_to_human": {  # Table IV
        0.0: {
            (0.3, "fixed"): (8.93, 9.67, 11.07), (0.3, "adaptive"): (6.8, 8.0, 10.07),
            (0.6, "fixed"): (7.73, 8.47, 9.87), (0.6, "adaptive"): (8.47, 8.53, 10.19),
            (0.9, "fixed"): (9.86, 9.6, 10.13), (0.9, "adaptive"): (9.86, 10.0, 10.67),
        },
        0.35: {
            (0.3, "fixed"): (7.8, 8.87, 9.5), (0.3, "adaptive"): (6.8, 8.0, 10.07),
            (0.6, "fixed"): (8.0, 9.86, 10.07), (0.6, "adaptive"): (8.47, 8.53, 10.19),
            (0.9, "fixed"): (9.93, 9.93, 10.53), (0.9, "adaptive"): (8.86, 10.0, 10.67),
        },
    },
}  # fmt: skip
TITLES = {
    "wrong_human_actions": "Table III, wrong human actions",
    "robot_to_human": "Table IV, subtasks the robot assigned to the human",
}


@dataclass(frozen=True)
class Cell:
    """One planner in one cell: the paper's mean and teamtree's mean, spread and runs."""

    p_follow: float
    p_error: float
    alpha_e: float
    planner: str  # "fixed" (non-adaptive at alpha_e) or "adaptive"
    paper: float
    mean: float
    sd: float
    runs: int

    @property
    def differs(self) -> bool:
        """The paper's mean is outside teamtree's mean ± one standard deviation."""
        return abs(self.paper - self.mean) > self.sd


def _planner_name(kind: str, alpha_e: float) -> str:
    return "adaptive" if kind == "adaptive" else f"fixed(alpha_e={alpha_e:g})"


def compare(records: Sequence[RunRecord], metric: str) -> list[Cell]:
    """Every cell of the paper's table for ``metric`` that the records cover."""
    if metric not in PAPER:
        raise ValueError(f"the paper tabulates {sorted(PAPER)}, not {metric!r}")
    groups: dict[tuple[float, float, str], list[float]] = {}
    for r in records:
        groups.setdefault((r.p_follow, r.p_error, r.planner), []).append(float(getattr(r, metric)))
    out = []
    for alpha_e, table in PAPER[metric].items():
        for (pf, kind), values in table.items():
            for pe, paper in zip(P_ERROR, values, strict=True):
                vals = groups.get((pf, pe, _planner_name(kind, alpha_e)))
                if not vals:
                    continue
                sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
                out.append(
                    Cell(pf, pe, alpha_e, kind, paper, statistics.fmean(vals), sd, len(vals))
                )
    return out


def side_by_side(records: Sequence[RunRecord], metric: str) -> str:
    """A text table like the paper's: per α_e half and P_follow, the non-adaptive then
    the adaptive planner, each cell ``paper | mean ± sd`` (``*``: differs by more than
    the spread)."""
    cells = {(c.alpha_e, c.p_follow, c.planner, c.p_error): c for c in compare(records, metric)}
    runs = max((c.runs for c in cells.values()), default=0)
    lines = [f"{TITLES[metric]}: paper | teamtree mean ± sd ({runs} runs per cell)"]
    for alpha_e in PAPER[metric]:
        lines.append(f"non-adaptive alpha_e = {alpha_e:g} (above) vs adaptive (below)")
        lines.append("P_follow planner   " + "".join(f"{f'P_error {pe:g}':>22}" for pe in P_ERROR))
        for pf in P_FOLLOW:
            for kind in ("fixed", "adaptive"):
                row = f"{pf:<8g} {kind:<9}"
                for pe in P_ERROR:
                    c = cells.get((alpha_e, pf, kind, pe))
                    text = "-" if c is None else (
                        f"{c.paper:5.2f} | {c.mean:5.2f} ± {c.sd:4.2f}{'*' if c.differs else ' '}"
                    )  # fmt: skip
                    row += f"{text:>22}"
                lines.append(row)
    return "\n".join(lines)


@dataclass(frozen=True)
class Direction:
    """Adaptive minus non-adaptive in one cell, the paper's and teamtree's, with
    Welch's t of teamtree's difference (its runs' spread; the paper gives none)."""

    metric: str
    alpha_e: float
    p_follow: float
    p_error: float
    paper: float
    ours: float
    t: float

    @property
    def agrees(self) -> bool:
        """Both differences have the same sign (zero counts as its own sign)."""
        return _sign(self.paper) == _sign(self.ours)

    @property
    def significant(self) -> bool:
        """|t| > 2.05: teamtree's difference is unlikely to be noise at 15 runs a side
        (two-sided 5 %, about 28 degrees of freedom)."""
        return abs(self.t) > 2.05


def _sign(x: float) -> int:
    return 0 if abs(x) < 1e-9 else (1 if x > 0 else -1)


def directions(records: Sequence[RunRecord], metric: str) -> list[Direction]:
    """For each α_e half and cell the records cover with both planners: the paper's
    and teamtree's difference adaptive − non-adaptive."""
    cells = {(c.alpha_e, c.p_follow, c.p_error, c.planner): c for c in compare(records, metric)}
    out = []
    for alpha_e in PAPER[metric]:
        for pf in P_FOLLOW:
            for pe in P_ERROR:
                a = cells.get((alpha_e, pf, pe, "adaptive"))
                f = cells.get((alpha_e, pf, pe, "fixed"))
                if a is None or f is None:
                    continue
                diff = a.mean - f.mean
                se = (a.sd**2 / a.runs + f.sd**2 / f.runs) ** 0.5
                t = diff / se if se > 0 else (0.0 if diff == 0 else float("inf") * _sign(diff))
                out.append(Direction(metric, alpha_e, pf, pe, a.paper - f.paper, diff, t))
    return out


def format_directions(records: Sequence[RunRecord]) -> str:
    """Both tables' directions as text: per metric and α_e half a row per P_follow, each
    cell ``paper / ours (t)``, ``x`` where the signs differ, ``!`` where that difference
    is significant; then the counts."""
    lines = ["Adaptive minus non-adaptive, paper / teamtree (Welch t); x: opposite signs, "
             "!: and |t| > 2.05"]  # fmt: skip
    rows = [d for metric in PAPER for d in directions(records, metric)]
    for metric in PAPER:
        for alpha_e in PAPER[metric]:
            lines.append(f"{TITLES[metric]}, non-adaptive alpha_e = {alpha_e:g}")
            for pf in P_FOLLOW:
                row = f"  P_follow {pf:<4g}"
                for pe in P_ERROR:
                    d = next(
                        (x for x in rows if (x.metric, x.alpha_e, x.p_follow, x.p_error)
                         == (metric, alpha_e, pf, pe)),
                        None,
                    )  # fmt: skip
                    mark = " " if d is None or d.agrees else ("!" if d.significant else "x")
                    text = (
                        "-" if d is None else f"{d.paper:+.2f} / {d.ours:+.2f} ({d.t:+.1f}){mark}"
                    )
                    row += f"{text:>26}"
                lines.append(row)
    differ = [d for d in rows if not d.agrees]
    lines.append(
        f"signs agree in {len(rows) - len(differ)} of {len(rows)}; of the "
        f"{len(differ)} that differ, {sum(d.significant for d in differ)} are significant "
        "on teamtree's side (the paper's adaptive rows are the same runs in both halves)"
    )
    return "\n".join(lines)
