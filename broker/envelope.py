"""The envelope every teamtree message travels in (msgpack map), and its codec.

Fields on the wire (``protocol.md`` is the reference):

=========  =======  ==========================================================
key        type     meaning
=========  =======  ==========================================================
v          int      schema version (1)
kind       str      message kind, dotted (``presence``, ``node.claim``, ...)
sender     str      agent id of the publisher; must equal the topic's agent id
hid        int      header id, monotonic per (sender, topic)
ts         int      wall time at send, UTC milliseconds
hlc        list     hybrid-logical-clock stamp ``[wall_ms, logical, sender]``
body       any      the payload (msgpack types only)
reply_to   str      optional: agent id that wants the reply
corr       str      optional: correlation id of a request and its replies
deadline   int      optional: UTC ms after which a request is void
to         str      optional: the one agent a team-channel message is for
key        str      optional: idempotency key for commitments
sid        str      optional: the sender's random id for this connection; receivers
                    de-duplicate on (topic, sender, sid, hid)
=========  =======  ==========================================================
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from teamtree.broker.errors import DecodeError, SchemaError, TooLargeError
from teamtree.broker.hlc import HlcStamp
from teamtree.broker.topics import ID_PATTERN, validate_id

SCHEMA_VERSION = 1
MAX_PAYLOAD = 256 * 1024
_KIND_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"
_KIND = re.compile(_KIND_PATTERN)
_OPTIONAL_STR = ("reply_to", "corr", "to", "key", "sid")
_Kind = Annotated[str, Meta(max_length=64, pattern=_KIND_PATTERN)]
_Id = Annotated[str, Meta(pattern=ID_PATTERN)]
_Count = Annotated[int, Meta(ge=0)]
_Short = Annotated[str, Meta(max_length=128)]


class Envelope(msgspec.Struct, frozen=True):
    """One decoded message. Build with the agent's helpers rather than by hand.
    (A frozen msgspec Struct rather than a dataclass: one is made for every message
    sent and received, in a fraction of a frozen dataclass's time.)"""

    kind: str
    sender: str
    hid: int
    ts: int
    hlc: HlcStamp
    body: Any = None
    reply_to: str | None = None
    corr: str | None = None
    deadline: int | None = None
    to: str | None = None
    key: str | None = None
    sid: str | None = None
    v: int = SCHEMA_VERSION

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": self.v,
            "kind": self.kind,
            "sender": self.sender,
            "hid": self.hid,
            "ts": self.ts,
            "hlc": self.hlc.to_wire(),
            "body": self.body,
        }
        for name in ("reply_to", "corr", "deadline", "to", "key", "sid"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def _no_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code} is not allowed")


_DECODER = msgspec.msgpack.Decoder(ext_hook=_no_ext)
"""msgspec decodes a payload faster than msgpack-python, and every robot decodes every
peer's messages (benchmarks/bench_envelope_decode.py). Unlike msgpack-python's strict default
it accepts map keys of any msgpack type and gives a timestamp extension as a
``datetime``: the typed bodies still require string keys and their own field types."""


class _Wire(msgspec.Struct, frozen=True):
    """An envelope as the wire carries it, every header rule of ``_decode_checked``
    but the HLC stamp's (its node is the sender, its counters are not negative)
    written as msgspec constraints, checked in C as the payload is read."""

    v: int
    kind: _Kind
    sender: _Id
    hid: _Count
    ts: _Count
    hlc: HlcStamp
    body: Any = None
    reply_to: _Short | None = None
    corr: _Short | None = None
    deadline: int | None = None
    to: _Short | None = None
    key: _Short | None = None
    sid: _Short | None = None


_WIRE_DECODER = msgspec.msgpack.Decoder(_Wire, ext_hook=_no_ext)


_WIRE_ENCODER = msgspec.msgpack.Encoder()


