"""One model of a mission's progress for every mission kind: ``mission.status``.

Whoever knows how far a mission is publishes a ``MissionStatus`` on its own
``<agent>/mission_status/<mission id>`` topic, retained (so a page opened late sees
it) and on change: the task-tree robots (leaves done of total), the LTL planner (plan
steps done, the formula's goals met), the kitting person (kit spots right), the
factory's job source (jobs done and failed), the multitask robots (units) and, for
the end, whoever ends the mission: ``teamtree run`` (the judged outcome, a time-out,
an interrupt) and the mission queue (pending, cancelled, timed out, failed).

Readers (the web page, the monitor, ``teamtree missions``, the recorder) merge the
statuses of one mission from every publisher with ``merge``: an ended state is never
replaced by a running one, a failure outranks a success (the world-judged outcome
overrules the members' word), and the first failure's reason is kept.
``MissionBoard`` is that reader, pure (no I/O).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from teamtree.agents.runtime.wire_decode import decode_body
from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.messages import Outgoing
from teamtree.broker.topics import build

__all__ = [
    "ENDED",
    "STATES",
    "STATUS_CHANNEL",
    "STATUS_KIND",
    "MissionBoard",
    "MissionStatus",
    "MissionStatusError",
    "StatusReporter",
    "at_least_tree_done",
    "decode_status",
    "merge",
    "status_message",
]

STATUS_CHANNEL = "mission_status"
STATUS_KIND = "mission.status"
#: every state a mission can be in, in the order it goes through them
STATES = ("pending", "running", "succeeded", "failed", "cancelled", "timed_out")
#: the states a mission ends in
ENDED = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
#: how much each state weighs when two publishers disagree (the heavier wins)
_RANK = {"pending": 0, "running": 1, "succeeded": 2, "failed": 3, "timed_out": 3, "cancelled": 3}


class MissionStatusError(ValueError):
    """A ``mission.status`` body that does not match its declared type."""


class MissionStatus(Struct, frozen=True, omit_defaults=True):
    """A mission's state and progress, in the kind's own terms.

    ``done`` of ``total`` ``unit`` (``leaves``, ``plan steps``, ``kit spots``,
    ``jobs``, ``units``), ``failed`` of them failed; ``detail`` says the rest in
    words (``formula: 1 of 2 goals met``); ``reason`` says why the mission ended (or
    waits). ``mission`` is stamped by the publisher's runtime."""

    kind: str
    state: str
    reason: str = ""
    done: int = 0
    total: int = 0
    failed: int = 0
    unit: str = ""
    detail: str = ""
    mission: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"unknown mission state {self.state!r}: use one of {STATES}")
        if min(self.done, self.total, self.failed) < 0:
            raise ValueError("done, total and failed count things: none may be negative")

    @property
    def ended(self) -> bool:
        """Whether the mission has ended (succeeded, failed, cancelled, timed out)."""
        return self.state in ENDED

    def headline(self) -> str:
        """One line for people: ``TIMED OUT: after 30 s · 1/3 leaves`` (an ended
        state in capitals)."""
        state = self.state.replace("_", " ")
        state = state.upper() if self.ended else state
        progress = f"{self.done}/{self.total} {self.unit}".strip() if self.total else ""
        if self.failed:
            progress += f", {self.failed} failed"
        parts = [state + (f": {self.reason}" if self.reason else ""), progress, self.detail]
        return " · ".join(p for p in parts if p)


def at_least_tree_done(
    status: dict[str, Any] | None, mission: str | None, leaves: int, done: int
) -> None:
    """Raise a task-tree `status` view's ``done`` to the `done` leaves an observer saw
    of `mission`'s tree of `leaves` leaves. Each robot counts the leaves it knows done;
    a team stopped before hearing each other's last ones leaves every count short of
    the tree's, and a screen must not show fewer done than its tree does."""
    if (
        status
        and status.get("kind") == "tasktree"
        and status.get("mission") == mission
        and status.get("total") == leaves
        and done > (status.get("done") or 0)
    ):
        status["done"] = done
        fields = {f.name for f in msgspec.structs.fields(MissionStatus)}
        raised = MissionStatus(**{k: v for k, v in status.items() if k in fields})
        status["headline"] = raised.headline()


def decode_status(body: Any) -> MissionStatus:
    """A ``mission.status`` body as a MissionStatus; raises MissionStatusError naming
    the field or the bad value."""
    try:
        return decode_body(body, MissionStatus, MissionStatusError, STATUS_KIND)
    except ValueError as exc:
        if isinstance(exc, MissionStatusError):
            raise
        raise MissionStatusError(f"bad {STATUS_KIND} body: {exc}") from None


