"""Channels of a recording or a live view: one per message kind and team topic, each
with a JSON Schema of its records made from the kind's declared body type.

A channel's name is the MQTT topic below the team, then the kind:
``/pr2/state/node.transition`` is pr2's ``node.transition`` messages on
``teamtree/v1/<team>/pr2/state``; ``/_/mission/mission.tree`` the team channel's
mission tree. Foxglove, Lichtblick and the mcap tools list them by that name; the
channel's metadata holds the whole MQTT topic and the kind.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import msgspec

from teamtree.agents.observers.wire_kinds import KNOWN_KINDS, body_type
from teamtree.broker.topics import Topic, parse

__all__ = [
    "LOG_CHANNEL",
    "LOG_SCHEMA",
    "LOG_SCHEMA_NAME",
    "SCHEMA_DIALECT",
    "channel_topic",
    "record_schema",
    "record_schema_bytes",
    "schema_name",
    "warm_schemas",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

LOG_CHANNEL = "/log"
"""The channel of the recorder's own log lines (its summary: who did what, how the
mission went), as ``foxglove.Log`` messages Foxglove's Log panel shows."""
LOG_SCHEMA_NAME = "foxglove.Log"
LOG_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA_DIALECT,
    "title": "foxglove.Log",
    "description": "A log line (Foxglove's well-known Log message)",
    "type": "object",
    "properties": {
        "timestamp": {
            "type": "object",
            "properties": {
                "sec": {"type": "integer", "minimum": 0},
                "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999},
            },
            "required": ["sec", "nsec"],
        },
        "level": {"type": "integer", "minimum": 0, "maximum": 5},
        "message": {"type": "string"},
        "name": {"type": "string"},
        "file": {"type": "string"},
        "line": {"type": "integer", "minimum": 0},
    },
    "required": ["timestamp", "level", "message", "name", "file", "line"],
}


def channel_topic(topic: Topic | str, kind: str) -> str:
    """The channel name of `kind` messages on the teamtree `topic`."""
    parsed = parse(topic) if isinstance(topic, str) else topic
    parts = [parsed.agent or "_", parsed.channel]
    if parsed.recipient is not None:
        parts.append(parsed.recipient)
    return "/" + "/".join([*parts, kind])


def schema_name(kind: str) -> str:
    """The schema name of `kind`'s channels (``teamtree.node.transition``)."""
    return f"teamtree.{kind}"


_STRING = {"type": "string"}
_INTEGER = {"type": "integer"}


@functools.cache
def _record_schema_text(kind: str) -> str:
    typ = body_type(kind)
    defs: dict[str, Any] = {}
    body: dict[str, Any]
    if typ is None:
        body = {"description": "any JSON value (this kind declares no body type)"}
    else:
        types = typ if isinstance(typ, tuple) else (typ,)
        bodies, defs = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
        body = bodies[0] if len(bodies) == 1 else {"anyOf": list(bodies)}
    schema: dict[str, Any] = {
        "$schema": SCHEMA_DIALECT,
        "title": schema_name(kind),
        "description": f"a teamtree {kind} message: its envelope's header and its body",
        "type": "object",
        "properties": {
            "topic": _STRING,
            "kind": {"const": kind},
            "sender": _STRING,
            "ts": {**_INTEGER, "minimum": 0, "description": "wall time at send, UTC ms"},
            "hlc": {
                "type": "array",
                "description": "hybrid logical clock stamp [wall_ms, logical, sender]",
                "prefixItems": [_INTEGER, _INTEGER, _STRING],
                "items": False,
                "minItems": 3,
            },
            "body": body,
            "reply_to": _STRING,
            "corr": _STRING,
            "deadline": _INTEGER,
            "to": _STRING,
            "key": _STRING,
            "recorded_ms": {**_INTEGER, "description": "when the recorder received it, UTC ms"},
            "retained": {"type": "boolean"},
        },
        "required": ["topic", "kind", "sender", "ts", "hlc", "body"],
    }
    if defs:
        schema["$defs"] = defs
    return json.dumps(schema, sort_keys=True)


def record_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a record of `kind` (``wire_json``'s form)."""
    return json.loads(_record_schema_text(kind))


def record_schema_bytes(kind: str) -> bytes:
    """``record_schema`` as the bytes an MCAP schema record or a live channel carries."""
    return _record_schema_text(kind).encode()


def warm_schemas() -> None:
    """Make every known kind's schema now (about 3 s: the wire types import the
    planners they describe), so a recorder or live view that calls it before it
    listens never stalls on a kind's first message (QoS 0 messages would be dropped
    meanwhile). Thread-safe: run it in a worker thread."""
    for kind in KNOWN_KINDS:
        _record_schema_text(kind)
