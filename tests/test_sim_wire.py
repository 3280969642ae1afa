"""The simulated world's typed ZeroMQ requests and replies: every request type round-trips
through the wire, every reply type passes the client's check, and random or hostile
request bytes always get an answer from the world's dispatcher (never an exception).
Hypothesis prints the failing example and its reproduce blob."""

from __future__ import annotations

import math
import time
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import inspect as mi

from teamtree.broker import SchemaError
from teamtree.hardware import World
from teamtree.hardware import sim_wire as wire
from teamtree.hardware.sim_protocol import answer, encode
from tests.test_world_model import APPLE, CUP, ROBOTS

HANDS = {"alice": {"rest": [0.2, 0.6, 0.9]}}
NAMES = (
    "pr2",
    "baxter",
    "alice",
    "cup",
    "apple",
    "c1",
    "c2",
    "n1",
    "object",
    "goal",
    "place",
    "hold",
)


def world() -> World:
    return World.from_spec({"cup": CUP, "apple": APPLE}, ROBOTS, HANDS)


# -- strategies from the declared types -----------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
ANY = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(NAMES), inner, max_size=4)
    ),
    max_leaves=20,
)
"""Any msgpack value."""


def of(info: mi.Type) -> st.SearchStrategy[Any]:
    """Values a field of type `info` accepts (names drawn mostly from the world's)."""
    if isinstance(info, mi.StrType):
        low, high = info.min_length or 0, info.max_length or 40
        return st.sampled_from([n for n in NAMES if low <= len(n) <= high]) | st.text(
            min_size=max(low, 1) if low else 0, max_size=min(high, 40)
        )
    if isinstance(info, mi.IntType):
        return st.integers(min_value=info.ge if info.ge is not None else -(2**40), max_value=2**40)
    if isinstance(info, mi.FloatType):
        return st.floats(min_value=info.ge, max_value=1e6, allow_nan=False) | st.floats(
            min_value=info.ge if info.ge is not None else -2.0, max_value=2.0
        )
    if isinstance(info, mi.BoolType):
        return st.booleans()
    if isinstance(info, mi.NoneType):
        return st.none()
    if isinstance(info, mi.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, mi.TupleType):
        return st.tuples(*(of(item) for item in info.item_types))
    if isinstance(info, mi.ListType):
        return st.lists(of(info.item_type), max_size=3)
    if isinstance(info, mi.DictType):
        return st.dictionaries(of(info.key_type), of(info.value_type), max_size=3)
    if isinstance(info, mi.UnionType):
        return st.one_of(*(of(t) for t in info.types))
    if isinstance(info, mi.StructType):
        return st.fixed_dictionaries(
            {f.encode_name: of(f.type) for f in info.fields if f.required},
            optional={f.encode_name: of(f.type) for f in info.fields if not f.required},
        ).map(lambda d: info.cls(**d))
    if isinstance(info, mi.AnyType):
        return ANY
    raise AssertionError(f"no strategy for {info!r}")


def instances(typ: type) -> st.SearchStrategy[Any]:
    return of(mi.type_info(typ))


# -- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize("op", wire.OPS)
@settings(max_examples=15, deadline=None, print_blob=True)
@given(data=st.data())
def test_every_request_type_round_trips(op: str, data: st.DataObject) -> None:
    request = data.draw(instances(wire.REQUEST_TYPES[op]))
    raw = encode(request)
    assert encode(wire.decode_request(raw)) == raw  # bytes: NaN in params is NaN again
    assert msgpack.unpackb(raw)["op"] == op  # the wire names the op as before


@pytest.mark.parametrize("op", wire.OPS)
@settings(max_examples=10, deadline=None, print_blob=True)
@given(data=st.data())
def test_every_reply_type_passes_the_clients_check(op: str, data: st.DataObject) -> None:
    typ = wire.REPLY_TYPES[op]
    reply = msgspec.to_builtins(data.draw(instances(typ)))
    reply["ok"], reply["rid"] = True, 7  # a reply the client matches: ok, to its request
    decoded = wire.decode_reply(encode(reply))
    wire.check_reply(op, decoded)
    assert encode(msgspec.convert(decoded, typ)) == encode(msgspec.convert(reply, typ))


def test_the_client_check_names_a_wrong_reply_field() -> None:
    reply = {"v": 1, "rid": 1, "ok": True, "reason": None, "t": 0.0, "robot": {},
             "objects": {}, "events": [], "seq": "3"}  # fmt: skip
    with pytest.raises(SchemaError, match=r"observe reply.*\$\.seq"):
        wire.check_reply("observe", reply)
    refusal = {"v": 1, "rid": 1, "ok": False, "reason": "unknown_robot"}
    wire.check_reply("observe", refusal)  # a refusal carries no view


