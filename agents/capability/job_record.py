"""What a factory robot keeps of a job it owns, and the bodies of the reports it
publishes about it (``job.selected``, ``job.failed``, ``job.done``; their types are in
``job_wire.py``)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from teamtree.broker import PlanningError, TeamtreeError
from teamtree.hardware import AssembledTeam
from teamtree.planners.capability import (
    ControlGraph,
    FavorRequester,
    JobSpec,
    Selected,
    SelectionFailed,
)

SUMMARY_KEYS = ("mode", "helpers", "tower", "round", "at_ms", "closed_by")
"""The keys of each selection that a ``job.done`` report lists."""


@dataclass
class JobRecord:
    """A job this robot owns (it is the agent): when it came, what was selected, which
    helpers were lost, when the grants came."""

    job_id: str
    spec: JobSpec
    source: str
    work_s: float
    received: float
    received_ms: int
    remaining: float = 0.0
    selection_s: float | None = None
    selections: list[dict[str, Any]] = field(default_factory=list)
    lost: list[dict[str, Any]] = field(default_factory=list)
    grants_ms: list[int] = field(default_factory=list)

    def since_ms(self, now: float) -> int:
        """Milliseconds from the job's receipt to `now`."""
        return int((now - self.received) * 1000)


def control_summary(team: AssembledTeam, job: JobSpec) -> dict[str, str]:
    """Who grasps and who moves in an assembled team (least-cost paths, §VI.A)."""
    out: dict[str, str] = {}
    graph = ControlGraph.for_team(team, job)
    sensors = [
        n
        for n, d in sorted(graph.graph.nodes(data=True))
        if d.get("kind") == "component" and n.split("/")[1].startswith("P")
    ]
    if not sensors:
        return out
    # the top-level eye: on the highest robot (it sees what the tower reaches)
    source = max(sensors, key=lambda n: team.ids.index(n.split("/")[0]))
    for action, key in (("grasp", "grasp_by"), ("move", "move_by")):
        with contextlib.suppress(PlanningError):
            out[key] = graph.route(source, action).robot
    return out


def selection_body(
    job: JobRecord, act: Selected, agent: str, requester: FavorRequester | None, now: float
) -> dict[str, Any]:
    """A ``job.selected`` report's body (without the selection time and grant times)."""
    sel = act.selection
    body: dict[str, Any] = {
        "job_id": job.job_id,
        "job": job.spec.name,
        "agent": agent,
        "mode": sel.mode.value,
        "helpers": list(sel.helpers),
        "members": list(sel.members),
        "tower": list(sel.team.ids) if sel.team is not None else [],
        "round": act.round,
        "method": int(sel.method),
        "closed_by": requester.closed_by if requester is not None else "",
        "asked": requester.asking.asked if requester is not None else 0,
        "at_ms": job.since_ms(now),
    }
    if sel.team is not None:
        body["height"] = sel.team.height
        with contextlib.suppress(TeamtreeError, KeyError, ValueError, IndexError):
            body.update(control_summary(sel.team, job.spec))
    return body


def failure_body(
    job: JobRecord, act: SelectionFailed, agent: str, rounds: int, now: float
) -> dict[str, Any]:
    """A ``job.failed`` report's body."""
    return {
        "job_id": job.job_id,
        "job": job.spec.name,
        "agent": agent,
        "reason": act.reason,
        "impossible": act.impossible,
        "rounds": rounds,
        "done_ms": job.since_ms(now),
        "lost": job.lost,
    }


def done_body(job: JobRecord, rounds: int, battery: float, now: float) -> dict[str, Any]:
    """A ``job.done`` report's body: the last selection, the times, every selection."""
    return {
        **job.selections[-1],
        "selection_ms": round((job.selection_s or 0.0) * 1000, 1),
        "done_ms": job.since_ms(now),
        "received_ms": job.received_ms,
        "rounds": rounds,
        "lost": job.lost,
        "selections": [{k: s[k] for k in SUMMARY_KEYS} for s in job.selections],
        "battery": round(battery, 3),
    }
