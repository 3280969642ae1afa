"""Which session of an agent speaks now: ordered session ids, and the rule a receiver
applies before it believes presence, a factsheet or retained state.

A session is one process of an agent. Its id is ``<start, UTC ms in hex>-<random>``, so
two sessions of one agent order by their start. Presence, factsheets and every retained
body carry the session (and the mission, see ``mission.py``); a receiver refuses

- state of another mission than its own (``other_mission``): a broker outlives
  missions, and a replayed presence of an old mission must not speak for this one;
- state of an older session than one it already believes for the same agent (presence,
  factsheets) or from the same agent on the same retained topic (``stale_session``): a
  replay, or a Will the broker publishes late, must not undo what a newer process said.

A receiver without a mission (an observer, a service shared by missions) believes
every mission's state; an unstamped body (an agent without a mission) passes the
mission rule. A body without a session id that shows its start (from a sender that
predates them) is believed until a session that shows it has been; then it is stale.
Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
import secrets
import time
from typing import Any

__all__ = [
    "SESSION_KEY",
    "SessionBook",
    "Verdict",
    "judge",
    "new_session_id",
    "session_start",
    "stale",
]

#: the key in a retained body that names the sender's session
SESSION_KEY = "session"
_SESSION = re.compile(r"^([0-9a-f]{1,13})-[0-9a-f]{4,32}$")


class Verdict(enum.StrEnum):
    """What a receiver does with a piece of presence or retained state."""

    ACCEPT = "accept"  #: believe it
    OTHER_MISSION = "other_mission"  #: stamped with a mission other than the receiver's
    STALE_SESSION = "stale_session"  #: from an older session than one already believed


def new_session_id(now_ms: int | None = None) -> str:
    """A fresh session id, ``<start ms hex>-<8 random hex>``: sessions order by start."""
    start = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return f"{start:x}-{secrets.token_hex(4)}"


def session_start(session: Any) -> int | None:
    """The start (UTC ms) a session id shows, or None (not a string, or an id from a
    sender that predates ordered ids)."""
    if not isinstance(session, str):
        return None
    match = _SESSION.match(session)
    return int(match.group(1), 16) if match else None


def stale(newest: str | None, session: Any) -> bool:
    """Whether state from `session` is stale when `newest` is the newest session
    believed so far (None: none yet). Equal sessions are never stale (state of one
    session is applied in arrival order); an id that cannot show its start is stale
    after one that can."""
    if newest is None or session == newest:
        return False
    mine, theirs = session_start(newest), session_start(session)
    if theirs is None:
        return mine is not None
    return mine is not None and theirs < mine


def judge(receiver_mission: str | None, mission: Any, newest: str | None, session: Any) -> Verdict:
    """The acceptance rule (see the module docstring): `mission` and `session` are what
    the state is stamped with, `newest` the newest session the receiver believes."""
    if receiver_mission is not None and isinstance(mission, str) and mission != receiver_mission:
        return Verdict.OTHER_MISSION
    return Verdict.STALE_SESSION if stale(newest, session) else Verdict.ACCEPT


class SessionBook:
    """The newest session believed per key (an agent, or a retained topic)."""

    def __init__(self, mission: str | None = None, limit: int = 65536):
        self.mission = mission
        self._newest: dict[str, str] = {}
        self._limit = limit

    def newest(self, key: str) -> str | None:
        return self._newest.get(key)

    def admit(self, key: str, mission: Any, session: Any) -> Verdict:
        """Judge state stamped (`mission`, `session`) under `key`; on ACCEPT, a session
        newer than the one believed becomes the newest."""
        newest = self._newest.get(key)
        verdict = judge(self.mission, mission, newest, session)
        if verdict is Verdict.ACCEPT and isinstance(session, str) and session != newest:
            if len(self._newest) >= self._limit and key not in self._newest:
                self._newest.pop(next(iter(self._newest)))
            self._newest[key] = session
        return verdict
