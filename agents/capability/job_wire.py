"""Job messages on the wire (docs/favors.md, "Jobs"): the job source's ``job.assign``
and the robots' reports on ``<robot>/job_report``, each a declared msgspec Struct.

``decode_assign`` and ``decode_report`` check every field's type and raise
JobWireError (a ``ValueError`` naming the field's path, e.g. ``$.job_id``) on a
malformed body, which the receiver drops with the runtime's aggregated drop warning.
Unknown keys are ignored.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body


class JobWireError(ValueError):
    """A job body that does not match its declared type."""


class JobAssign(Struct, frozen=True):
    """``job.assign``: work job `job` (``job1``..``job5``) for ``work_s`` seconds."""

    job_id: str
    job: str
    work_s: float = 1.0


class JobAccepted(Struct, frozen=True):
    """``job.accepted``."""

    job_id: str
    job: str


class JobDeclined(Struct, frozen=True):
    """``job.declined``: not idle, or an unknown job."""

    job_id: str
    job: str
    reason: str


class LostHelper(Struct, frozen=True):
    """A helper lost during a job."""

    helper: str
    reason: str
    at_ms: int


class JobSelected(Struct, frozen=True):
    """``job.selected``, again after every re-selection."""

    job_id: str
    job: str
    agent: str
    mode: str
    helpers: list[str]
    members: list[str]
    tower: list[str]
    round: int
    method: int
    closed_by: str
    at_ms: int
    selection_ms: float
    grants_ms: list[int]
    height: int | None = None
    grasp_by: str | None = None
    move_by: str | None = None
    asked: int = 0


class Reselection(Struct, frozen=True):
    """One selection of a finished job, in ``job.done``'s ``selections``."""

    mode: str
    helpers: list[str]
    tower: list[str]
    round: int
    at_ms: int
    closed_by: str


class JobDone(JobSelected, frozen=True):
    """``job.done``: the last ``job.selected`` plus how the job went."""

    done_ms: int = 0
    received_ms: int = 0
    rounds: int = 0
    lost: list[LostHelper] = []
    selections: list[Reselection] = []
    battery: float = 0.0


class JobFailed(Struct, frozen=True):
    """``job.failed``; ``impossible``: no team can do the job under this method."""

    job_id: str
    job: str
    agent: str
    reason: str
    impossible: bool
    rounds: int
    done_ms: int
    lost: list[LostHelper]


JOB_REPORTS: dict[str, type[Struct]] = {
    "job.accepted": JobAccepted,
    "job.declined": JobDeclined,
    "job.done": JobDone,
    "job.failed": JobFailed,
    "job.selected": JobSelected,
}
"""Report kind -> its body type."""


def _decode(body: Any, typ: type[Any], what: str) -> Any:
    return decode_body(body, typ, JobWireError, what)


def decode_assign(body: Any) -> JobAssign:
    """A ``job.assign`` body; raises JobWireError."""
    return _decode(body, JobAssign, "job.assign")


def decode_report(kind: str, body: Any) -> Struct:
    """The body of report `kind` as its Struct; raises JobWireError (also for a kind
    that is not a job report)."""
    typ = JOB_REPORTS.get(kind)
    if typ is None:
        raise JobWireError(f"unknown job report {kind!r}; expected one of {sorted(JOB_REPORTS)}")
    return _decode(body, typ, kind)