def encode(envelope: Envelope, *, max_size: int = MAX_PAYLOAD) -> bytes:
    """Serialise an envelope. Raises TooLargeError over `max_size`, SchemaError on
    a body that msgpack cannot carry.

    msgspec's encoder writes the bytes ``msgpack.packb(..., use_bin_type=True)`` writes
    for every msgpack type (``tests/test_wire.py`` checks it on random envelopes), in a
    quarter of the time. It also writes a set as an array, where packb refuses one."""
    try:
        data = _WIRE_ENCODER.encode(envelope.to_wire())
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        raise SchemaError(f"body cannot be encoded: {exc}", sender=envelope.sender) from None
    if len(data) > max_size:
        raise TooLargeError(
            f"payload of {len(data)} bytes is over the {max_size}-byte cap", sender=envelope.sender
        )
    return data


def decode(data: bytes, *, max_size: int = MAX_PAYLOAD, topic: str | None = None) -> Envelope:
    """Parse and validate a payload. Raises DecodeError, SchemaError or TooLargeError;
    never anything else, whatever the bytes."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DecodeError(f"payload is {type(data).__name__}, not bytes", topic=topic)
    if len(data) > max_size:
        raise TooLargeError(
            f"payload of {len(data)} bytes is over the {max_size}-byte cap", topic=topic
        )
    try:  # a well-formed envelope, checked as it is read (_Wire)
        w = _WIRE_DECODER.decode(data)
    except Exception:  # anything else: the checks below say what is wrong, or accept it
        pass
    else:
        hlc = w.hlc
        if w.v == SCHEMA_VERSION and hlc.node == w.sender and hlc.wall_ms >= 0 and hlc.logical >= 0:
            return Envelope(
                w.kind, w.sender, w.hid, w.ts, hlc, w.body, w.reply_to, w.corr, w.deadline,
                w.to, w.key, w.sid,
            )  # fmt: skip
    return _decode_checked(data, topic)


def _decode_checked(data: bytes | bytearray | memoryview, topic: str | None) -> Envelope:
    """``decode`` field by field: the payloads msgspec's typed read refused (each
    gets the error naming what is wrong) and the few it is stricter on than the
    protocol (a boolean in an HLC stamp's counters, a map key that is not a string)."""
    try:
        raw = _DECODER.decode(data)
    except Exception as exc:  # hostile input: DecodeError, RecursionError, the ext hook
        raise DecodeError(
            f"not a msgpack payload ({type(exc).__name__}: {exc})", topic=topic
        ) from None
    if not isinstance(raw, dict):
        raise SchemaError(f"envelope is a {type(raw).__name__}, not a map", topic=topic)
    sender = raw.get("sender")
    who = sender if isinstance(sender, str) else None

    def fail(reason: str) -> SchemaError:
        return SchemaError(reason, topic=topic, sender=who)

    version = raw.get("v")
    if version != SCHEMA_VERSION:
        raise fail(f"schema version {version!r} is not supported (expected {SCHEMA_VERSION})")
    kind = raw.get("kind")
    if not isinstance(kind, str) or len(kind) > 64 or not _KIND.match(kind):
        raise fail(f"kind {kind!r} is not a dotted lowercase name")
    try:
        validate_id(sender, "sender")
    except Exception:
        raise fail(f"sender {sender!r} is not a valid agent id") from None
    for name in ("hid", "ts"):
        value = raw.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise fail(f"{name} {value!r} is not a non-negative integer")
    try:
        hlc = HlcStamp.from_wire(raw.get("hlc"))
    except ValueError as exc:
        raise fail(str(exc)) from None
    if hlc.node != sender:
        raise fail(f"hlc node {hlc.node!r} is not the sender")
    for name in _OPTIONAL_STR:
        value = raw.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > 128):
            raise fail(f"{name} {value!r} is not a string of at most 128 characters")
    deadline = raw.get("deadline")
    if deadline is not None and (not isinstance(deadline, int) or isinstance(deadline, bool)):
        raise fail(f"deadline {deadline!r} is not an integer (UTC ms)")
    return Envelope(
        kind=kind,
        sender=sender,
        hid=raw["hid"],
        ts=raw["ts"],
        hlc=hlc,
        body=raw.get("body"),
        reply_to=raw.get("reply_to"),
        corr=raw.get("corr"),
        deadline=deadline,
        to=raw.get("to"),
        key=raw.get("key"),
        sid=raw.get("sid"),
    )
