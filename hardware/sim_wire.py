"""The simulated world's ZeroMQ messages as declared msgspec Structs (docs/protocol.md,
"The simulated world's ZeroMQ requests").

A request is one msgpack map tagged by ``op`` (a tagged union: ``Request``); the world
decodes the bytes straight into its Struct with one strict decoder (no string to number
coercion, ``bool`` is no ``int``, names 1-128 characters), so a malformed or hostile
request becomes a ``BadRequest`` naming the field, and the world answers it
``bad_request`` with that detail. Keys a request does not declare are ignored (a newer
client's extras), as msgpack maps always were here.

Replies are the world's reply maps, encoded as they are; the client checks each against
the reply type of the op it asked (``check_reply``) and hands the map on. The views
inside an observation (robot, objects, hands) stay maps here: the robot types them
when it reads its driver's ``observation`` body.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from teamtree.broker import DecodeError, SchemaError

__all__ = [
    "MAX_MESSAGE",
    "OPS",
    "PROTOCOL_VERSION",
    "REPLY_TYPES",
    "REQUEST_TYPES",
    "BadRequest",
    "CancelRequest",
    "CommandReply",
    "ControlRequest",
    "Event",
    "ExecuteReply",
    "ExecuteRequest",
    "HandCancelRequest",
    "HandMoveRequest",
    "HandObserveReply",
    "HandObserveRequest",
    "HandPlaceRequest",
    "HandReachRequest",
    "InfoReply",
    "InfoRequest",
    "MoveObjectRequest",
    "Name",
    "ObserveReply",
    "ObserveRequest",
    "PauseRequest",
    "Position",
    "RenewRequest",
    "Reply",
    "Request",
    "RequestBase",
    "ResumeRequest",
    "StateReply",
    "StateRequest",
    "Token",
    "check_reply",
    "decode_reply",
    "decode_request",
    "encode",
    "make_request",
]

PROTOCOL_VERSION = 1
MAX_MESSAGE = 1 << 20
"""Largest request or reply accepted, bytes."""

Name = Annotated[str, Meta(min_length=1, max_length=128)]
"""A robot, hand, object or command name: 1-128 characters."""
Position = tuple[float, float, float]
Token = tuple[int, int, str]
"""A lease holder's claim stamp ``[wall_ms, logical, agent]``."""


class BadRequest(SchemaError):
    """A request the world cannot read; `rid` is its request id when that was readable."""

    def __init__(self, reason: str, rid: int | None = None):
        super().__init__(reason)
        self.rid = rid


# -- requests -------------------------------------------------------------------------


class RequestBase(Struct, frozen=True, kw_only=True, tag_field="op"):
    """Every request: ``v`` (protocol version) and ``rid`` (echoed in the reply)."""

    rid: int
    v: Literal[1] = PROTOCOL_VERSION


class InfoRequest(RequestBase, frozen=True, tag="info"):
    """Robots (with profiles and start poses), objects, hands, time factor."""


class StateRequest(RequestBase, frozen=True, tag="state"):
    """The whole world (the ``world.state`` body)."""


class ObserveRequest(RequestBase, frozen=True, tag="observe"):
    """What `robot` sees, with its events after `since` and `track_s` s of hand track;
    with `objects_since` (0, then the reply's ``objects_version``) only the objects whose
    view changed after that version (without it, every object: older clients)."""

    robot: Name
    since: Annotated[int, Meta(ge=0)] = 0
    track_s: Annotated[float, Meta(ge=0)] = 0.5
    objects_since: Annotated[int, Meta(ge=0)] | None = None


class ExecuteRequest(RequestBase, frozen=True, tag="execute"):
    """Start `behaviour` on `robot`; with `lease_ms` (ms on the holder's clock) it
    stops then unless renewed. `sent_ms` (the holder's clock when it sent this) and
    `clock` (an id of that clock) let the world read the deadline on its own clock
    (``hardware.world.lease_clocks``); without them `lease_ms` is read as the world's
    UTC ms. `token` (the holder's claim stamp) is kept for the record."""

    robot: Name
    command_id: Name
    behaviour: Name
    node: str | None = None
    params: dict[str, Any] | None = None
    lease_ms: int | None = None
    token: Token | None = None
    sent_ms: int | None = None
    clock: Name | None = None


class RenewRequest(RequestBase, frozen=True, tag="renew"):
    """Move the lease of `command_id` on to `lease_ms` (`sent_ms`, `clock`: as for
    ``execute``)."""

    robot: Name
    command_id: Name
    lease_ms: int
    token: Token | None = None
    sent_ms: int | None = None
    clock: Name | None = None


class ControlRequest(RequestBase, frozen=True):
    """What ``cancel``, ``pause`` and ``resume`` share: the `robot` and its
    `command_id` (nil: whatever it runs now)."""

    robot: Name
    command_id: Name | None = None


class CancelRequest(ControlRequest, frozen=True, tag="cancel"):
    """Cancel `command_id` (nil: whatever `robot` runs)."""


