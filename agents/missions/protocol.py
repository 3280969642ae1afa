"""The mission dispatch protocol: submit, list and cancel missions of a running team.

Requests go to the team channel ``_/missions`` with reply-to and correlation id (as
every teamtree request); the mission queue answers on ``<queue>/reply/<requester>``:

==================  =========================================  =========================
request             body                                       reply (kind, body)
==================  =========================================  =========================
``mission.submit``  ``{mission: {kind, tree, timeout_s}}``     ``mission.accepted``
                                                               ``{id, state, position}``
                                                               or ``mission.rejected``
                                                               ``{field, error}``
``mission.list``    ``{}``                                     ``mission.table``
                                                               ``{missions: [row...]}``
``mission.cancel``  ``{id}``                                   ``mission.cancelled``
                                                               ``{id, state}`` or
                                                               ``mission.rejected``
==================  =========================================  =========================

The queue also keeps the table retained on ``<queue>/missions`` (kind
``mission.table``), so a web page sees it without asking. A row: ``id``, ``kind``,
``state`` (queued, running, cancelling, done, failed, cancelled), ``submitted_ms``,
``started_ms``, ``ended_ms``, ``reason`` and ``summary``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teamtree.agents.runtime.config import MissionSpec, parse_mission
from teamtree.broker import ConfigError, SpecificationError
from teamtree.planners.tasktree import tree_from_dict

CHANNEL = "missions"
TABLE_CHANNEL = "missions"
SUBMIT, LIST, CANCEL = "mission.submit", "mission.list", "mission.cancel"
ACCEPTED, REJECTED, TABLE, CANCELLED = (
    "mission.accepted",
    "mission.rejected",
    "mission.table",
    "mission.cancelled",
)
STATES = ("queued", "running", "cancelling", "done", "failed", "cancelled")
#: mission kinds a queue can run today
DISPATCHABLE = ("tasktree",)


class SubmissionError(ValueError):
    """A submission is wrong; `field` names where (e.g. ``mission.tree``)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"[{field}] {message}")


@dataclass
class MissionRow:
    """One mission the queue knows of."""

    id: str
    kind: str
    state: str = "queued"
    submitted_ms: int = 0
    started_ms: int | None = None
    ended_ms: int | None = None
    reason: str = ""
    summary: str = ""
    spec: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "submitted_ms": self.submitted_ms,
            "started_ms": self.started_ms,
            "ended_ms": self.ended_ms,
            "reason": self.reason,
            "summary": self.summary,
        }


def check_submission(body: Any, objects: set[str] | None) -> MissionSpec:
    """The mission of a ``mission.submit`` body, validated; SubmissionError otherwise.

    `objects` are the world's objects (every leaf's object must be one of them), or
    None when the team has no world to check against."""
    if not isinstance(body, dict) or not isinstance(body.get("mission"), dict):
        raise SubmissionError("mission", "missing; send {mission: {kind, tree, ...}}")
    try:
        spec = parse_mission(body["mission"], Path("<submitted>"))
    except ConfigError as exc:
        raise SubmissionError(exc.key or "mission", str(exc).split("] ", 1)[-1]) from None
    if spec.kind not in DISPATCHABLE:
        raise SubmissionError(
            "mission.kind",
            f"is {spec.kind!r}; this queue runs {', '.join(DISPATCHABLE)} missions",
        )
    raw = spec.params.get("tree")
    if raw is None:
        raise SubmissionError("mission.tree", 'missing; e.g. tree = "THEN(cup, sugar)"')
    try:
        tree = tree_from_dict(raw, where="mission.tree")
    except SpecificationError as exc:
        raise SubmissionError("mission.tree", str(exc)) from None
    if objects is not None:
        for node in tree.nodes.values():
            obj = node.param_dict.get("object") if node.is_leaf else None
            if obj is not None and obj not in objects:
                known = ", ".join(sorted(objects))
                raise SubmissionError(
                    "mission.tree", f"names object {obj!r}, which the world lacks (has: {known})"
                )
    return spec