def merge(old: MissionStatus | None, new: MissionStatus) -> MissionStatus:
    """What a reader shows after `new` arrives for a mission it showed as `old`.

    The heavier state wins (an ended mission never goes back to running; a failure,
    time-out or cancel outranks a success); at equal weight the newer word wins while
    the mission runs, the first once it has ended (the first failure's reason). The
    figures are the publisher's that knows them: an ender that does not count keeps
    the counts seen so far, and a later count of the same work may raise what is
    shown as done, never lower it (a robot that finished a leaf as the team stopped
    says so after the run's verdict; a stale progress message says less)."""
    if old is None:
        return new
    if _RANK[new.state] < _RANK[old.state] or (old.ended and _RANK[new.state] == _RANK[old.state]):
        shown, other = old, new
    else:
        shown, other = new, old
    if shown.total == 0 and other.total:
        return msgspec.structs.replace(
            shown,
            done=other.done,
            total=other.total,
            failed=other.failed,
            unit=other.unit,
            detail=shown.detail or other.detail,
        )
    if shown is old and new.total == old.total and new.done > old.done:
        return msgspec.structs.replace(shown, done=new.done)
    return shown


class MissionBoard:
    """Every mission's merged status, fed the team's messages (pure: no I/O)."""

    def __init__(self) -> None:
        self.missions: dict[str, MissionStatus] = {}
        self.updated: dict[str, int] = {}  #: mission -> ms of its last change
        self.started: dict[str, int] = {}  #: mission -> ms it was first heard of
        self.by: dict[str, str] = {}  #: mission -> who published what is shown
        self.ran: set[str] = set()  #: missions heard of as running (not only queued)

    def feed(self, kind: str, sender: str, body: Any, ts: int) -> MissionStatus | None:
        """One message; returns the mission's status when this message changed it."""
        if kind != STATUS_KIND:
            return None
        try:
            status = decode_status(body)
        except MissionStatusError:
            return None  # a malformed status says nothing about the mission
        mission = status.mission if isinstance(status.mission, str) else f"({sender})"
        old = self.missions.get(mission)
        shown = merge(old, status)
        self.started.setdefault(mission, ts)
        if status.state == "running" or status.total:
            self.ran.add(mission)
        if shown == old:
            return None
        self.missions[mission] = shown
        self.updated[mission] = max(ts, self.updated.get(mission, ts))
        if old is None or (shown.state, shown.reason) != (old.state, old.reason):
            self.by[mission] = sender  # whose word the state and reason are
        return shown

    def current(self) -> str | None:
        """The mission to show: the latest running one, else the latest pending one,
        else the latest to end of those that ran (one cancelled in the queue before it
        started shows only when no mission ran)."""
        if not self.missions:
            return None
        running = [m for m, s in self.missions.items() if s.state == "running"]
        pending = [m for m, s in self.missions.items() if s.state == "pending"]
        ran = [m for m in self.missions if m in self.ran]
        pool = running or pending or ran or list(self.missions)
        return max(pool, key=lambda m: (self.started.get(m, 0), self.updated.get(m, 0)))

    def view(self, mission: str | None = None) -> dict[str, Any] | None:
        """The status of `mission` (default: ``current``) as JSON-ready data, with its
        id, whether it ended, who said so and a one-line headline."""
        mission = mission or self.current()
        status = self.missions.get(mission) if mission else None
        if status is None:
            return None
        return {
            **msgspec.structs.asdict(status),
            "mission": mission,
            "ended": status.ended,
            "headline": status.headline(),
            "by": self.by.get(mission),
            "updated_ms": self.updated.get(mission),
        }

    def views(self) -> dict[str, dict[str, Any]]:
        """Every mission's ``view``, by id."""
        return {m: v for m in self.missions if (v := self.view(m)) is not None}


class StatusReporter:
    """Publishes one agent's word on its mission's status, retained, only on change.

    ``publish`` is the agent's ``publish`` (it stamps the mission); the topic is the
    agent's ``mission_status/<mission>`` so each mission keeps its own retained status."""

    def __init__(self, agent: Any, kind: str, unit: str = "") -> None:
        self.agent = agent
        self.kind = kind
        self.unit = unit
        self.last: MissionStatus | None = None

    async def report(
        self,
        state: str,
        *,
        done: int = 0,
        total: int = 0,
        failed: int = 0,
        reason: str = "",
        detail: str = "",
    ) -> MissionStatus | None:
        """Publish this status unless it is the one published last; never raises on a
        broker error (a status is news, not a duty)."""
        status = MissionStatus(
            self.kind, state, reason, done, total, failed, self.unit if total else "", detail
        )
        if status == self.last:
            return None
        self.last = status
        recipient = getattr(self.agent, "mission_id", None) or "unscoped"
        try:
            await self.agent.publish(
                STATUS_CHANNEL,
                STATUS_KIND,
                msgspec.to_builtins(status),
                recipient=recipient,
                retain=True,
            )
        except Exception as exc:
            self.agent.log.warning("mission.status_unsent", error=str(exc))
        return status


def status_message(team: str, sender: str, mission: str, status: MissionStatus) -> Outgoing:
    """The retained message that carries `status` for a process that is not an agent
    (``teamtree run``): on ``<sender>/mission_status/<mission>``, stamped with it."""
    body = {**msgspec.to_builtins(status), "mission": mission}
    env = Envelope(
        kind=STATUS_KIND,
        sender=sender,
        hid=wall_ms(),
        ts=wall_ms(),
        hlc=HybridLogicalClock(sender).now(),
        body=body,
    )
    return Outgoing(build(team, sender, STATUS_CHANNEL, mission), encode(env), qos=1, retain=True)
