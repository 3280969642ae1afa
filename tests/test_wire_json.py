"""The wire -> JSON decoding (``wire_json``) that echo, the recorders and the live view
share: on any envelope that can travel it writes valid JSON (RFC 8259: no NaN), keeps
the envelope's fields, and gives back a body of JSON's own values unchanged.
Hypothesis prints the falsifying example and its blob (``print_blob``) to replay it."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.wire_json import jsonable, message_record, record_json
from teamtree.broker import Envelope, HlcStamp, decode, encode
from teamtree.broker.topics import parse

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,20}", fullmatch=True)
kinds = st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.[a-z][a-z0-9_]{0,8}){0,2}", fullmatch=True)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
"""Bodies of JSON's own values: these come back unchanged."""
wire_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats()
    | st.text(max_size=20) | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.integers(-3, 3) | st.booleans(), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
"""Anything msgpack carries: NaN and infinities, bytes, keys that are not strings."""


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in {text!r} is not JSON")

    return json.loads(text, parse_constant=refuse)


@st.composite
def arrived(draw: st.DrawFn, bodies: st.SearchStrategy) -> tuple[Envelope, str]:
    """An envelope as a receiver has it (encoded, then decoded) and its topic."""
    sender = draw(ids)
    env = Envelope(
        kind=draw(kinds), sender=sender, hid=draw(st.integers(0, 2**62)),
        ts=draw(st.integers(0, 2**50)),
        hlc=HlcStamp(draw(st.integers(0, 2**50)), draw(st.integers(0, 2**20)), sender),
        body=draw(bodies), reply_to=draw(st.none() | ids),
        corr=draw(st.none() | st.text(max_size=32)), deadline=draw(st.none() | st.integers(0, 2**50)),
        to=draw(st.none() | ids), key=draw(st.none() | st.text(max_size=32)),
    )  # fmt: skip
    topic = f"teamtree/v1/team/{sender}/{draw(ids)}"
    return decode(encode(env)), topic


@given(arrived(json_values), st.none() | st.booleans())
@settings(max_examples=200, print_blob=True)
def test_a_body_of_json_values_comes_back_unchanged(message, retained) -> None:
    env, topic = message
    got = _strict(record_json(message_record(env, parse(topic), retained=retained)))
    assert got["body"] == env.body
    assert got["topic"] == topic and got["kind"] == env.kind and got["sender"] == env.sender
    assert got["ts"] == env.ts and got["hlc"] == [env.hlc.wall_ms, env.hlc.logical, env.sender]
    for name in ("reply_to", "corr", "deadline", "to", "key"):
        assert got.get(name) == getattr(env, name)
    assert got.get("retained") == retained


def _plain(value: object) -> object:
    """The JSON a msgpack value stands for, written out independently of ``jsonable``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k if isinstance(k, str) else json.dumps(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@given(arrived(wire_values))
@settings(max_examples=200, print_blob=True)
def test_any_body_that_travels_is_written_as_valid_json(message) -> None:
    env, topic = message
    text = record_json(message_record(env, topic))
    assert "\n" not in text  # one line of a JSON-lines file
    got = _strict(text)
    assert got["body"] == _plain(env.body)
    assert got["body"] == jsonable(env.body)


def test_values_json_lacks_have_one_form_each() -> None:
    body = {"nan": float("nan"), "inf": float("-inf"), "raw": b"\x00\xff", 3: "three", None: 1}
    env = Envelope("k.x", "a", 1, 2, HlcStamp(2, 0, "a"), body=body)
    got = _strict(record_json(message_record(env, "teamtree/v1/t/a/c")))
    assert got["body"] == {"nan": None, "inf": None, "raw": "00ff", "3": "three", "null": 1}
