"""The favor protocol's wire bodies as declared types, and the codec to the planner's
messages (docs/favors.md is the reference).

Every body is a msgspec Struct: decoding checks each field's type (a wrong body raises
FavorWireError naming the field's path, e.g. ``$.query.method``) and encoding writes
the same keys and msgpack shapes as the hand codec it replaces. A helper's offer
carries its whole profile (its factsheet) as a table that
``teamtree.hardware.RobotProfile.from_dict`` checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import Struct

from teamtree.broker import ConfigError, SpecificationError
from teamtree.hardware import RobotProfile, StrengthCapability
from teamtree.planners.capability import (
    FavorAccept,
    FavorGrant,
    FavorQuery,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRevoke,
    HelperStatus,
    Message,
    Method,
    Offer,
    WorkingMode,
)

T = TypeVar("T")


class FavorWireError(ValueError):
    """A favor body that does not decode (missing field, wrong type)."""


# -- bodies -----------------------------------------------------------------------------


class CapabilityWire(Struct, frozen=True):
    """C = [s q P]: ``n_levels`` and the matrix as rows of 5 numbers."""

    n_levels: int
    matrix: list[list[float]]


class QueryWire(Struct, frozen=True):
    """What a favor request discloses (method 1: C^job and C^req; method 2: nothing)."""

    method: Literal[1, 2]
    job: str
    agent_capable: bool
    c_job: CapabilityWire | None = None
    c_req: CapabilityWire | None = None


class OfferWire(Struct, frozen=True):
    """C^fav: the helper's whole profile (its factsheet) plus what it fits."""

    profile: dict[str, Any]
    fits_job: bool = False
    fits_req: bool = False


class RequestWire(Struct, frozen=True):
    """Body of ``favor.request`` (team channel ``_/favors``); ``deadline_ms`` is UTC ms."""

    request_id: str
    requester: str
    query: QueryWire
    ttl: int
    hops: list[str]
    targets: list[str]
    deadline_ms: int


class LeaseWire(Struct, frozen=True):
    """The ids every directed lease message carries (``<from>/favor/<to>``)."""

    request_id: str
    requester: str
    helper: str


class GrantWire(LeaseWire, frozen=True):
    """Body of ``favor.grant``."""

    offer: OfferWire


class AcceptWire(LeaseWire, frozen=True):
    """Body of ``favor.accept``: the working mode the helper joins in."""

    mode: str


class StatusWire(LeaseWire, frozen=True):
    """Body of ``favor.status``: a helper's heartbeat with its battery."""

    battery: float


class ReasonWire(LeaseWire, frozen=True):
    """Body of ``favor.reject``, ``favor.release`` and ``favor.revoke``."""

    reason: str = ""


#: kind -> body type of every directed lease message
LEASE_BODIES: dict[str, type[LeaseWire]] = {
    "favor.grant": GrantWire,
    "favor.reject": ReasonWire,
    "favor.accept": AcceptWire,
    "favor.release": ReasonWire,
    "favor.revoke": ReasonWire,
    "favor.status": StatusWire,
}


def decode(data: Any, typ: type[T], what: str) -> T:
    """`data` as a `typ`; raises FavorWireError naming `what` and the field's path."""
    try:
        return msgspec.convert(data, typ, strict=True)
    except msgspec.ValidationError as exc:
        raise FavorWireError(f"bad {what}: {exc}") from None


def _plain(struct: Struct) -> dict[str, Any]:
    return msgspec.to_builtins(struct)


# -- capability, query, offer -------------------------------------------------------------


def capability_wire(cap: StrengthCapability | None) -> CapabilityWire | None:
    """C as its wire type, or None."""
    if cap is None:
        return None
    return CapabilityWire(cap.n_levels, cap.matrix.tolist())


def capability_to_wire(cap: StrengthCapability | None) -> dict[str, Any] | None:
    """C = [s q P] as ``{n_levels, matrix}`` (rows of 5 numbers), or None."""
    wire = capability_wire(cap)
    return None if wire is None else _plain(wire)


def _capability(wire: CapabilityWire | None) -> StrengthCapability | None:
    if wire is None:
        return None
    try:
        return StrengthCapability.from_matrix(wire.matrix, wire.n_levels)
    except (TypeError, ValueError, SpecificationError) as exc:
        raise FavorWireError(f"bad capability matrix: {exc}") from None


def capability_from_wire(data: Any) -> StrengthCapability | None:
    """Inverse of :func:`capability_to_wire`; raises FavorWireError."""
    return _capability(None if data is None else decode(data, CapabilityWire, "capability"))


def query_wire(query: FavorQuery) -> QueryWire:
    """A favor query as its wire type."""
    return QueryWire(
        int(query.method),  # type: ignore[arg-type]
        query.job_name,
        query.agent_capable,
        capability_wire(query.c_job),
        capability_wire(query.c_req),
    )


def query_to_wire(query: FavorQuery) -> dict[str, Any]:
    """What a favor request discloses (method 1: C^job and C^req; method 2: nothing)."""
    return _plain(query_wire(query))