class PauseRequest(ControlRequest, frozen=True, tag="pause"):
    """Pause `command_id` (nil: whatever `robot` runs)."""


class ResumeRequest(ControlRequest, frozen=True, tag="resume"):
    """Resume `command_id` (nil: whatever `robot` has paused)."""


class MoveObjectRequest(RequestBase, frozen=True, tag="move_object"):
    """Put `object` at `position` (and turn it to `yaw`) by hand."""

    object: Name
    position: Position
    yaw: float | None = None


class HandReachRequest(RequestBase, frozen=True, tag="hand_reach"):
    """Move `hand` to `object` and grasp it, `then` ``place`` (at `goal`, default its
    goal) or ``hold``. `then` is checked by the world (``bad_params``)."""

    hand: Name
    command_id: Name
    object: Name
    then: str = "place"
    goal: Position | None = None


class HandPlaceRequest(RequestBase, frozen=True, tag="hand_place"):
    """Carry what `hand` holds to `goal` (default its goal) and let go."""

    hand: Name
    command_id: Name
    goal: Position | None = None


class HandMoveRequest(RequestBase, frozen=True, tag="hand_move"):
    """Move an empty `hand` to `position`."""

    hand: Name
    command_id: Name
    position: Position


class HandCancelRequest(RequestBase, frozen=True, tag="hand_cancel"):
    """Stop `hand` where it is."""

    hand: Name


class HandObserveRequest(RequestBase, frozen=True, tag="hand_observe"):
    """What the person owning `hand` sees, with its events after `since`."""

    hand: Name
    since: Annotated[int, Meta(ge=0)] = 0


Request = (
    CancelRequest
    | ExecuteRequest
    | HandCancelRequest
    | HandMoveRequest
    | HandObserveRequest
    | HandPlaceRequest
    | HandReachRequest
    | InfoRequest
    | MoveObjectRequest
    | ObserveRequest
    | PauseRequest
    | RenewRequest
    | ResumeRequest
    | StateRequest
)
"""One request of any op (the tagged union the world decodes)."""

REQUEST_TYPES: dict[str, type[RequestBase]] = {
    t.__struct_config__.tag: t  # type: ignore[misc]
    for t in Request.__args__  # type: ignore[attr-defined]
}
"""op -> its request type."""
OPS = tuple(sorted(REQUEST_TYPES))


# -- replies --------------------------------------------------------------------------


class Reply(Struct, frozen=True, kw_only=True):
    """Every reply: ``rid`` echoed (nil when the request's was unreadable), ``ok``,
    ``reason`` when not ok, and ``detail`` with ``reason = "bad_request"``."""

    rid: int | None
    ok: bool
    reason: str | None = None
    detail: str | None = None
    v: Literal[1] = PROTOCOL_VERSION


class Event(Struct, frozen=True):
    """One logged event (``started``, ``paused``, ``resumed``, ``finished``, ``failed``);
    a lapsed lease's ``failed`` also names the ``object`` and where it was ``left_at``."""

    seq: int
    t: float
    kind: str
    robot: str
    command_id: str
    node: str | None
    ok: bool
    reason: str | None
    object: str | None = None
    left_at: Position | None = None


class CommandReply(Reply, frozen=True):
    """A command's answer: its `status` (``running``, ``paused``, ``finished``,
    ``failed``, ``cancelled``, ``idle``), its `command_id` (nil: ``cancel`` of an idle
    robot), and ``duplicate`` on a repeated ``execute``."""

    status: str
    command_id: str | None
    duplicate: bool = False


class ExecuteReply(CommandReply, frozen=True):
    """``execute``'s answer: a command's, and the ``fence`` the world granted it on its
    object (see ``teamtree.hardware.world.fences``; absent on a refusal or a repeat)."""

    fence: int | None = None


class ObserveReply(Reply, frozen=True):
    """A robot's view: the world's time, its body, every object (or, asked with
    ``objects_since``, those changed after it, and ``objects_version``), its events after
    ``since`` with the latest ``seq``, and (with people in the world) tracked hands."""

    t: float
    robot: dict[str, Any]
    objects: dict[str, dict[str, Any]]
    events: list[Event]
    seq: int
    hands: dict[str, dict[str, Any]] | None = None
    objects_version: int | None = None


class HandObserveReply(Reply, frozen=True):
    """A person's view: their hand's true pose, every object, robot and hand, and the
    hand's events after ``since``."""

    t: float
    hand: dict[str, Any]
    objects: dict[str, dict[str, Any]]
    robots: dict[str, dict[str, Any]]
    hands: dict[str, dict[str, Any]]
    events: list[Event]
    seq: int


class InfoReply(Reply, frozen=True):
    """The world's static description and clock."""

    t: float
    robots: dict[str, dict[str, Any]]
    objects: list[str]
    goal_tolerance: float
    hands: dict[str, dict[str, Any]]
    time_factor: float = 1.0


