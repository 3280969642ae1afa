"""The dispatch protocol's bodies as declared types (docs/missions.md, "The dispatch
protocol").

Requests on ``_/missions`` (``mission.submit``, ``mission.list``, ``mission.cancel``)
and the queue's replies (``mission.accepted``, ``mission.rejected``, ``mission.table``,
``mission.cancelled``) are msgspec Structs; ``decode_dispatch`` decodes one strictly
and raises DispatchWireError (a ``ValueError`` naming msgspec's field path, e.g.
``$.id``). The queue answers a malformed ``submit`` or ``cancel`` with
``mission.rejected`` naming the field, as the protocol does for every wrong
submission; a malformed ``list`` is dropped with the runtime's drop warning. The
clients (``teamtree submit``/``missions``/``cancel``) decode the replies the same way.
A submitted ``mission`` table stays a map: which keys it may hold depends on its kind,
and the queue checks it as the members would (``check_submission``).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from teamtree.agents.runtime.mission_status import MissionStatus
from teamtree.agents.runtime.wire_decode import decode_kind
from teamtree.agents.runtime.wire_decode import to_wire as to_wire  # re-exported

CHANNEL = "missions"
TABLE_CHANNEL = "missions"
SUBMIT, LIST, CANCEL = "mission.submit", "mission.list", "mission.cancel"
ACCEPTED, REJECTED, TABLE, CANCELLED = (
    "mission.accepted",
    "mission.rejected",
    "mission.table",
    "mission.cancelled",
)


class DispatchWireError(ValueError):
    """A dispatch body that does not match its declared type (names the field)."""


class SubmitRequest(Struct, frozen=True):
    """``mission.submit``: ``{mission: {kind, timeout_s, members?, ...the kind's keys}}``."""

    mission: dict[str, Any]


class ListRequest(Struct, frozen=True):
    """``mission.list``: ``{}``."""


class CancelRequest(Struct, frozen=True):
    """``mission.cancel``: ``{id}``."""

    id: str


class Accepted(Struct, frozen=True):
    """``mission.accepted``: the new mission's id, state and place in the queue."""

    id: str
    state: str
    position: int


class Rejected(Struct, frozen=True):
    """``mission.rejected``: the wrong field and why (``[mission.tree] names ...``)."""

    field: str
    error: str


class Row(Struct, frozen=True, omit_defaults=True):
    """One row of the mission table (``submitted_by``/``cancelled_by`` left out when
    empty, so a row nobody is recorded on reads as before)."""

    id: str
    kind: str
    state: str
    submitted_ms: int
    started_ms: int | None
    ended_ms: int | None
    reason: str
    summary: str
    members: list[str]
    #: the login that submitted it: the broker user when the request came on its own
    #: topic to a queue behind access control, else the claimed name + " (unverified)"
    submitted_by: str = ""
    #: the login that cancelled it, in the same form ("" if nobody did)
    cancelled_by: str = ""
    #: its status (``mission.status``): the queue's word on its state merged with its
    #: members' progress, in the kind's own terms
    status: MissionStatus | None = None


class Table(Struct, frozen=True):
    """``mission.table``: every mission the queue knows of."""

    missions: list[Row]


class Cancelled(Struct, frozen=True):
    """``mission.cancelled``: the mission and its state after the cancel."""

    id: str
    state: str


#: requests: kind -> body type
REQUESTS: dict[str, type[Struct]] = {
    SUBMIT: SubmitRequest,
    LIST: ListRequest,
    CANCEL: CancelRequest,
}
#: replies: kind -> body type
REPLIES: dict[str, type[Struct]] = {
    ACCEPTED: Accepted,
    REJECTED: Rejected,
    TABLE: Table,
    CANCELLED: Cancelled,
}
BODIES = {**REQUESTS, **REPLIES}


def decode_dispatch(kind: str, body: Any) -> Any:
    """The body of a dispatch message of `kind` as its Struct; raises DispatchWireError."""
    return decode_kind(BODIES, kind, body, DispatchWireError, "dispatch")
