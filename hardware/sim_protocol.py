"""The simulated robot SDK's wire format: msgpack maps over ZeroMQ ROUTER/DEALER.

The world agent binds a ROUTER (its address is the ``zmq`` field of its factsheet);
each driver connects a DEALER and sends one-frame requests (an empty delimiter frame
before it, REQ-style, is accepted too). Every request carries ``rid``, an integer the
client chooses; the reply echoes it, so one DEALER can have several requests in flight.

Request ``{"v": 1, "op": OP, "rid": int, ...}``:

=========== ===================================================== =====================
op          fields                                                reply fields
=========== ===================================================== =====================
info                                                              robots, objects,
                                                                  goal_tolerance,
                                                                  time_factor, t
observe     robot, since (event seq, default 0)                   t, robot, objects,
                                                                  events, seq
execute     robot, command_id, node, behaviour, params,           status, command_id
            lease_ms, token (optional: the lease)
renew       robot, command_id, lease_ms, token                    status, command_id
cancel      robot, command_id (or nil: the current one)           status, command_id
pause       robot, command_id (or nil)                            status, command_id
resume      robot, command_id (or nil)                            status, command_id
move_object object, position [x, y, z], yaw (optional)
state                                                             t, objects, robots,
                                                                  violations, hands
hand_reach  hand, command_id, object, then ("place" | "hold"),    status, command_id
            goal (optional)
hand_place  hand, command_id, goal (optional): the held object    status, command_id
hand_move   hand, command_id, position [x, y, z]                  status, command_id
hand_cancel hand
hand_observe hand, since                                          t, hand, objects,
                                                                  robots, hands,
                                                                  events, seq
=========== ===================================================== =====================

``observe`` also takes ``track_s`` (seconds of hand track, default 0.5); when the world
has human hands its reply carries ``hands: {name: {name, position, holding, busy,
target, track: [[t, x, y, z], ...]}}`` — tracked, noisy positions (seed 000 §2.3, the
camera's view of a hand). The ``hand_*`` ops are the simulated person's body: the
human agent (or ``teamtree human``) moves its hand with them; hand events appear in
``hand_observe`` under the hand's name.

Leases (fencing at the body): ``lease_ms`` is a wall-clock deadline (UTC ms, the
holder's clock) after which the body stops by itself unless ``renew`` moved it on;
``token`` is the holder's claim stamp ``[wall_ms, logical, agent]``, and an older
token than the newest one used on the object is refused ``fenced``. The world turns
the deadline into simulated time with its own wall clock and ``time_factor``.

Reply ``{"v": 1, "rid": int, "ok": bool, "reason": str | nil, ...}``. A malformed
request gets ``ok = false, reason = "bad_request"`` and a ``detail``.

Completion is polled, not pushed: the world logs events (``started``, ``paused``,
``resumed``, ``finished``, ``failed``) with increasing ``seq``; ``observe`` returns
the robot's events after ``since`` and the latest ``seq``. A driver polls observe at
~20 Hz, so a completion reaches it within one poll and no event is lost while it is
briefly away (the world keeps the last 10,000).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from teamtree.broker import DecodeError, SchemaError
from teamtree.hardware.world import World

PROTOCOL_VERSION = 1
MAX_MESSAGE = 1 << 20
"""Largest request or reply accepted, bytes."""
OPS = (
    "cancel",
    "execute",
    "hand_cancel",
    "hand_move",
    "hand_observe",
    "hand_place",
    "hand_reach",
    "info",
    "move_object",
    "observe",
    "pause",
    "renew",
    "resume",
    "state",
)

_ROBOT_OPS = {"observe", "execute", "cancel", "pause", "renew", "resume"}
_HAND_OPS = {"hand_cancel", "hand_move", "hand_observe", "hand_place", "hand_reach"}


def encode(message: dict[str, Any]) -> bytes:
    """One protocol message as msgpack bytes (``v`` is added)."""
    return msgpack.packb({"v": PROTOCOL_VERSION, **message}, use_bin_type=True)


def decode(raw: bytes) -> dict[str, Any]:
    """A protocol message from bytes. Raises DecodeError (not a msgpack map, too large)
    or SchemaError (wrong version)."""
    if len(raw) > MAX_MESSAGE:
        raise DecodeError(f"message of {len(raw)} bytes is over {MAX_MESSAGE}")
    try:
        message = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except Exception as exc:
        raise DecodeError(f"not msgpack: {exc}") from None
    if not isinstance(message, dict):
        raise DecodeError("not a msgpack map")
    if message.get("v") != PROTOCOL_VERSION:
        raise SchemaError(f"protocol version {message.get('v')!r}, expected {PROTOCOL_VERSION}")
    return message


def request(op: str, rid: int, **fields: Any) -> dict[str, Any]:
    """A request map (without ``v``)."""
    return {"op": op, "rid": rid, **fields}


def _text(message: dict[str, Any], key: str, optional: bool = False) -> str | None:
    value = message.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 128:
        raise SchemaError(f"{key!r} must be a non-empty string of at most 128 characters")
    return value


def _position(message: dict[str, Any], key: str) -> list[float]:
    value = message.get(key)
    if (
        not isinstance(value, list | tuple)
        or len(value) != 3
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise SchemaError(f"{key!r} must be three numbers")
    return [float(v) for v in value]


def serve(
    world: World, message: dict[str, Any], t: float, *, now_ms: int | None = None, **info: Any
) -> dict[str, Any]:
    """Answer one decoded request against `world` at simulated time `t` (the world
    agent's dispatcher; pure). `info` is merged into ``info`` replies. Never raises
    for a bad request: it answers ``bad_request``. ``observe`` and ``state`` replies
    share the world's views of objects nobody holds: encode them, do not change them.
    `now_ms` (wall clock, UTC ms, with ``info["time_factor"]``) turns lease deadlines
    into simulated time; without it a request with a lease is a ``bad_request``."""
    rid = message.get("rid")
    try:
        op = message.get("op")
        if op not in OPS:
            raise SchemaError(f"op {op!r} is not one of {', '.join(OPS)}")
        if not isinstance(rid, int) or isinstance(rid, bool):
            raise SchemaError("'rid' must be an integer")
        robot = _text(message, "robot") if op in _ROBOT_OPS else None
        if op in _HAND_OPS:
            robot = _text(message, "hand")
        handler = _HANDLERS[op]
        if op in ("execute", "renew"):
            message = {**message, "_lease": _lease(message, t, now_ms, info)}
        reply = handler(world, message, robot, t)
        if op == "info":
            reply.update(info)
    except SchemaError as exc:
        return {"rid": rid, "ok": False, "reason": "bad_request", "detail": exc.reason}
    return {"rid": rid, **reply}


def _since(m: dict[str, Any]) -> int:
    since = m.get("since", 0)
    if not isinstance(since, int) or isinstance(since, bool) or since < 0:
        raise SchemaError("'since' must be an integer >= 0")
    return since


def _observe(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
    track_s = m.get("track_s", 0.5)
    if not isinstance(track_s, int | float) or isinstance(track_s, bool) or track_s < 0:
        raise SchemaError("'track_s' must be a number >= 0")
    return world.observe(robot, t, _since(m), float(track_s), shared=True)  # encoded at once


def _optional_position(m: dict[str, Any], key: str) -> list[float] | None:
    return None if m.get(key) is None else _position(m, key)


def _hand_reach(world: World, m: dict[str, Any], hand: Any, t: float) -> dict[str, Any]:
    then = m.get("then", "place")
    if not isinstance(then, str):
        raise SchemaError("'then' must be 'place' or 'hold'")
    return world.hand_reach(
        hand,
        _text(m, "command_id"),
        _text(m, "object"),
        t,
        then,
        _optional_position(m, "goal"),  # type: ignore[arg-type]
    )


def _hand_place(world: World, m: dict[str, Any], hand: Any, t: float) -> dict[str, Any]:
    return world.hand_place(hand, _text(m, "command_id"), t, _optional_position(m, "goal"))  # type: ignore[arg-type]


def _hand_move(world: World, m: dict[str, Any], hand: Any, t: float) -> dict[str, Any]:
    return world.hand_move(hand, _text(m, "command_id"), _position(m, "position"), t)  # type: ignore[arg-type]


def _hand_cancel(world: World, m: dict[str, Any], hand: Any, t: float) -> dict[str, Any]:
    return world.hand_cancel(hand, t)


def _hand_observe(world: World, m: dict[str, Any], hand: Any, t: float) -> dict[str, Any]:
    return world.observe_hand(hand, t, _since(m))


def _lease(
    m: dict[str, Any], t: float, now_ms: int | None, info: dict[str, Any]
) -> tuple[float | None, Any]:
    """(deadline in simulated time, fencing token) of a request; (None, None) without."""
    lease_ms, token = m.get("lease_ms"), m.get("token")
    if lease_ms is None:
        if m.get("op") == "renew":
            raise SchemaError("'lease_ms' must be an integer (UTC ms)")
        return None, None
    if not isinstance(lease_ms, int) or isinstance(lease_ms, bool):
        raise SchemaError("'lease_ms' must be an integer (UTC ms)")
    if token is not None:
        if not (
            isinstance(token, list | tuple)
            and len(token) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) for v in token[:2])
            and isinstance(token[2], str)
        ):
            raise SchemaError("'token' must be [wall_ms, logical, agent] or nil")
        token = (token[0], token[1], token[2])
    if now_ms is None:
        raise SchemaError("this world keeps no wall clock; send no 'lease_ms'")
    factor = float(info.get("time_factor", 1.0))
    return t + (lease_ms - now_ms) / 1000.0 * factor, token


def _renew(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
    lease, token = m["_lease"]
    return world.renew(robot, _text(m, "command_id"), lease, t, token)  # type: ignore[arg-type]


def _execute(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
    command_id = _text(m, "command_id")
    behaviour = _text(m, "behaviour")
    node = m.get("node")
    if node is not None and not isinstance(node, str):
        raise SchemaError("'node' must be a string or nil")
    params = m.get("params") or {}
    if not isinstance(params, dict):
        raise SchemaError("'params' must be a map")
    lease, token = m.get("_lease") or (None, None)
    return world.execute(robot, command_id, node, behaviour, params, t, lease=lease, token=token)  # type: ignore[arg-type]


def _control(name: str) -> Callable[[World, dict[str, Any], Any, float], dict[str, Any]]:
    def handle(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
        command_id = _text(m, "command_id", optional=True)
        return getattr(world, name)(robot, command_id, t)

    return handle


def _move(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
    name = _text(m, "object")
    yaw = m.get("yaw")
    if yaw is not None and (not isinstance(yaw, int | float) or isinstance(yaw, bool)):
        raise SchemaError("'yaw' must be a number")
    return world.move_object(name, _position(m, "position"), t, yaw)  # type: ignore[arg-type]


def _info(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
    world.advance(t)
    return {"ok": True, "reason": None, "t": round(world.t, 4), **world.info()}


def _state(world: World, m: dict[str, Any], robot: Any, t: float) -> dict[str, Any]:
    return {"ok": True, "reason": None, **world.state(t, shared=True)}


_HANDLERS: dict[str, Callable[[World, dict[str, Any], Any, float], dict[str, Any]]] = {
    "cancel": _control("cancel"),
    "execute": _execute,
    "hand_cancel": _hand_cancel,
    "hand_move": _hand_move,
    "hand_observe": _hand_observe,
    "hand_place": _hand_place,
    "hand_reach": _hand_reach,
    "info": _info,
    "move_object": _move,
    "observe": _observe,
    "pause": _control("pause"),
    "renew": _renew,
    "resume": _control("resume"),
    "state": _state,
}
