"""Which session of an agent speaks now: the rule a receiver applies before it believes
presence, a factsheet or retained state.

A session is one process of an agent (``Agent.session``, a random id). Presence and
factsheets carry the session and ``since``, the UTC ms from which the session speaks
for the agent (its start; raised when it has to outbid another, see below), and the
mission; every retained body carries the session and the mission. A receiver refuses

- state of another mission than its own (``other_mission``): a broker outlives
  missions, and a replayed presence of an old mission must not speak for this one;
- presence or a factsheet of another session of the agent whose ``since`` is earlier
  than that of the session it believes (``stale_session``): a replay of an older
  process's presence, or a Will the broker publishes after the agent came back. The
  same session's state is applied in arrival order (its Will carries the ``since``
  of its connect), and state without ``since`` (from a sender older than it) is
  believed only until state with one has been;
- retained state of a session other than the sender's current one on a topic where
  the receiver already believed the current session's (``stale_session``). The first
  state a receiver gets on a topic is believed whatever its session: that is how a
  resumed mission reads what its members' earlier processes kept.

An agent that sees another session of its own id speak with a ``since`` not earlier
than its own (a forgery dated ahead, or its own earlier process on a host whose clock
ran ahead) raises its own past it and says ONLINE again, so no message can silence an
agent for good. A receiver without a mission (an observer, a service shared by
missions) believes every mission's state; an unstamped body passes the mission rule.
Pure: no I/O.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

__all__ = [
    "SESSION_KEY",
    "SINCE_KEY",
    "SessionBook",
    "Spoken",
    "Verdict",
    "judge",
    "stale",
    "stale_kept",
]

#: the key in presence, factsheets and retained bodies that names the sender's session
SESSION_KEY = "session"
#: the key in presence and factsheets: from when (UTC ms) the session speaks
SINCE_KEY = "since"


class Verdict(enum.StrEnum):
    """What a receiver does with a piece of presence or retained state."""

    ACCEPT = "accept"  #: believe it
    OTHER_MISSION = "other_mission"  #: stamped with a mission other than the receiver's
    STALE_SESSION = "stale_session"  #: from a session that no longer speaks


class Spoken(NamedTuple):
    """A session, and from when it speaks for its agent (None: not said)."""

    session: str | None
    since: int | None


def _since(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def stale(newest: Spoken | None, seen: Spoken) -> bool:
    """Whether presence or a factsheet of `seen` is stale when `newest` is what the
    receiver believes of the agent (None: nothing yet)."""
    if newest is None or seen.session == newest.session:
        return False
    if seen.since is None:
        return newest.since is not None
    return newest.since is not None and seen.since < newest.since


def judge(
    receiver_mission: str | None, mission: Any, newest: Spoken | None, seen: Spoken
) -> Verdict:
    """The acceptance rule for presence and factsheets (see the module docstring)."""
    if receiver_mission is not None and isinstance(mission, str) and mission != receiver_mission:
        return Verdict.OTHER_MISSION
    return Verdict.STALE_SESSION if stale(newest, seen) else Verdict.ACCEPT


def stale_kept(last: str | None, current: str | None, session: Any) -> bool:
    """Whether retained state of `session` is stale on a topic where the last state
    believed was of session `last`, the sender's current session being `current`."""
    return current is not None and last == current and session != current


class SessionBook:
    """What a receiver believes of each agent's session (presence and factsheets)."""

    def __init__(self, mission: str | None = None):
        self.mission = mission
        self._newest: dict[str, Spoken] = {}

    def newest(self, agent_id: str) -> Spoken | None:
        return self._newest.get(agent_id)

    def admit(self, agent_id: str, mission: Any, session: Any, since: Any) -> Verdict:
        """Judge state stamped (`mission`, `session`, `since`) of `agent_id`; on ACCEPT
        it is what the receiver believes of the agent's session from now on."""
        seen = Spoken(session if isinstance(session, str) else None, _since(since))
        newest = self._newest.get(agent_id)
        verdict = judge(self.mission, mission, newest, seen)
        if verdict is Verdict.ACCEPT:
            if newest is not None and seen.session == newest.session:
                since_now = max((s for s in (newest.since, seen.since) if s is not None),
                                default=None)  # fmt: skip
                seen = Spoken(seen.session, since_now)
            self._newest[agent_id] = seen
        return verdict
