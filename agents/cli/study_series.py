"""Figures 16 and 17 of seed 001 (§VI.A) from ``teamtree study kitting``: the cobot's
estimates of the human's following preference and error-proneness over the episode
(``beliefs.png``), and the cumulative subtasks it assigned to the human
(``assigned.png``), both for the adaptive planner, means over the runs of each cell
(``planners.allocation.series_rows``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from teamtree.planners.allocation import SeriesRow

__all__ = ["plot_assigned", "plot_beliefs"]


def _lines(rows: Sequence[SeriesRow], pf: float, pe: float) -> list[SeriesRow]:
    return [r for r in rows if (r.p_follow, r.p_error, r.planner) == (pf, pe, "adaptive")]


def _axes(count: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, count, figsize=(5 * count, 3.8), squeeze=False)
    return plt, fig, list(axes[0])


def plot_beliefs(rows: Sequence[SeriesRow], path: Path, runs: int) -> None:
    """Fig. 16: a panel per P_follow; E[α_f] (solid) and E[α_e] (dashed) per P_error."""
    pfs = sorted({r.p_follow for r in rows}, reverse=True)
    pes = sorted({r.p_error for r in rows})
    plt, fig, axes = _axes(len(pfs))
    for ax, pf, letter in zip(axes, pfs, "abcdefghij", strict=False):
        for k, pe in enumerate(pes):
            line = _lines(rows, pf, pe)
            ts = [r.time for r in line]
            color = f"C{k}"
            ax.plot(ts, [r.alpha_f for r in line], color=color, label=f"E[α_f], P_error={pe:g}")
            ax.plot(ts, [r.alpha_e for r in line], color=color, linestyle="--",
                    label=f"E[α_e], P_error={pe:g}")  # fmt: skip
        ax.set_title(f"{letter}) P_follow = {pf:g}", fontsize=10)
        ax.set_xlabel("time in the episode (s)")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("the cobot's estimate (α_f: 1 = follows)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Fig. 16 (seed 001): the adaptive cobot's beliefs, mean of {runs} run(s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_assigned(rows: Sequence[SeriesRow], path: Path, runs: int) -> None:
    """Fig. 17: a panel per P_error; the cumulative subtasks the cobot assigned to the
    human (C_r^h), a colour per P_follow."""
    pfs = sorted({r.p_follow for r in rows}, reverse=True)
    pes = sorted({r.p_error for r in rows})
    plt, fig, axes = _axes(len(pes))
    for ax, pe, letter in zip(axes, pes, "abcdefghij", strict=False):
        for k, pf in enumerate(pfs):
            line = _lines(rows, pf, pe)
            ax.step([r.time for r in line], [r.robot_to_human for r in line], where="post",
                    color=f"C{k}", label=f"P_follow={pf:g}")  # fmt: skip
        ax.set_title(f"{letter}) P_error = {pe:g}", fontsize=10)
        ax.set_xlabel("time in the episode (s)")
    axes[0].set_ylabel("subtasks assigned to the human (C_r^h)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Fig. 17 (seed 001): the adaptive cobot's assignments, mean of {runs} run(s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