def _query(wire: QueryWire) -> FavorQuery:
    return FavorQuery(
        Method(wire.method),
        wire.job,
        wire.agent_capable,
        _capability(wire.c_job),
        _capability(wire.c_req),
    )


def query_from_wire(data: Any) -> FavorQuery:
    """Inverse of :func:`query_to_wire`; raises FavorWireError."""
    return _query(decode(data, QueryWire, "favor query"))


def offer_to_wire(offer: Offer) -> dict[str, Any]:
    """C^fav as the helper's whole profile (its factsheet) plus what it fits."""
    return _plain(OfferWire(offer.profile.to_dict(), offer.fits_job, offer.fits_req))


def _offer(wire: OfferWire) -> Offer:
    try:
        profile = RobotProfile.from_dict(wire.profile)
    except (KeyError, TypeError, AttributeError, ConfigError) as exc:
        raise FavorWireError(f"bad offer: {exc}") from None
    return Offer(profile, wire.fits_job, wire.fits_req)


def offer_from_wire(data: Any) -> Offer:
    """Inverse of :func:`offer_to_wire`; raises FavorWireError."""
    return _offer(decode(data, OfferWire, "offer"))


# -- favor.request ------------------------------------------------------------------------


def request_to_wire(req: FavorRequest, targets: Sequence[str], deadline_ms: int) -> dict[str, Any]:
    """Body of ``favor.request``; ``deadline_ms`` is the request's deadline, UTC ms."""
    return _plain(
        RequestWire(
            req.request_id,
            req.requester,
            query_wire(req.query),
            req.ttl,
            list(req.hops),
            sorted(targets),
            deadline_ms,
        )
    )


def request_from_wire(body: Any, now: float, now_ms: int) -> tuple[FavorRequest, list[str]]:
    """A request and its targets; the wall deadline becomes one on the local monotonic
    clock (``now`` is the local clock at ``now_ms``). Raises FavorWireError."""
    return request_from_typed(decode(body, RequestWire, "favor request"), now, now_ms)


def request_from_typed(
    wire: RequestWire, now: float, now_ms: int
) -> tuple[FavorRequest, list[str]]:
    """A decoded ``favor.request`` body as the planner's request and its targets."""
    deadline = now + (wire.deadline_ms - now_ms) / 1000.0
    req = FavorRequest(
        wire.request_id, wire.requester, _query(wire.query), wire.ttl, deadline, tuple(wire.hops)
    )
    return req, list(wire.targets)


# -- directed lease messages ----------------------------------------------------------------

_KINDS: dict[type, str] = {
    FavorGrant: "favor.grant",
    FavorReject: "favor.reject",
    FavorAccept: "favor.accept",
    FavorRelease: "favor.release",
    FavorRevoke: "favor.revoke",
    HelperStatus: "favor.status",
}
FROM_HELPER = frozenset({"favor.grant", "favor.reject", "favor.revoke", "favor.status"})


def lease_id(msg: Message) -> str:
    """The idempotency key of a lease message: ``<request_id>/<helper>``."""
    return f"{msg.request_id}/{getattr(msg, 'helper', '')}"


def message_to_wire(msg: Message) -> tuple[str, dict[str, Any]]:
    """(kind, body) of a directed lease message."""
    ids = (msg.request_id, msg.requester, getattr(msg, "helper", ""))
    wire: LeaseWire
    if isinstance(msg, FavorGrant):
        wire = GrantWire(
            *ids, OfferWire(msg.offer.profile.to_dict(), msg.offer.fits_job, msg.offer.fits_req)
        )
    elif isinstance(msg, FavorAccept):
        wire = AcceptWire(*ids, msg.mode.value)
    elif isinstance(msg, HelperStatus):
        wire = StatusWire(*ids, msg.battery)
    elif isinstance(msg, FavorReject | FavorRelease | FavorRevoke):
        wire = ReasonWire(*ids, msg.reason)
    else:
        wire = LeaseWire(*ids)
    return _KINDS[type(msg)], _plain(wire)


def message_from_wire(kind: str, body: Any) -> Message:
    """Inverse of :func:`message_to_wire`; raises FavorWireError."""
    typ = LEASE_BODIES.get(kind)
    if typ is None:
        raise FavorWireError(f"unknown favor kind {kind!r}")
    wire = decode(body, typ, f"{kind} body")
    ids = (wire.request_id, wire.requester, wire.helper)
    if isinstance(wire, GrantWire):
        return FavorGrant(*ids, _offer(wire.offer))
    if isinstance(wire, AcceptWire):
        try:
            return FavorAccept(*ids, WorkingMode(wire.mode))
        except ValueError as exc:
            raise FavorWireError(f"bad {kind} body: {exc}") from None
    if isinstance(wire, StatusWire):
        return HelperStatus(*ids, wire.battery)
    assert isinstance(wire, ReasonWire)
    return {"favor.reject": FavorReject, "favor.release": FavorRelease}.get(kind, FavorRevoke)(
        *ids, wire.reason
    )
