"""Presence and heartbeat bodies on the wire (docs/protocol.md, "Topics").

``<id>/connection`` ``presence`` (retained; also the Last Will) and ``<id>/heartbeat``
``heartbeat`` are declared msgspec Structs. ``decode_presence`` / ``decode_heartbeat``
raise PresenceWireError (a ``ValueError`` naming the field's path) on a malformed
body, which the receiver drops with the runtime's aggregated drop warning. Unknown
keys are ignored.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec
from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body


class Presence(enum.StrEnum):
    """An agent's connection state as published on its ``connection`` topic."""

    ONLINE = "ONLINE"  #: connected; published retained after every connect
    OFFLINE = "OFFLINE"  #: left gracefully
    CONNECTION_BROKEN = "CONNECTION_BROKEN"  #: the Last Will: it vanished without a goodbye
    UNKNOWN = "UNKNOWN"  #: nothing heard yet


class PresenceWireError(ValueError):
    """A presence or heartbeat body that does not match its declared type."""


class PresenceBody(Struct, frozen=True):
    """The ``presence`` body: the state, and the kind, session (process), since (UTC
    ms from which that session speaks for the agent) and mission of the agent it is
    about (absent from an older sender; no mission for an agent without one).
    Receivers believe it by the rule of ``teamtree.agents.runtime.sessions``."""

    state: Presence
    kind: str | None = None
    session: str | None = None
    since: int | None = None
    mission: str | None = None


class HeartbeatBody(Struct, frozen=True):
    """The ``heartbeat`` body: uptime and message counts since the agent started."""

    uptime_ms: int
    sent: int
    received: int
    dropped: int


def _decode(body: Any, typ: type[Any], what: str) -> Any:
    return decode_body(body, typ, PresenceWireError, what)


def decode_presence(body: Any) -> PresenceBody:
    """A presence body as a PresenceBody; raises PresenceWireError."""
    return _decode(body, PresenceBody, "presence")


def decode_heartbeat(body: Any) -> HeartbeatBody:
    """A heartbeat body as a HeartbeatBody; raises PresenceWireError."""
    return _decode(body, HeartbeatBody, "heartbeat")


def presence_body(
    state: Presence,
    kind: str | None,
    session: str | None,
    mission: str | None = None,
    since: int | None = None,
) -> dict[str, Any]:
    """The ``presence`` body as it goes on the wire (no ``since`` or ``mission`` key
    without one)."""
    body = msgspec.to_builtins(PresenceBody(state, kind, session, since, mission))
    return {k: v for k, v in body.items() if v is not None or k not in ("since", "mission")}


def heartbeat_body(uptime_ms: int, sent: int, received: int, dropped: int) -> dict[str, Any]:
    """The ``heartbeat`` body as it goes on the wire."""
    return msgspec.to_builtins(HeartbeatBody(uptime_ms, sent, received, dropped))