def test_the_world_answers_what_a_real_client_sends() -> None:
    """Every reply the world gives to well-formed requests passes the client's check."""
    w = world()
    now_ms = time.time_ns() // 1_000_000
    sent = [
        ("info", {}),
        ("observe", {"robot": "pr2", "since": 0}),
        ("execute", {"robot": "pr2", "command_id": "c1", "behaviour": "place", "node": "n1",
                     "params": {"object": "cup"}, "lease_ms": now_ms + 5000,
                     "token": (now_ms, 0, "r1")}),
        ("renew", {"robot": "pr2", "command_id": "c1", "lease_ms": now_ms + 9000,
                   "token": (now_ms, 0, "r1")}),
        ("pause", {"robot": "pr2", "command_id": None}),
        ("resume", {"robot": "pr2"}),
        ("hand_reach", {"hand": "alice", "command_id": "h1", "object": "apple",
                        "then": "hold"}),
        ("hand_observe", {"hand": "alice", "since": 0}),
        ("state", {}),
        ("cancel", {"robot": "pr2", "command_id": "c1"}),
        ("hand_cancel", {"hand": "alice"}),
        ("hand_move", {"hand": "alice", "command_id": "h2", "position": (0.2, 0.6, 0.9)}),
        ("hand_place", {"hand": "alice", "command_id": "h3"}),
        ("move_object", {"object": "apple", "position": (0.4, 0.3, 0.79), "yaw": 0.5}),
        ("observe", {"robot": "baxter", "since": 0, "track_s": 1.0}),
    ]  # fmt: skip
    for rid, (op, fields) in enumerate(sent, 1):
        raw = encode(wire.make_request(op, rid, **fields))
        reply = answer(w, raw, rid * 0.5, now_ms=now_ms, time_factor=1.0)
        decoded = wire.decode_reply(encode(reply))
        assert decoded["rid"] == rid
        assert decoded.get("reason") != "bad_request", (op, decoded)
        wire.check_reply(op, decoded)
    assert {op for op, _ in sent} == set(wire.OPS)


# -- hostile requests -----------------------------------------------------------------


def _assert_answered(w: World, raw: bytes) -> dict[str, Any]:
    reply = answer(w, raw, 1.0, now_ms=time.time_ns() // 1_000_000, time_factor=2.0)
    assert isinstance(reply["ok"], bool)
    assert reply["rid"] is None or type(reply["rid"]) is int
    if reply["reason"] == "bad_request":
        assert isinstance(reply["detail"], str) and reply["detail"]
    encode(reply)  # the answer can go out
    for obj in w.objects.values():  # and nothing unreadable got into the world
        assert all(math.isfinite(v) for v in (*obj.position, obj.yaw)), obj
    return reply


def _packb(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


@settings(max_examples=200, deadline=None, print_blob=True)
@given(raw=st.binary(max_size=200))
def test_random_bytes_always_get_an_answer(raw: bytes) -> None:
    _assert_answered(world(), raw)


@settings(max_examples=150, deadline=None, print_blob=True)
@given(value=ANY)
def test_any_msgpack_value_always_gets_an_answer(value: Any) -> None:
    _assert_answered(world(), _packb(value))


@settings(
    max_examples=250,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data(), op=st.sampled_from(wire.OPS))
def test_requests_with_hostile_fields_always_get_an_answer(data: st.DataObject, op: str) -> None:
    """A well-formed request of `op` with fields replaced by, or added as, anything."""
    message = msgspec.to_builtins(data.draw(instances(wire.REQUEST_TYPES[op])))
    keys = sorted(message)
    for key in data.draw(st.lists(st.sampled_from([*keys, "extra"]), max_size=3)):
        if data.draw(st.booleans()):
            message[key] = data.draw(ANY)
        else:
            message.pop(key, None)
    w = world()
    reply = _assert_answered(w, _packb(message))
    if reply["reason"] != "bad_request":  # read as its op: the reply has that op's type
        wire.check_reply(op, wire.decode_reply(encode(reply)))


def test_a_deeply_nested_request_gets_an_answer() -> None:
    mark = _packb("NESTED-HERE")
    raw = _packb({"v": 1, "op": "execute", "rid": 3, "robot": "pr2", "command_id": "c",
                  "behaviour": "place", "params": {"object": "NESTED-HERE"}})  # fmt: skip
    raw = raw.replace(mark, b"\x91" * 100_000 + b"\x00")  # [[[...[0]...]]]
    reply = _assert_answered(world(), raw)
    assert reply["reason"] == "bad_request" and "recursion" in reply["detail"]


@settings(max_examples=100, deadline=None, print_blob=True)
@given(
    params=st.dictionaries(st.sampled_from(["object", "goal", "speed"]), ANY, max_size=3),
    robot=st.sampled_from(["pr2", "baxter"]),
)
def test_execute_with_hostile_params_gets_an_answer(params: dict, robot: str) -> None:
    """``params`` is the behaviour's own map: the world reads it, so it must survive it."""
    message = {"v": 1, "op": "execute", "rid": 5, "robot": robot, "command_id": "c",
               "behaviour": "place", "params": params}  # fmt: skip
    reply = _assert_answered(world(), _packb(message))
    assert reply["rid"] == 5


@pytest.mark.parametrize("yaw", [math.nan, math.inf, -math.inf])
def test_a_non_finite_yaw_is_refused(yaw: float) -> None:
    w = world()
    message = {"v": 1, "op": "move_object", "rid": 6, "object": "cup",
               "position": [0.1, 0.1, 0.8], "yaw": yaw}  # fmt: skip
    reply = _assert_answered(w, _packb(message))
    assert reply == {"rid": 6, "ok": False, "reason": "bad_params"}
