"""Who is in the team: presence and factsheets, kept from retained topics, believed
only of the receiver's mission and the agent's current session (``sessions.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from teamtree.agents.runtime.presence_wire import Presence, decode_presence
from teamtree.agents.runtime.sessions import SessionBook, Verdict

__all__ = ["Member", "Presence", "RefusedState", "TeamView"]


class RefusedState(ValueError):
    """Presence or a factsheet the acceptance rule refuses: ``reason`` is the verdict
    (``other_mission`` or ``stale_session``)."""

    def __init__(self, agent_id: str, verdict: Verdict, mission: Any, session: Any):
        self.reason = verdict.value
        super().__init__(
            f"{verdict.value}: state of {agent_id!r} from mission {mission!r}, session {session!r}"
        )


@dataclass(slots=True)
class Member:
    """What this agent knows of one teammate."""

    id: str
    presence: Presence = Presence.UNKNOWN
    kind: str | None = None
    factsheet: dict[str, Any] = field(default_factory=dict)
    session: str | None = None
    mission: str | None = None
    last_seen_ms: int = 0

    @property
    def online(self) -> bool:
        return self.presence is Presence.ONLINE


class TeamView:
    """Presence and factsheets of every other agent of the team, in arrival order.

    Presence is applied in arrival order, not by stamp: a Last Will carries the stamp
    of the connect that registered it, so stamps would wrongly call it stale. But
    presence or a factsheet of another mission than `mission`, or of a session of the
    agent that speaks from before the one believed, is refused (RefusedState): a replay
    of an old mission's presence must not speak for the agents of this one.
    """

    def __init__(self, self_id: str, mission: str | None = None):
        self.self_id = self_id
        self.mission = mission
        self._members: dict[str, Member] = {}
        self._sessions = SessionBook(mission)
        # online ids by kind, until the next presence or factsheet: a robot asks for
        # its online peers on every claim and reply
        self._online: dict[str | None, frozenset[str]] = {}

    def member(self, agent_id: str) -> Member:
        if agent_id not in self._members:
            self._members[agent_id] = Member(agent_id)
        return self._members[agent_id]

    def get(self, agent_id: str) -> Member | None:
        return self._members.get(agent_id)

    def apply_presence(
        self, agent_id: str, body: Any, ts_ms: int
    ) -> tuple[Presence, Presence] | None:
        """Apply a presence body; returns (old, new) when the state changed.
        Raises PresenceWireError (a ValueError naming the field) on a malformed body."""
        presence = decode_presence(body)
        self._admit(agent_id, presence.mission, presence.session, presence.since)
        member = self.member(agent_id)
        self._online.clear()
        old, new = member.presence, presence.state
        if (
            old is Presence.OFFLINE
            and new is Presence.CONNECTION_BROKEN
            and presence.session == member.session
        ):
            # a Will after a clean stop of the same process (amqtt publishes it in a
            # race with DISCONNECT): the agent said goodbye, it did not crash
            return None
        member.presence = new
        member.last_seen_ms = max(member.last_seen_ms, ts_ms)
        if presence.kind is not None:
            member.kind = presence.kind
        if presence.session is not None:
            member.session = presence.session
        member.mission = presence.mission
        return (old, new) if old is not new else None

    def _admit(self, agent_id: str, mission: Any, session: Any, since: Any) -> None:
        verdict = self._sessions.admit(agent_id, mission, session, since)
        if verdict is not Verdict.ACCEPT:
            raise RefusedState(agent_id, verdict, mission, session)

    def apply_factsheet(self, agent_id: str, body: Any) -> None:
        """Store a factsheet body; raises ValueError if it is not a map, RefusedState
        if it is of another mission or a session that no longer speaks."""
        if not isinstance(body, dict):
            raise ValueError(f"not a factsheet body: {body!r}")
        self._admit(agent_id, body.get("mission"), body.get("session"), body.get("since"))
        member = self.member(agent_id)
        self._online.clear()
        member.factsheet = body
        if isinstance(body.get("kind"), str):
            member.kind = body["kind"]

    def seen(self, agent_id: str, ts_ms: int) -> None:
        if agent_id in self._members:
            member = self._members[agent_id]
            member.last_seen_ms = max(member.last_seen_ms, ts_ms)

    def online(self, kind: str | None = None) -> set[str]:
        """Ids of teammates that are ONLINE now (optionally of one kind); a new set."""
        ids = self._online.get(kind)
        if ids is None:
            members = self._members.values()
            ids = self._online[kind] = frozenset(
                m.id for m in members if m.online and (kind is None or m.kind == kind)
            )
        return set(ids)

    @property
    def members(self) -> dict[str, Member]:
        return dict(self._members)
