"""The simulated robot SDK's wire protocol: msgpack maps over ZeroMQ ROUTER/DEALER, and
the world's dispatcher (``serve``, ``answer``; pure: no sockets here).

The world agent binds a ROUTER (its address is the ``zmq`` field of its factsheet);
each driver connects a DEALER and sends one-frame requests (an empty delimiter frame
before it, REQ-style, is accepted too). Every request carries ``rid``, an integer the
client chooses; the reply echoes it, so one DEALER can have several requests in flight.
The ops, their fields and their replies are the Structs of ``sim_wire`` (listed in
docs/protocol.md, "The simulated world's ZeroMQ requests").

A malformed request gets ``{ok: false, reason: "bad_request", detail}`` naming what is
wrong, with its ``rid`` when that was readable (nil otherwise); the world never stops
for one.

``observe`` takes ``track_s`` (seconds of hand track, default 0.5); when the world
has human hands its reply carries ``hands: {name: {name, position, holding, busy,
target, track: [[t, x, y, z], ...]}}`` — tracked, noisy positions (seed 000 §2.3, the
camera's view of a hand). The ``hand_*`` ops are the simulated person's body: the
human agent (or ``teamtree human``) moves its hand with them; hand events appear in
``hand_observe`` under the hand's name.

Leases (fencing at the body): ``lease_ms`` is a deadline on the holder's clock after
which the body stops by itself unless ``renew`` moved it on. With ``sent_ms`` and
``clock`` the world reads it on its own wall clock, however far the holder's runs
off (``hardware.world.lease_clocks``); without them it takes ``lease_ms`` as its own
UTC ms. It turns the deadline into simulated time with ``time_factor``. Each command
started on an object is granted the object's next fence; a renewal of a command
granted over since is refused ``fenced`` (``hardware.world.fences``). ``token``, the
holder's claim stamp, is kept for the record and orders nothing.

Completion is polled, not pushed: the world logs events (``started``, ``paused``,
``resumed``, ``finished``, ``failed``) with increasing ``seq``; ``observe`` returns
the robot's events after ``since`` and the latest ``seq``. A driver polls observe at
~20 Hz, so a completion reaches it within one poll and no event is lost while it is
briefly away (the world keeps the last 10,000).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from teamtree.broker import SchemaError, WireError
from teamtree.hardware.sim_wire import (
    MAX_MESSAGE,
    OPS,
    PROTOCOL_VERSION,
    BadRequest,
    CancelRequest,
    ExecuteRequest,
    HandCancelRequest,
    HandMoveRequest,
    HandObserveRequest,
    HandPlaceRequest,
    HandReachRequest,
    InfoRequest,
    MoveObjectRequest,
    ObserveRequest,
    PauseRequest,
    RenewRequest,
    Request,
    ResumeRequest,
    StateRequest,
    decode_request,
    encode,
)
from teamtree.hardware.world import World

__all__ = [
    "MAX_MESSAGE",
    "OPS",
    "PROTOCOL_VERSION",
    "answer",
    "bad_request",
    "decode_request",
    "encode",
    "serve",
]


def bad_request(error: WireError) -> dict[str, Any]:
    """The reply to a request that could not be read: ``bad_request`` with the detail."""
    rid = error.rid if isinstance(error, BadRequest) else None
    return {"rid": rid, "ok": False, "reason": "bad_request", "detail": error.reason}


def answer(world: World, raw: bytes, t: float, **kwargs: Any) -> dict[str, Any]:
    """Decode `raw` and ``serve`` it; a request that cannot be read is answered
    ``bad_request`` (never raises for bad input). `kwargs` as for ``serve``."""
    try:
        request = decode_request(raw)
    except WireError as exc:
        return bad_request(exc)
    return serve(world, request, t, **kwargs)


def serve(
    world: World, request: Request, t: float, *, now_ms: int | None = None, **info: Any
) -> dict[str, Any]:
    """Answer one decoded request against `world` at simulated time `t` (the world
    agent's dispatcher; pure). `info` is merged into ``info`` replies. Never raises
    for a bad request: it answers ``bad_request``. ``observe`` and ``state`` replies
    share the world's views of objects nobody holds: encode them, do not change them.
    `now_ms` (wall clock, UTC ms, with ``info["time_factor"]``) turns lease deadlines
    into simulated time; without it a request with a lease is a ``bad_request``."""
    try:
        reply = _HANDLERS[type(request)](world, request, t, now_ms, info)
    except SchemaError as exc:
        return {"rid": request.rid, "ok": False, "reason": "bad_request", "detail": exc.reason}
    return {"rid": request.rid, **reply}


_Handler = Callable[[World, Any, float, "int | None", dict[str, Any]], dict[str, Any]]


def _deadline(
    w: World, r: ExecuteRequest | RenewRequest, t: float, now_ms: int | None, info: dict
) -> float:
    """`r`'s lease deadline (ms on the holder's clock) in simulated time."""
    if now_ms is None:
        raise SchemaError("this world keeps no wall clock; send no 'lease_ms'")
    assert r.lease_ms is not None
    factor = float(info.get("time_factor", 1.0))
    local = w.lease_clocks.deadline_ms(r.robot, r.clock, r.lease_ms, r.sent_ms, now_ms)
    return t + (local - now_ms) / 1000.0 * factor


def _execute(w: World, r: ExecuteRequest, t: float, now_ms: int | None, info: dict) -> dict:
    lease = None if r.lease_ms is None else _deadline(w, r, t, now_ms, info)
    token = r.token if lease is not None else None
    params = r.params or {}
    return w.execute(
        r.robot, r.command_id, r.node, r.behaviour, params, t, lease=lease, token=token
    )


def _renew(w: World, r: RenewRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.renew(r.robot, r.command_id, _deadline(w, r, t, now_ms, info), t, r.token)


def _control(name: str) -> _Handler:
    def handle(w: World, r: Any, t: float, now_ms: int | None, info: dict) -> dict:
        return getattr(w, name)(r.robot, r.command_id, t)

    return handle


def _observe(w: World, r: ObserveRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.observe(  # encoded at once
        r.robot, t, r.since, r.track_s, shared=True, objects_since=r.objects_since
    )


def _move(w: World, r: MoveObjectRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.move_object(r.object, r.position, t, r.yaw)


def _info(w: World, r: InfoRequest, t: float, now_ms: int | None, info: dict) -> dict:
    w.advance(t)
    return {"ok": True, "reason": None, "t": round(w.t, 4), **w.info(), **info}


def _state(w: World, r: StateRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return {"ok": True, "reason": None, **w.state(t, shared=True)}


def _hand_reach(w: World, r: HandReachRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.hand_reach(r.hand, r.command_id, r.object, t, r.then, r.goal)


def _hand_place(w: World, r: HandPlaceRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.hand_place(r.hand, r.command_id, t, r.goal)


def _hand_move(w: World, r: HandMoveRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.hand_move(r.hand, r.command_id, r.position, t)


def _hand_cancel(w: World, r: HandCancelRequest, t: float, now_ms: int | None, info: dict) -> dict:
    return w.hand_cancel(r.hand, t)


def _hand_observe(
    w: World, r: HandObserveRequest, t: float, now_ms: int | None, info: dict
) -> dict:
    return w.observe_hand(r.hand, t, r.since)


_HANDLERS: dict[type, _Handler] = {
    CancelRequest: _control("cancel"),
    ExecuteRequest: _execute,
    HandCancelRequest: _hand_cancel,
    HandMoveRequest: _hand_move,
    HandObserveRequest: _hand_observe,
    HandPlaceRequest: _hand_place,
    HandReachRequest: _hand_reach,
    InfoRequest: _info,
    MoveObjectRequest: _move,
    ObserveRequest: _observe,
    PauseRequest: _control("pause"),
    RenewRequest: _renew,
    ResumeRequest: _control("resume"),
    StateRequest: _state,
}
