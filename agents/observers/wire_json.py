"""A wire message as JSON: the one decoding behind ``teamtree echo``, the recorders
(JSON lines and MCAP) and the live Foxglove view, so each shows a message the same way.

A record is ``{"topic", "kind", "sender", "ts", "hlc", "body", ...}`` with the
envelope's optional fields (``corr``, ``reply_to``, ``to``, ...) when set. msgpack
carries values JSON lacks; they become JSON this way, always valid (RFC 8259):
bytes as hex text, a non-finite float (NaN, infinity) as null, a map key that is not a
string as its text, a timestamp as ISO 8601 text (and, in a view such as the monitor's
that is not a message, a set as a list, anything else as its text).
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

__all__ = ["OPTIONAL_FIELDS", "jsonable", "message_record", "record_json"]

OPTIONAL_FIELDS = ("reply_to", "corr", "deadline", "to", "key")
"""The envelope's optional fields a record carries when the message set them."""


def message_record(
    env: Envelope,
    topic: Topic | str,
    *,
    retained: bool | None = None,
    recorded_ms: int | None = None,
) -> dict[str, Any]:
    """`env` received on `topic` as a record (plain values; ``record_json`` writes it)."""
    record: dict[str, Any] = {
        "topic": str(topic),
        "kind": env.kind,
        "sender": env.sender,
        "ts": env.ts,
        "hlc": list(env.hlc),
        "body": env.body,
    }
    for name in OPTIONAL_FIELDS:
        value = getattr(env, name)
        if value is not None:
            record[name] = value
    if recorded_ms is not None:
        record["recorded_ms"] = recorded_ms
    if retained is not None:
        record["retained"] = retained
    return record


def _hex(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def jsonable(value: Any) -> Any:
    """`value` (decoded msgpack) as plain JSON values, by the rules above."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else json.dumps(jsonable(k))): jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, set | frozenset):
        return [jsonable(v) for v in sorted(value, key=str)]
    return _hex(value)


def record_json(record: dict[str, Any]) -> str:
    """`record` as one line of JSON text, always valid JSON.

    The common record (string keys, finite numbers) goes through the C encoder at
    once; one with a value JSON lacks is made plain first (``jsonable``)."""
    try:
        return json.dumps(record, default=_hex, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(jsonable(record), allow_nan=False, separators=(",", ":"))
