"""Timing diagrams from a recorded run, like seed 000's Figs. 12-14: one panel per
robot, one row per behaviour node, coloured by its state in that robot's copy."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from teamtree.agents.observers.human_work import human_rows
from teamtree.agents.observers.mission_labels import mission_labels
from teamtree.broker import ConfigError

COLOURS = {
    "inactive": "#e6e6e6",
    "active": "#f1c232",
    "working": "#3d85c6",
    "done": "#6aa84f",
    "skipped": "#b4a7d6",  # seed 004: a THEN child whose goal already held
}


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a recorder's JSON-lines file. Raises ConfigError when it is not one."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise ConfigError("no .jsonl record in this directory", path=str(path))
        path = files[-1]
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the record: {exc.strerror}", path=str(path)) from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise ConfigError(
                f"line {number} is not JSON; is this a recorder file?", path=str(path)
            ) from None
        if isinstance(record, dict) and "kind" in record and "ts" in record:
            records.append(record)
    return records


def node_intervals(
    records: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, list[tuple[float, float, str]]]], dict[str, str]]:
    """Per robot, per leaf: ``(start_s, end_s, status)`` spans; plus leaf labels.

    A robot's claim makes the leaf active in its copy until the claim is decided;
    its working / done / released transitions follow; a done by any robot makes the
    leaf done in every copy (the trees agree once the transition arrives), and so does
    a skip (seed 004: its goal already held) in every copy but the skipper's.
    Each person gets a panel ``<id> (person)`` of their own work (``human_rows``).
    """
    labels: dict[str, str] = {}
    robots: list[str] = []
    events: list[tuple[int, str, str | None, str, str]] = []  # ts, agent, node, status, scope
    for rec in sorted(records, key=lambda r: r["ts"]):
        body = rec.get("body") if isinstance(rec.get("body"), dict) else {}
        kind = rec["kind"]
        if kind == "mission.tree":
            tree_labels_, leaf_ids = mission_labels(body) or ({}, [])
            labels.update({leaf: tree_labels_[leaf] for leaf in leaf_ids})
        elif kind == "node.claim":
            events.append((rec["ts"], rec["sender"], body.get("node"), "active", "own"))
        elif kind == "node.claim_decided" and not body.get("won"):
            events.append((rec["ts"], rec["sender"], body.get("node"), "inactive", "own"))
        elif kind == "node.transition":
            status = body.get("status")
            if status == "done":
                events.append((rec["ts"], rec["sender"], body.get("node"), "done", "all"))
            elif status in ("working", "inactive", "skipped"):
                events.append((rec["ts"], rec["sender"], body.get("node"), status, "own"))
            if status == "skipped":  # its goal held: satisfied in every other copy too
                events.append((rec["ts"], rec["sender"], body.get("node"), "done", "others"))
        else:
            continue
        if kind.startswith("node.") and rec["sender"] not in robots:
            robots.append(rec["sender"])
    people = human_rows(records)
    if not events and not people:
        return {}, labels
    t0 = min([e[0] for e in events[:1]] + [r["start_ms"] for r in people[:1]])
    t_end = max(r["ts"] for r in records)
    state: dict[str, dict[str, tuple[str, int]]] = {r: {} for r in robots}
    spans: dict[str, dict[str, list[tuple[float, float, str]]]] = {
        r: defaultdict(list) for r in robots
    }

    def move(robot: str, node: str, status: str, ts: int) -> None:
        current, since = state[robot].get(node, ("inactive", t0))
        if current == status or current in ("done", "skipped"):
            return
        if current != "inactive":
            spans[robot][node].append(((since - t0) / 1000, (ts - t0) / 1000, current))
        state[robot][node] = (status, ts)

    for ts, agent, node, status, scope in events:
        if not isinstance(node, str):
            continue
        if scope == "all":
            targets = robots
        elif scope == "others":
            targets = [r for r in robots if r != agent]
        else:
            targets = [agent]
        for robot in targets:
            move(robot, node, status, ts)
    for robot in robots:
        for node, (status, since) in state[robot].items():
            if status != "inactive":
                spans[robot][node].append(((since - t0) / 1000, (t_end - t0) / 1000, status))
    for row in people:
        panel = spans.setdefault(f"{row['agent']} (person)", defaultdict(list))
        start, stop = row["start_ms"], row["stop_ms"] or t_end
        panel[row["node"]].append(((start - t0) / 1000, (stop - t0) / 1000, "working"))
        if row["end_ms"] is not None:
            panel[row["node"]].append(((stop - t0) / 1000, (t_end - t0) / 1000, "done"))
    return {r: dict(v) for r, v in spans.items()}, labels


def draw_timeline(records: list[dict[str, Any]], output: str | Path, title: str = "") -> Path:
    """Draw the timing diagrams to a PNG. Raises ConfigError when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    spans, labels = node_intervals(records)
    if not spans:
        raise ConfigError("the record holds no task-tree transitions to draw", path=str(output))
    nodes = sorted(labels) or sorted({n for r in spans.values() for n in r})
    fig, axes = plt.subplots(
        len(spans),
        1,
        figsize=(10, 0.45 * len(nodes) * len(spans) + 1.5),
        sharex=True,
        squeeze=False,
    )
    for ax, (robot, per_node) in zip(axes[:, 0], spans.items(), strict=True):
        for row, node in enumerate(nodes):
            ax.broken_barh([(0, 1e9)], (row - 0.35, 0.7), facecolors=COLOURS["inactive"])
            for start, end, status in per_node.get(node, []):
                ax.broken_barh(
                    [(start, max(end - start, 0.02))], (row - 0.35, 0.7), facecolors=COLOURS[status]
                )
        ax.set_yticks(range(len(nodes)), [labels.get(n, n) for n in nodes])
        ax.set_ylabel(robot)
        ax.invert_yaxis()
    end = max((e for r in spans.values() for s in r.values() for _, e, _ in s), default=1.0)
    axes[-1, 0].set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel("time (s)")
    fig.legend(
        handles=[Patch(color=c, label=s) for s, c in COLOURS.items()], loc="upper right", ncol=4
    )
    if title:
        fig.suptitle(title, x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    output = Path(output)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output