class StateReply(Reply, frozen=True):
    """The whole world (the ``world.state`` body); ``violations`` is the count so far."""

    t: float
    objects: dict[str, dict[str, Any]]
    robots: dict[str, dict[str, Any]]
    violations: int
    hands: dict[str, dict[str, Any]] | None = None


REPLY_TYPES: dict[str, type[Reply]] = {
    "cancel": CommandReply,
    "execute": ExecuteReply,
    "hand_cancel": Reply,
    "hand_move": CommandReply,
    "hand_observe": HandObserveReply,
    "hand_place": CommandReply,
    "hand_reach": CommandReply,
    "info": InfoReply,
    "move_object": Reply,
    "observe": ObserveReply,
    "pause": CommandReply,
    "renew": CommandReply,
    "resume": CommandReply,
    "state": StateReply,
}
"""op -> the type of its ``ok`` reply (a refusal is a ``Reply``, whatever else it
carries)."""


# -- codec ----------------------------------------------------------------------------

_REQUESTS = msgspec.msgpack.Decoder(Request)
_ENCODER = msgspec.msgpack.Encoder()


class _Head(Struct):
    """What is read of a request that failed its type, to answer it."""

    rid: Any = None
    v: Any = None


_HEAD = msgspec.msgpack.Decoder(_Head)


def _head(raw: bytes) -> _Head:
    """``rid`` and ``v`` of a map; raises DecodeError when `raw` is no msgpack map."""
    try:
        return _HEAD.decode(raw)
    except msgspec.ValidationError:
        raise DecodeError("not a msgpack map") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise DecodeError(f"not msgpack: {exc}") from None


def decode_request(raw: bytes) -> Request:
    """One request from bytes. Raises DecodeError (not a msgpack map, too large) or
    BadRequest (wrong version, a field missing or of the wrong type, an unknown op),
    naming the field and carrying the request's ``rid`` when that was an integer."""
    if len(raw) > MAX_MESSAGE:
        raise DecodeError(f"message of {len(raw)} bytes is over {MAX_MESSAGE}")
    try:
        request = _REQUESTS.decode(raw)
    except msgspec.ValidationError as exc:
        head = _head(raw)
        rid = head.rid if type(head.rid) is int else None
        if head.v != PROTOCOL_VERSION:
            raise BadRequest(_version(head.v), rid) from None
        raise BadRequest(_explain(str(exc)), rid) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise DecodeError(f"not msgpack: {exc}") from None
    return request


def _version(v: Any) -> str:
    return f"protocol version {v!r}, expected {PROTOCOL_VERSION}; send 'v': {PROTOCOL_VERSION}"


def _explain(error: str) -> str:
    """msgspec's message, with the ops listed when the op is what is wrong."""
    if "`op`" in error or "`$.op`" in error:
        return f"{error}; 'op' must be one of {', '.join(OPS)}"
    return error


def encode(message: Request | dict[str, Any]) -> bytes:
    """A request Struct, or a reply map (``v`` added), as msgpack bytes."""
    if isinstance(message, dict):
        return _ENCODER.encode({"v": PROTOCOL_VERSION, **message})
    return _ENCODER.encode(message)


def make_request(op: str, rid: int, **fields: Any) -> Request:
    """The request Struct of `op`. Raises SchemaError naming an unknown op or field."""
    typ = REQUEST_TYPES.get(op)
    if typ is None:
        raise SchemaError(f"op {op!r} is not one of {', '.join(OPS)}")
    try:
        return typ(rid=rid, **fields)  # type: ignore[return-value]
    except TypeError as exc:
        raise SchemaError(f"{op} request: {exc}") from None


def decode_reply(raw: bytes) -> dict[str, Any]:
    """A reply map from bytes, with an integer ``rid`` and ``v`` 1. Raises DecodeError
    or SchemaError. Check its fields against its op with ``check_reply``."""
    if len(raw) > MAX_MESSAGE:
        raise DecodeError(f"message of {len(raw)} bytes is over {MAX_MESSAGE}")
    try:
        reply = msgspec.msgpack.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise DecodeError(f"not msgpack: {exc}") from None
    if not isinstance(reply, dict):
        raise DecodeError("not a msgpack map")
    if reply.get("v") != PROTOCOL_VERSION:
        raise SchemaError(_version(reply.get("v")))
    if type(reply.get("rid")) is not int:
        raise SchemaError("'rid' must be an integer")
    return reply


def check_reply(op: str, reply: dict[str, Any]) -> None:
    """Raise SchemaError naming the field when `reply` is not the reply type of `op`
    (its ``ok`` type; a refusal is checked as a ``Reply``)."""
    typ = REPLY_TYPES[op] if reply.get("ok") is True else Reply
    try:
        msgspec.convert(reply, typ, strict=True)
    except msgspec.ValidationError as exc:
        raise SchemaError(f"bad {op} reply: {exc}") from None
