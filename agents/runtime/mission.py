"""Mission identity: one id per mission, stamped into everything it keeps at the broker.

A broker outlives missions: retained messages outlive the agents that sent them, and
a persistent session hands a restarted agent what was queued for it while it was away.
So every map body an agent of a mission publishes carries ``"mission": <id>``, and an
agent of a mission drops every message stamped with another mission. A new mission on
a broker that held an old one starts from nothing; ``teamtree run --resume ID`` reuses
an id and so continues that mission's state. Unstamped messages (from agents without
a mission: CLI requests, observers, services shared by many missions) pass.

Presence and factsheets are about the agent: they carry the mission in their body but
are judged by the team view (``sessions.py``), not dropped here.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

from teamtree.broker import ConfigError, TopicError
from teamtree.broker.topics import validate_id

#: environment variable that carries the mission id to agent processes
MISSION_ENV = "TEAMTREE_MISSION"
#: the key in a retained body that names its mission
MISSION_KEY = "mission"
#: channels that describe an agent rather than a mission (never scoped)
UNSCOPED_CHANNELS = frozenset({"connection", "factsheet"})


def new_mission_id(now: float | None = None) -> str:
    """A fresh, sortable, topic-safe mission id: ``m<UTC yymmdd-hhmmss>-<6 hex>``."""
    stamp = time.strftime("%y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"m{stamp}-{secrets.token_hex(3)}"


def check_mission_id(value: str, *, source: str = "--mission-id") -> str:
    """`value` if it is a valid mission id; ConfigError naming `source` otherwise."""
    try:
        return validate_id(value, "mission id")
    except TopicError as exc:
        raise ConfigError(str(exc), key=source) from None


def mission_from_env() -> str | None:
    """The mission id in ``$TEAMTREE_MISSION``, if set."""
    value = os.environ.get(MISSION_ENV, "").strip()
    return check_mission_id(value, source=MISSION_ENV) if value else None


def stamp(body: Any, mission: str | None) -> Any:
    """`body` with the mission id added (dict bodies only; others are returned as is)."""
    if mission is None or not isinstance(body, dict):
        return body
    return {**body, MISSION_KEY: mission}


def mission_of(body: Any) -> str | None:
    """The mission a body is stamped with, or None."""
    if isinstance(body, dict):
        value = body.get(MISSION_KEY)
        return value if isinstance(value, str) else None
    return None


def belongs(body: Any, mission: str | None) -> bool:
    """Whether `body` is stamped with `mission` (always, when mission is None)."""
    return mission is None or mission_of(body) == mission


def foreign(body: Any, mission: str | None) -> bool:
    """Whether `body` is stamped with a mission other than `mission` (never, when
    `mission` is None or the body is unstamped): what a mission's agent drops."""
    named = mission_of(body)
    return mission is not None and named is not None and named != mission
