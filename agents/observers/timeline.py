"""Timing diagrams from a recorded run, like seed 000's Figs. 12-14: one panel per
robot, one row per behaviour node, coloured by its state in that robot's copy.

A record may hold several missions (a mission queue's recorder, or runs recorded one
after another): ``mission_records`` keeps one of them, and a figure draws one mission.
How the mission ended (``mission_end``, from its ``mission.status`` messages) is drawn
on it: a failure, time-out or cancel is marked where it happened and in the title.
"""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teamtree.agents.observers.human_work import human_rows
from teamtree.agents.observers.mcap_record import is_mcap, read_mcap_records
from teamtree.agents.observers.mission_labels import mission_labels
from teamtree.agents.runtime.mission import mission_of
from teamtree.agents.runtime.mission_status import STATUS_KIND, MissionBoard
from teamtree.agents.treeprotocol.decided_wire import lost_claim
from teamtree.broker import ConfigError

__all__ = [
    "COLOURS",
    "FAILURE_COLOUR",
    "MissionEnd",
    "TimelineFigure",
    "draw_timeline",
    "load_records",
    "mission_end",
    "mission_records",
    "missions_in",
    "node_intervals",
    "pick_mission",
    "timeline_figure",
]

COLOURS = {
    "inactive": "#e6e6e6",
    "active": "#f1c232",
    "working": "#3d85c6",
    "done": "#6aa84f",
    "skipped": "#b4a7d6",  # seed 004: a THEN child whose goal already held
}


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a recorder's file, MCAP or JSON lines (a directory: its newest by name).
    Raises ConfigError when it is not one, naming the file and what is wrong."""
    path = Path(path)
    if path.is_dir():
        files = sorted([*path.glob("*.jsonl"), *path.glob("*.mcap")])
        if not files:
            raise ConfigError("no .jsonl or .mcap record in this directory", path=str(path))
        path = files[-1]
    if is_mcap(path):
        return read_mcap_records(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the record: {exc.strerror}", path=str(path)) from None
    except UnicodeDecodeError:
        raise ConfigError(
            "not a recording: neither MCAP nor JSON lines (a recorder writes .mcap or .jsonl)",
            path=str(path),
        ) from None
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
        elif kind == "node.claim_decided" and (lost := lost_claim(body)) is not None:
            events.append((rec["ts"], rec["sender"], lost.node, "inactive", "own"))
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


#: colour of the mark drawn where a mission failed, timed out or was cancelled
FAILURE_COLOUR = "#cc0000"


def missions_in(records: list[dict[str, Any]]) -> list[str]:
    """The missions a record holds, in the order they first appear."""
    seen: dict[str, None] = {}
    for rec in records:
        named = mission_of(rec.get("body"))
        if named is not None:
            seen.setdefault(named, None)
    return list(seen)


def mission_records(records: list[dict[str, Any]], mission: str) -> list[dict[str, Any]]:
    """The records of one mission: those stamped with it, and the unstamped ones (a
    shared service's) sent while it ran (between its first and last stamped record)."""
    stamped = [r["ts"] for r in records if mission_of(r.get("body")) == mission]
    if not stamped:
        return []
    first, last = min(stamped), max(stamped)
    return [
        r
        for r in records
        if mission_of(r.get("body")) == mission
        or (mission_of(r.get("body")) is None and first <= r["ts"] <= last)
    ]


def pick_mission(records: list[dict[str, Any]], mission: str | None) -> str | None:
    """The mission to draw: `mission`, checked against the record (ConfigError naming
    the missions it holds), else the record's last mission (None: it names none)."""
    held = missions_in(records)
    if mission is None:
        return held[-1] if held else None
    if mission not in held:
        raise ConfigError(
            f"the record holds no mission {mission}; its missions: {', '.join(held) or 'none'}",
            key="--mission",
        )
    return mission


@dataclass(frozen=True, slots=True)
class MissionEnd:
    """How a mission ended, from its merged ``mission.status`` (None: not ended)."""

    state: str  #: succeeded, failed, cancelled or timed_out
    reason: str
    headline: str  #: ``TIMED OUT: after 30 s · 1/3 leaves``
    ts: int  #: wall ms of the last change of the shown status

    @property
    def failed(self) -> bool:
        """Whether the mission did not succeed (failed, timed out, cancelled)."""
        return self.state != "succeeded"


def mission_end(records: list[dict[str, Any]], mission: str | None) -> MissionEnd | None:
    """How `mission` ended, merging every publisher's ``mission.status`` as the
    live views do (a failure outranks a success); None while it had not ended."""
    board = MissionBoard()
    for rec in sorted(records, key=lambda r: r["ts"]):
        if rec["kind"] == STATUS_KIND:
            board.feed(rec["kind"], str(rec.get("sender")), rec.get("body"), rec["ts"])
    view = board.view(mission) if mission else board.view()
    if view is None or not view["ended"]:
        return None
    ts = view["updated_ms"] or max(r["ts"] for r in records)
    return MissionEnd(view["state"], view["reason"], view["headline"], ts)


@dataclass(slots=True)
class TimelineFigure:
    """What one figure draws: a panel per robot or person, a row per leaf, the spans,
    and how the mission ended (``end_s``: seconds from the figure's start)."""

    mission: str | None
    spans: dict[str, dict[str, list[tuple[float, float, str]]]]
    labels: dict[str, str]
    nodes: list[str] = field(default_factory=list)
    end: MissionEnd | None = None
    end_s: float | None = None

    def rows(self) -> dict[str, list[str]]:
        """Each panel's row labels, top to bottom."""
        return {panel: [self.labels.get(n, n) for n in self.nodes] for panel in self.spans}

    def title(self, prefix: str = "") -> str:
        """The figure's title: `prefix`, the mission and, once ended, how it ended."""
        parts = [prefix, f"mission {self.mission}" if self.mission else ""]
        if self.end is not None:
            parts.append(self.end.headline)
        return " · ".join(p for p in parts if p)


def timeline_figure(records: list[dict[str, Any]], mission: str | None = None) -> TimelineFigure:
    """The figure of `mission` (None: the record's only mission, or all of an
    unstamped record). Raises ConfigError when the record holds no such mission."""
    if mission is not None:
        records = mission_records(records, mission)
        if not records:
            raise ConfigError(f"the record holds no message of mission {mission}")
    spans, labels = node_intervals(records)
    nodes = sorted(labels) or sorted({n for r in spans.values() for n in r})
    figure = TimelineFigure(mission, spans, labels, nodes)
    figure.end = mission_end(records, mission)
    starts = [r["ts"] for r in records if str(r["kind"]).startswith("node.")]
    starts += [r["start_ms"] for r in human_rows(records)[:1]]
    if figure.end is not None and starts:
        figure.end_s = max(0.0, (figure.end.ts - min(starts)) / 1000)
    return figure


def draw_timeline(
    records: list[dict[str, Any]],
    output: str | Path,
    title: str = "",
    mission: str | None = None,
) -> Path:
    """Draw the timing diagrams of one mission to a PNG (see ``timeline_figure``); a
    failed, timed-out or cancelled mission is marked where it ended and in the title.
    The PNG's ``Description`` holds the figure's data as JSON (mission, end, rows).
    Raises ConfigError when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    figure = timeline_figure(records, mission)
    spans, labels, nodes = figure.spans, figure.labels, figure.nodes
    if not spans:
        raise ConfigError("the record holds no task-tree transitions to draw", path=str(output))
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
    handles = [Patch(color=c, label=s) for s, c in COLOURS.items()]
    if figure.end is not None and figure.end.failed and figure.end_s is not None:
        end = max(end, figure.end_s)
        said = figure.end.state.replace("_", " ")
        for ax in axes[:, 0]:
            ax.axvline(figure.end_s, color=FAILURE_COLOUR, linewidth=2)
            ax.axvspan(figure.end_s, end * 1.02 + 0.01, color=FAILURE_COLOUR, alpha=0.08)
        axes[0, 0].annotate(
            said.upper(), (figure.end_s, 0), xycoords=("data", "axes fraction"),
            xytext=(-4, 4), textcoords="offset points", ha="right", va="bottom",
            color=FAILURE_COLOUR, fontweight="bold",
        )  # fmt: skip
        handles.append(Patch(color=FAILURE_COLOUR, label=said))
    axes[-1, 0].set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel("time (s)")
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    heading = figure.title(title)
    if heading:  # the whole reason is in the PNG's Title; the figure shows two lines of it
        shown = textwrap.fill(textwrap.shorten(heading, 200, placeholder=" …"), 100)
        fig.suptitle(shown, x=0.02, ha="left", color=_title_colour(figure.end))
    top = 1 - 0.55 / fig.get_figheight()  # room for a two-line title
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, top))
    output = Path(output)
    fig.savefig(output, dpi=110, metadata={"Title": heading, "Description": _described(figure)})
    plt.close(fig)
    return output


def _title_colour(end: MissionEnd | None) -> str:
    return FAILURE_COLOUR if end is not None and end.failed else "black"


def _described(figure: TimelineFigure) -> str:
    """The figure's data as JSON, kept in the PNG so scripts and tests can read it."""
    end = None
    if figure.end is not None:
        end = {"state": figure.end.state, "reason": figure.end.reason, "at_s": figure.end_s}
    return json.dumps({"mission": figure.mission, "end": end, "rows": figure.rows()})
