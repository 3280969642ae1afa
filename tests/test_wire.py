"""The wire: envelope codec, topics, hybrid logical clock."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace as msgspec_replace

from teamtree.broker import (
    DecodeError,
    Envelope,
    HlcStamp,
    HybridLogicalClock,
    SchemaError,
    TooLargeError,
    TopicError,
    WireError,
    decode,
    encode,
)
from teamtree.broker.envelope import _decode_checked
from teamtree.broker.topics import build, parse, pattern, validate_id

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,20}", fullmatch=True)
kinds = st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.[a-z][a-z0-9_]{0,8}){0,2}", fullmatch=True)
bodies = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=20) | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@st.composite
def envelopes(draw: st.DrawFn) -> Envelope:
    sender = draw(ids)
    return Envelope(
        kind=draw(kinds),
        sender=sender,
        hid=draw(st.integers(0, 2**62)),
        ts=draw(st.integers(0, 2**50)),
        hlc=HlcStamp(draw(st.integers(0, 2**50)), draw(st.integers(0, 2**20)), sender),
        body=draw(bodies),
        reply_to=draw(st.none() | ids),
        corr=draw(st.none() | st.text(max_size=32)),
        deadline=draw(st.none() | st.integers(0, 2**50)),
        to=draw(st.none() | ids),
        key=draw(st.none() | st.text(max_size=32)),
    )


@given(envelopes())
def test_codec_round_trip(env: Envelope) -> None:
    assert decode(encode(env)) == env


@given(envelopes())
def test_the_encoder_writes_what_msgpack_writes(env: Envelope) -> None:
    """msgspec's encoder (for speed) writes the very bytes of msgpack-python's packb,
    the reference the wire was written with: an older peer reads them alike."""
    assert encode(env) == msgpack.packb(env.to_wire(), use_bin_type=True)


def test_a_body_msgpack_cannot_carry_is_a_schema_error() -> None:
    env = Envelope("k", "a", 1, 1, HlcStamp(1, 0, "a"), body={"x": object()})
    with pytest.raises(SchemaError, match="cannot be encoded"):
        encode(env)
    with pytest.raises(SchemaError, match="cannot be encoded"):
        encode(msgspec_replace(env, body=2**64))


@given(st.binary(max_size=512))
@settings(max_examples=500)
def test_garbage_raises_only_wire_errors(data: bytes) -> None:
    with contextlib.suppress(WireError):
        decode(data)


@given(envelopes(), st.integers(1, 200))
def test_truncated_payloads_are_wire_errors(env: Envelope, cut: int) -> None:
    data = encode(env)
    with pytest.raises(WireError):
        decode(data[: max(0, len(data) - cut)])


@given(st.dictionaries(st.sampled_from(["v", "kind", "sender", "hid", "ts", "hlc", "body", "to"]),
                       bodies, max_size=8))  # fmt: skip
def test_wrongly_typed_maps_are_schema_errors(raw: dict) -> None:
    with pytest.raises(WireError):
        decode(msgpack.packb(raw, use_bin_type=True))


_odd_strings = st.sampled_from(["a\n", "A.b", "x" * 65, "r1", "node.claim", "a..b", "-a", "é"])
_odd_values = st.one_of(
    _odd_strings, _odd_strings, _odd_strings,  # names the patterns refuse, more often
    st.none(), st.booleans(), st.integers(-5, 5), st.integers(2**62, 2**64 - 1),
    st.floats(allow_nan=False), st.text(max_size=3), st.text(min_size=129, max_size=140),
    st.binary(max_size=4), st.lists(st.integers(0, 3) | st.booleans() | ids, max_size=4),
)  # fmt: skip


_fields = st.sampled_from(["v", "kind", "sender", "hid", "ts", "hlc", "reply_to", "corr",
                           "deadline", "to", "key", "sid", "extra"])  # fmt: skip


@given(
    envelopes(),
    st.lists(st.tuples(_fields, _odd_values), min_size=1, max_size=2),
    st.sets(st.sampled_from(["v", "kind", "sender", "hid", "ts", "hlc", "body", "to"]), max_size=1),
    st.booleans(),
    st.none() | _odd_strings,
)
@settings(max_examples=600, print_blob=True)
def test_the_typed_read_accepts_and_refuses_as_the_field_checks_do(
    env: Envelope,
    changed: list[tuple[str, object]],
    dropped: set[str],
    int_key: bool,
    renamed: str | None,
) -> None:
    """``decode`` reads a payload straight into msgspec's typed envelope and falls back
    to the field-by-field checks only when that read refuses it: on any near-valid
    map (a field changed to an odd value, a field dropped, a key that is not a
    string, a sender renamed in its HLC stamp too), both give the same envelope or the
    same error."""
    raw = env.to_wire()
    if renamed is not None:
        raw["sender"], raw["hlc"] = renamed, [*raw["hlc"][:2], renamed]
    raw = {k: v for k, v in raw.items() if k not in dropped} | dict(changed)
    if int_key:
        raw[7] = "seven"
    data = msgpack.packb(raw, use_bin_type=True)
    try:
        want = _decode_checked(data, None)
    except WireError as exc:
        with pytest.raises(type(exc)) as got:
            decode(data)
        assert str(got.value) == str(exc)
    else:
        assert decode(data) == want


def test_oversized_payload_is_refused_both_ways() -> None:
    env = Envelope("blob", "a", 1, 1, HlcStamp(1, 0, "a"), body=b"x" * 2000)
    with pytest.raises(TooLargeError):
        encode(env, max_size=1000)
    with pytest.raises(TooLargeError):
        decode(encode(env), max_size=1000)


def test_schema_errors_name_the_field() -> None:
    env = Envelope("node.claim", "a", 1, 1, HlcStamp(1, 0, "a"))
    raw = env.to_wire()
    raw["hlc"] = [1, 0, "b"]
    with pytest.raises(SchemaError, match="hlc node"):
        decode(msgpack.packb(raw))
    raw = env.to_wire() | {"v": 99}
    with pytest.raises(SchemaError, match="schema version 99"):
        decode(msgpack.packb(raw))
    with pytest.raises(DecodeError):
        decode(b"\xc1")
    with pytest.raises(SchemaError, match="not a map"):
        decode(msgpack.packb([1, 2]))


def test_topics_round_trip_and_reject_wildcards() -> None:
    assert str(parse(build("team1", "pr2", "state"))) == "teamtree/v1/team1/pr2/state"
    t = parse(build("team1", None, "favors"))
    assert t.agent is None and t.channel == "favors"
    t = parse(build("team1", "pr2", "reply", "baxter"))
    assert t.recipient == "baxter"
    assert pattern("team1", "+", "connection") == "teamtree/v1/team1/+/connection"
    for bad in ["a/b", "a+", "#", "$SYS", "", "x" * 65, " a"]:
        with pytest.raises(TopicError):
            validate_id(bad)
    for bad in ["teamtree/v2/t/a/c", "other/v1/t/a/c", "teamtree/v1/t/a", "teamtree/v1/t/a/c/d/e"]:
        with pytest.raises(TopicError):
            parse(bad)


@given(ids, st.one_of(st.none(), ids), ids, st.one_of(st.none(), ids))
def test_topic_build_parse_property(
    team: str, agent: str | None, channel: str, rcpt: str | None
) -> None:
    if agent == "_":
        return
    topic = parse(build(team, agent, channel, rcpt))
    assert (topic.team, topic.agent, topic.channel, topic.recipient) == (team, agent, channel, rcpt)


def test_hlc_is_monotonic_with_a_stuck_clock() -> None:
    clock = HybridLogicalClock("a", clock=lambda: 1000)
    stamps = [clock.now() for _ in range(5)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 5


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5000), st.integers(0, 50)), max_size=40))
def test_hlc_orders_causally(events: list[tuple[bool, int, int]]) -> None:
    """Every stamp exceeds the previous local stamp and any remote stamp it merged."""
    physical = [1000]
    clock = HybridLogicalClock("a", clock=lambda: physical[0], max_offset_ms=10_000)
    last = clock.now()
    for is_receive, wall, logical in events:
        physical[0] += 1 if wall % 3 else 0
        if is_receive:
            remote = HlcStamp(wall, logical, "b")
            stamp = clock.update(remote)
            if remote.wall_ms <= physical[0] + 10_000:
                assert stamp[:2] > remote[:2]
        else:
            stamp = clock.now()
        assert stamp > last
        last = stamp


def test_hlc_refuses_a_stamp_far_in_the_future() -> None:
    clock = HybridLogicalClock("a", clock=lambda: 1000, max_offset_ms=100)
    stamp = clock.update(HlcStamp(10**12, 0, "evil"))
    assert stamp.wall_ms == 1000 and clock.rejected == 1
