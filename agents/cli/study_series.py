"""Figures 16 and 17 of seed 001 (§VI.A) from ``teamtree study kitting``: the cobot's
estimates of the human's following preference and error-proneness over the episode
(``beliefs.png``), and the cumulative subtasks it assigned to the human
(``assigned.png``), both for the adaptive planner, means over the runs of each cell
(``planners.allocation.series_rows``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from teamtree.planners.allocation import SeriesRow

__all__ = ["plot_assigned", "plot_beliefs"]

Draw = Callable[[Any, list[SeriesRow], str, float], None]  # (axes, line, colour, value)


def _figure(
    panels: Sequence[float],
    lines: Sequence[float],
    line_of: Callable[[float, float], list[SeriesRow]],
    draw: Draw,
    *,
    panel_name: str,
    ylabel: str,
    title: str,
    path: Path,
) -> None:
    """One panel per value of `panels`, one coloured line per value of `lines`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    axes = list(grid[0])
    for ax, panel, letter in zip(axes, panels, "abcdefghij", strict=False):
        for k, value in enumerate(lines):
            draw(ax, line_of(panel, value), f"C{k}", value)
        ax.set_title(f"{letter}) {panel_name} = {panel:g}", fontsize=10)
        ax.set_xlabel("time in the episode (s)")
    axes[0].set_ylabel(ylabel)
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _adaptive(rows: Sequence[SeriesRow], pf: float, pe: float) -> list[SeriesRow]:
    return [r for r in rows if (r.p_follow, r.p_error, r.planner) == (pf, pe, "adaptive")]


def plot_beliefs(rows: Sequence[SeriesRow], path: Path, runs: int) -> None:
    """Fig. 16: a panel per P_follow; E[α_f] (solid) and E[α_e] (dashed) per P_error."""

    def draw(ax: Any, line: list[SeriesRow], color: str, pe: float) -> None:
        ts = [r.time for r in line]
        ax.plot(ts, [r.alpha_f for r in line], color=color, label=f"E[α_f], P_error={pe:g}")
        ax.plot(ts, [r.alpha_e for r in line], color=color, linestyle="--",
                label=f"E[α_e], P_error={pe:g}")  # fmt: skip
        ax.set_ylim(0, 1)

    _figure(
        sorted({r.p_follow for r in rows}, reverse=True),
        sorted({r.p_error for r in rows}),
        lambda pf, pe: _adaptive(rows, pf, pe),
        draw,
        panel_name="P_follow",
        ylabel="the cobot's estimate (α_f: 1 = follows)",
        title=f"Fig. 16 (seed 001): the adaptive cobot's beliefs, mean of {runs} run(s)",
        path=path,
    )


def plot_assigned(rows: Sequence[SeriesRow], path: Path, runs: int) -> None:
    """Fig. 17: a panel per P_error; the cumulative subtasks the cobot assigned to the
    human (C_r^h), a colour per P_follow."""

    def draw(ax: Any, line: list[SeriesRow], color: str, pf: float) -> None:
        ax.step([r.time for r in line], [r.robot_to_human for r in line], where="post",
                color=color, label=f"P_follow={pf:g}")  # fmt: skip

    _figure(
        sorted({r.p_error for r in rows}),
        sorted({r.p_follow for r in rows}, reverse=True),
        lambda pe, pf: _adaptive(rows, pf, pe),
        draw,
        panel_name="P_error",
        ylabel="subtasks assigned to the human (C_r^h)",
        title=f"Fig. 17 (seed 001): the adaptive cobot's assignments, mean of {runs} run(s)",
        path=path,
    )
