"""Watch a team from the broker alone: who is there, what each agent is doing, how the
mission goes, conflicts, dialogs, favors, request latencies, rates and ``$SYS``.

``TeamObserver`` is a passive client: it subscribes to ``teamtree/v1/<team>/#`` (and
``$SYS/broker/#``) with a fresh client id, no Last Will and no presence of its own, so
any number of monitors, recorders and health checks can watch a team without joining
it, and its broker user needs read rights only. ``MonitorState`` is the pure part: fed
validated messages, it keeps the view that ``snapshot`` returns as plain data and
``render_text`` draws for a terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import textwrap
import time
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import msgspec
import structlog
from msgspec.structs import replace as replace_struct

from teamtree.agents.observers.event_words import event_words
from teamtree.agents.observers.mission_labels import tree_labels
from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, foreign, mission_of
from teamtree.agents.runtime.mission_status import (
    STATUS_CHANNEL,
    STATUS_KIND,
    MissionBoard,
    at_least_tree_done,
)
from teamtree.agents.runtime.presence_wire import decode_heartbeat
from teamtree.agents.runtime.sync_ask import SyncAsker
from teamtree.agents.runtime.team_view import Presence, TeamView
from teamtree.agents.treeprotocol.decided_wire import lost_claim
from teamtree.agents.treeprotocol.mission_wire import MissionWireError, decode_mission_tree
from teamtree.agents.treeprotocol.peer_wire import working_leaves
from teamtree.broker import ConnectError, WireError
from teamtree.broker.connection import Connection, Incoming
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import Envelope, decode
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic, parse, validate_id

_log = structlog.get_logger("teamtree.observers")

__all__ = ["MonitorState", "TeamObserver", "now_words", "render_text"]

CONNECT_WAIT_S = 15.0
"""How long an observer (monitor, record, attach) waits for its first connect to a
broker that is reachable."""

RATE_WINDOW_S = 10.0
HISTORY = 20
MISSIONS_KEPT = 8
"""Missions whose finished leaves are kept (the shown one always is)."""
#: $SYS figures shown in the text view (mosquitto's names, under ``$SYS/broker/``)
SYS_SHOWN = (
    "version",
    "uptime",
    "clients/connected",
    "subscriptions/count",
    "messages/received",
    "messages/sent",
    "load/messages/received/1min",
    "load/messages/sent/1min",
    "retained messages/count",
    "store/messages/count",
)

MessageHook = Callable[[Envelope, Topic, Incoming], Awaitable[None] | None]


@dataclass(slots=True)
class AgentRow:
    """What the monitor knows of one agent."""

    id: str
    kind: str | None = None
    presence: str = Presence.UNKNOWN.value
    working: tuple[str, ...] = ()  #: the leaves it works on now, by its own word
    status: str = "idle"  #: what it did last, in words (never its work now: ``working``)
    done: list[str] = field(default_factory=list)
    last_seen_ms: int = 0
    messages: int = 0
    works_tree: bool = False  #: it publishes node transitions or snapshots
    heartbeat: dict[str, Any] = field(default_factory=dict)

    @property
    def node(self) -> str | None:
        """The (first) leaf it works on now."""
        return self.working[0] if self.working else None


def now_words(labels: list[str], presence: str, ended: bool, last: str) -> str:
    """An agent's "now" column: ``working`` its leaves (`labels`) only while it is
    ONLINE and the mission has not `ended`; otherwise those leaves are ``stopped``,
    saying why (the mission ended, or its presence: OFFLINE, CONNECTION_BROKEN, ...).
    With no leaf in hand, what it did `last`."""
    if not labels:
        return last
    shown = ", ".join(labels)
    if ended:
        return f"stopped {shown} (the mission ended)"
    if presence != Presence.ONLINE.value:
        return f"stopped {shown} ({presence})"
    return f"working {shown}"


class MonitorState:
    """The monitor's view of one team, fed message by message (no I/O)."""

    def __init__(
        self,
        team: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        mission_id: str | None = None,
    ):
        self.team = team
        #: show only this mission's retained state (None: every mission's)
        self.mission_filter = mission_id
        #: the mission shown: the filter, else the newest one an agent's factsheet names
        self.mission_id = mission_id
        self._mission_ts = -1
        self._clock = clock
        self._started = clock()
        self.view = TeamView("", mission=mission_id)  # only that mission's presence
        self.agents: dict[str, AgentRow] = {}
        self.mission: dict[str, Any] = {}
        self.labels: dict[str, str] = {}
        self.leaves: list[str] = []
        #: mission (as its messages are stamped; None: no mission id) -> node -> the agent
        #: that finished it. Kept per mission, so the order in which the broker hands
        #: out kept state (snapshots before or after the tree) cannot lose or mix them.
        self._done: dict[str | None, dict[str, str]] = {}
        self.tree_mission: str | None = None  # the mission the leaves belong to
        self.conflicts: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.dialogs: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.favors: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.favor_counts: Counter[str] = Counter()
        self.requests: dict[str, dict[str, Any]] = {}  # corr -> request
        self.latencies: dict[str, deque[float]] = {}  # channel -> recent latencies (ms)
        self.request_counts: Counter[str] = Counter()
        self.unanswered: Counter[str] = Counter()
        self.totals: Counter[str] = Counter()  # channel -> live messages
        self._arrivals: dict[str, deque[float]] = {}
        self.sys: dict[str, str] = {}
        self.dropped: Counter[str] = Counter()
        self.board = MissionBoard()  #: every mission's status (``mission.status``)
        #: whether the observer is connected to the broker (None: not told yet) and
        #: since when (wall ms): what it shows is stale while it is not
        self.connected: bool | None = None
        self.link_since_ms: int | None = None

    # -- feeding -------------------------------------------------------------------

    def row(self, agent_id: str) -> AgentRow:
        if agent_id not in self.agents:
            self.agents[agent_id] = AgentRow(agent_id)
        return self.agents[agent_id]

    def drop(self, reason: str) -> None:
        """Count a message that failed validation."""
        self.dropped[reason] += 1

    def link(self, connected: bool, now_ms: int | None = None) -> None:
        """The observer's connection to the broker came up or went down."""
        if connected != self.connected:
            self.connected, self.link_since_ms = connected, now_ms or wall_ms()

    def feed_sys(self, topic: str, payload: bytes) -> None:
        """A ``$SYS/broker/...`` figure."""
        key = topic.removeprefix("$SYS/broker/")
        self.sys[key] = payload.decode(errors="replace")[:80]

    def feed(self, env: Envelope, topic: Topic, *, retained: bool = False) -> None:
        """One validated message of the team."""
        channel = topic.channel if topic.agent is not None else f"_/{topic.channel}"
        if self._other_mission(env, topic, retained):
            self.dropped["other_mission"] += 1
            return
        if not retained:
            self.totals[channel] += 1
            self._arrivals.setdefault(channel, deque()).append(self._clock())
        if topic.agent is not None and topic.channel != STATUS_CHANNEL:  # a run is no member
            row = self.row(topic.agent)
            row.last_seen_ms = max(row.last_seen_ms, env.ts)
            row.messages += 1
        self._interpret(env, topic)

    def _other_mission(self, env: Envelope, topic: Topic, retained: bool) -> bool:
        """A message of a mission other than the one shown (kept state included)."""
        if topic.channel in UNSCOPED_CHANNELS:
            return False
        return foreign(env.body, self.mission_filter)

    def _interpret(self, env: Envelope, topic: Topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        kind = env.kind
        if topic.agent is not None and topic.channel == "connection":
            with contextlib.suppress(ValueError):
                self.view.apply_presence(env.sender, env.body, env.ts)
                member = self.view.member(env.sender)
                row = self.row(env.sender)
                row.presence = member.presence.value
                row.kind = member.kind or row.kind
        elif topic.agent is not None and topic.channel == "factsheet":
            named = mission_of(env.body)
            if self.mission_filter is None and named is not None and env.ts > self._mission_ts:
                self.mission_id, self._mission_ts = named, env.ts
            with contextlib.suppress(ValueError):
                self.view.apply_factsheet(env.sender, env.body)
                self.row(env.sender).kind = self.view.member(env.sender).kind
        elif kind == STATUS_KIND:
            self.board.feed(kind, env.sender, env.body, env.ts)
        elif kind == "heartbeat":
            with contextlib.suppress(ValueError):  # a malformed one is not shown
                self.row(env.sender).heartbeat = msgspec.to_builtins(decode_heartbeat(body))
        elif kind == "mission.tree":
            with contextlib.suppress(MissionWireError):  # a malformed one is not shown
                mission = decode_mission_tree(body)
                self.mission = {"kind": mission.kind, "text": mission.text}
                self.labels, self.leaves = tree_labels(msgspec.to_builtins(mission.tree))
                self.tree_mission = mission_of(body)
        elif kind == "node.transition":
            self._transition(env.sender, body)
        elif kind == "node.snapshot":
            row = self.row(env.sender)
            row.works_tree = True
            try:
                working = working_leaves(body.get("working"))
            except ValueError:
                working = ()
            listed = body.get("done")
            done = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
            for node in row.working:  # what it no longer works on: done, else let go
                if node not in working:
                    row.status = f"{'done' if node in done else 'released'} {self.label(node)}"
            row.working = working
            finished = self._finished(body)
            for node in done:
                finished.setdefault(node, "?")
        elif kind == "node.claim_decided" and (lost := lost_claim(body)) is not None:
            self.conflicts.append(
                {
                    "agent": env.sender,
                    "node": lost.node,
                    "label": self.label(lost.node),
                    "reason": lost.reason,
                    "ts": env.ts,
                }
            )
        elif kind.startswith("dialog"):
            self.dialogs.append({"sender": env.sender, "kind": kind, "body": body, "ts": env.ts})
        elif kind.startswith("favor"):
            self.favor_counts[kind] += 1
            self.favors.append({"sender": env.sender, "kind": kind, "ts": env.ts, "to": env.to})
        elif kind.endswith(".done") or kind.endswith(".started") or topic.channel == "status":
            self.row(env.sender).status = event_words(kind)
        self._request_reply(env, topic)

    def _transition(self, agent: str, body: dict[str, Any]) -> None:
        node, status = body.get("node"), body.get("status")
        if not isinstance(node, str):
            return
        row = self.row(agent)
        row.works_tree = True
        if status == "working":
            row.working = (node,)
            return
        if status == "done":
            if node not in row.done:
                row.done.append(node)
            self._finished(body)[node] = agent
        if node in row.working:  # done, skipped or given back
            row.working = tuple(n for n in row.working if n != node)
            words = {"done": "done", "skipped": "skipped"}.get(str(status), "released")
            row.status = f"{words} {self.label(node)}"

    def _finished(self, body: dict[str, Any]) -> dict[str, str]:
        """The finished leaves of the mission `body` is stamped with, or of the shown
        tree's when it is unstamped (a bounded number of missions is kept: the shown
        one and the newest others)."""
        mission = mission_of(body) or self.tree_mission
        if mission not in self._done:
            self._done[mission] = {}
            others = [m for m in self._done if m not in (mission, self.tree_mission)]
            for old in others[: max(0, len(self._done) - MISSIONS_KEPT)]:
                del self._done[old]  # the oldest first: dicts keep insertion order
        return self._done[mission]

    @property
    def done_nodes(self) -> dict[str, str]:
        """The leaves of the shown tree's mission finished so far -> who finished each
        (``"?"`` when known from a snapshot only)."""
        return self._done.get(self.tree_mission, {})

    def _request_reply(self, env: Envelope, topic: Topic) -> None:
        if env.corr is None:
            return
        if topic.agent is None and env.reply_to is not None:
            channel = topic.channel
            self.request_counts[channel] += 1
            self.requests[env.corr] = {
                "channel": channel,
                "kind": env.kind,
                "from": env.sender,
                "ts": env.ts,
                "deadline": env.deadline,
                "replies": 0,
            }
            if len(self.requests) > 2000:
                oldest = next(iter(self.requests))
                self._expire(oldest)
        elif topic.channel == "reply" and env.corr in self.requests:
            request = self.requests[env.corr]
            request["replies"] += 1
            if request["replies"] == 1:
                latency = float(max(0, env.ts - request["ts"]))
                request["latency_ms"] = latency
                self.latencies.setdefault(request["channel"], deque(maxlen=200)).append(latency)

    def _expire(self, corr: str) -> None:
        request = self.requests.pop(corr)
        if request["replies"] == 0:
            self.unanswered[request["channel"]] += 1

    def label(self, node: str | None) -> str:
        return "" if node is None else self.labels.get(node, node)

    # -- reading -------------------------------------------------------------------

    def rates(self) -> dict[str, float]:
        """Messages per second per channel over the last RATE_WINDOW_S seconds."""
        now = self._clock()
        window = max(0.5, min(RATE_WINDOW_S, now - self._started))
        out = {}
        for channel, arrivals in self._arrivals.items():
            while arrivals and arrivals[0] < now - RATE_WINDOW_S:
                arrivals.popleft()
            out[channel] = round(len(arrivals) / window, 2)
        return dict(sorted(out.items()))

    def snapshot(self) -> dict[str, Any]:
        """The whole view as JSON-ready data."""
        now = wall_ms()
        for corr, request in list(self.requests.items()):
            deadline = request.get("deadline")
            if request["replies"] == 0 and deadline is not None and deadline < now:
                self._expire(corr)
        total = len(self.leaves)
        done = len([n for n in self.done_nodes if n in self.leaves])
        status = self.board.view(self.mission_filter)
        at_least_tree_done(status, self.tree_mission, total, done)
        ended = bool(status and status["ended"])
        agents = {}
        for agent_id in sorted(self.agents):
            row = self.agents[agent_id]
            labels = [self.label(n) for n in row.working]
            agents[agent_id] = {
                "kind": row.kind,
                "presence": row.presence,
                "node": row.node,
                "node_label": self.label(row.node) or None,
                "status": now_words(labels, row.presence, ended, row.status),
                "done": list(row.done),
                "progress": (
                    {"done": len(row.done), "of": total} if total and row.works_tree else None
                ),
                "last_seen_ms": row.last_seen_ms,
                "messages": row.messages,
            }
        requests = {}
        for channel, count in sorted(self.request_counts.items()):
            lat = sorted(self.latencies.get(channel, ()))
            requests[channel] = {
                "sent": count,
                "answered": len(lat),
                "unanswered": self.unanswered[channel],
                "latency_ms_p50": median(lat) if lat else None,
                "latency_ms_max": lat[-1] if lat else None,
                "latency_ms_last": self.latencies[channel][-1] if lat else None,
            }
        return {
            "team": self.team,
            "mission_id": self.mission_id,
            "time_ms": now,
            "connected": self.connected is not False,
            "link_since_ms": self.link_since_ms,
            "status": status,
            "statuses": self.board.views(),
            "mission": {
                **self.mission,
                "leaves": total,
                "done": done,
                "done_by": {n: a for n, a in self.done_nodes.items() if n in self.leaves},
            },
            "agents": agents,
            "online": sorted(a for a, r in self.agents.items() if r.presence == "ONLINE"),
            "conflicts": list(self.conflicts),
            "dialogs": list(self.dialogs),
            "favors": {"counts": dict(self.favor_counts), "recent": list(self.favors)},
            "requests": requests,
            "rates": self.rates(),
            "totals": dict(sorted(self.totals.items())),
            "broker": dict(sorted(self.sys.items())),
            "dropped": dict(self.dropped),
        }


def render_text(snap: dict[str, Any], *, width: int = 100, height: int | None = None) -> str:
    """A terminal page for one snapshot, no line wider than `width` and, given a
    `height`, no more lines than that: the header always shows, then as many agents as
    fit (the rest as ``+N more``) and what room is left of the other sections."""
    width = max(width, 20)
    head = _header(snap, width)
    agents = _agent_lines(snap, width)
    tail = _tail_lines(snap, width)
    if height is None or len(head) + len(agents) + len(tail) <= height:
        return "\n".join(head + agents + tail)
    room = max(height - len(head), 1)
    shown = len(agents) if len(agents) + min(len(tail), 1) <= room else None
    if shown is None:  # the agents get the room (at least half of it) before the rest
        shown = max(room - len(tail), min(len(agents), room // 2 or 1))
    if shown < len(agents):
        agents = _agent_lines(snap, width, limit=max(shown - 1, 0))
    return "\n".join((head + agents + tail)[: len(head) + room])


def _clip(text: str, width: int) -> str:
    """`text` cut to `width` columns, the cut marked with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrapped(text: str, width: int) -> list[str]:
    """`text` wrapped to `width` columns, continuation lines indented."""
    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False) or [""]


def _header(snap: dict[str, Any], width: int) -> list[str]:
    """The lines kept on screen whatever the team's size: link, team, mission, columns."""
    lines = []
    mission = snap["mission"]
    status = snap.get("status")
    progress = f"{mission['done']}/{mission['leaves']} leaves done" if mission["leaves"] else ""
    stamp = time.strftime("%H:%M:%S", time.localtime(snap["time_ms"] / 1000))
    named = f"mission {snap['mission_id']}  " if snap.get("mission_id") else ""
    kind = (status or {}).get("kind") or mission.get("kind") or "no mission"
    if status:
        named = f"mission {status['mission']}  "
    if snap.get("connected") is False:
        since = snap.get("link_since_ms") or snap["time_ms"]
        lost = time.strftime("%H:%M:%S", time.localtime(since / 1000))
        lines.append(f"DISCONNECTED from the broker since {lost}: every figure below is stale")
    lines.append(f"team {snap['team']}  {named}{stamp}  {kind} {progress}".rstrip())
    if status:
        lines.append(f"  {status_line(status)}")
    if mission.get("text"):
        lines.append(f"  {mission['text']}")
    lines.append("")
    lines.append(_columns(snap)[1].format("agent", "kind", "presence", "progress", "status"))
    return [_clip(line.rstrip(), width) for line in lines]


def _columns(snap: dict[str, Any]) -> tuple[dict[str, str], str]:
    """Each agent's progress cell, and the row format sized to the agents shown."""
    rows = snap["agents"]
    cells = {}
    for agent_id, row in rows.items():
        prog = row["progress"]
        cells[agent_id] = f"{prog['done']}/{prog['of']}" if prog else "-"

    def size(values: list[str], title: str, cap: int) -> int:
        return min(max([len(title), *map(len, values)]), cap)

    agent_w = size(list(rows), "agent", 20)
    kind_w = size([r["kind"] or "?" for r in rows.values()], "kind", 14)
    presence_w = size([r["presence"] for r in rows.values()], "presence", 17)
    progress_w = size(list(cells.values()), "progress", 9)
    return cells, f"{{:<{agent_w}}} {{:<{kind_w}}} {{:<{presence_w}}} {{:<{progress_w}}} {{}}"


def _agent_lines(snap: dict[str, Any], width: int, limit: int | None = None) -> list[str]:
    """One line per agent; with a `limit`, the online ones first and a ``+N more``."""
    cells, fmt = _columns(snap)
    ids = list(snap["agents"])
    if limit is not None and limit < len(ids):
        ids.sort(key=lambda a: snap["agents"][a]["presence"] != "ONLINE")
    lines = []
    for agent_id in ids[:limit]:
        row = snap["agents"][agent_id]
        lines.append(
            _clip(
                fmt.format(agent_id, row["kind"] or "?", row["presence"], cells[agent_id],
                           row["status"]),
                width,
            )
        )  # fmt: skip
    if limit is not None and limit < len(ids):
        rest = ids[limit:]
        offline = sum(snap["agents"][a]["presence"] != "ONLINE" for a in rest)
        more = f"+{len(rest)} more" + (f" ({offline} not online)" if offline else "")
        lines.append(_clip(f"{more}; a taller terminal or --once --json shows all", width))
    return lines


def _tail_lines(snap: dict[str, Any], width: int) -> list[str]:
    """Conflicts, dialogs, favors, requests, rates and the broker's figures."""
    lines: list[str] = []
    if snap["conflicts"]:
        lines += ["", "conflicts (claims lost):"]
        for c in snap["conflicts"][-5:]:
            lines.append(_clip(f"  {c['agent']} lost {c['label']} ({c['reason']})", width))
    if snap["dialogs"]:
        lines += ["", "dialogs:"]
        lines += [_clip(f"  {d['sender']}: {d['kind']}", width) for d in snap["dialogs"][-5:]]
    if snap["favors"]["counts"]:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(snap["favors"]["counts"].items()))
        lines += ["", *_wrapped(f"favors: {counts}", width)]
    if snap["requests"]:
        lines += ["", "requests:"]
        for channel, r in snap["requests"].items():
            p50 = "-" if r["latency_ms_p50"] is None else f"{r['latency_ms_p50']:.0f} ms"
            line = (
                f"  _/{channel:<14} sent {r['sent']:<5} answered {r['answered']:<5} "
                f"unanswered {r['unanswered']:<4} latency p50 {p50}"
            )
            lines.append(_clip(line, width))
    if snap["rates"]:
        rates = "  ".join(f"{c} {r:g}/s" for c, r in snap["rates"].items() if r)
        lines += ["", *_wrapped(f"rates: {rates or 'quiet'}", width)]
    if snap["broker"]:
        figures = [f"{k} {snap['broker'][k]}" for k in SYS_SHOWN if k in snap["broker"]]
        stale = snap.get("connected") is False
        title = "broker (stale, last heard before the connection was lost)" if stale else "broker"
        lines += ["", *_wrapped(f"{title}: " + " | ".join(figures), width)]
    return lines


def status_line(status: dict[str, Any]) -> str:
    """A mission status view (``MissionBoard.view``) in one line: ``FAILED: why ·
    2/3 leaves``."""
    return str(status.get("headline") or status.get("state"))


class TeamObserver:
    """A passive, reconnecting broker client feeding a MonitorState (and optional
    hooks) with every valid message of `team`.

    ``async with TeamObserver(...) as obs:`` connects; ``wait_connected`` raises
    ConnectError when the broker cannot be reached in time. After every connect it
    also asks the team to re-sync (``SyncAsker``; ``resync=False`` does not), so it
    sees the team's state on a broker cluster whose retained messages do not reach
    wildcard subscriptions; re-published state is fed as retained. It announces no
    presence, so it never shows up as a team member."""

    def __init__(
        self,
        endpoint: Endpoint,
        team: str,
        *,
        username: str | None = None,
        password: str | None = None,
        sys_topics: bool = True,
        on_message: MessageHook | None = None,
        client_prefix: str = "monitor",
        tls_context: Any = None,
        mission_id: str | None = None,
        resync: bool = True,
        on_malformed: Callable[[Incoming, WireError], None] | None = None,
    ):
        self.team = validate_id(team, "team")
        self.endpoint = endpoint
        self.state = MonitorState(self.team, mission_id=mission_id)
        self._hook = on_message
        #: told of each message dropped as malformed (what ``teamtree echo`` reports)
        self._on_malformed = on_malformed
        self.connection = Connection(
            endpoint,
            client_id=f"teamtree-{self.team}-{client_prefix}-{uuid.uuid4().hex[:8]}",
            on_message=self._receive,
            on_connect=self._on_connect,
            on_disconnect=lambda: self.state.link(False),
            clean_session=True,
            username=username,
            password=password,
            tls_context=tls_context,
        )
        #: the re-sync asked after every connect (a broker cluster's readers need it)
        self._resync = resync
        self.sync = SyncAsker(self.team, self.connection.publish, prefix=client_prefix)
        self._filters = [f"teamtree/v1/{self.team}/#"] + (["$SYS/broker/#"] if sys_topics else [])
        self._task: asyncio.Task[None] | None = None
        self._seen: set[tuple[str, int]] = set()
        self._order: deque[tuple[str, int]] = deque()

    async def __aenter__(self) -> TeamObserver:
        for topic_filter in self._filters:
            await self.connection.subscribe(topic_filter)
        self._task = asyncio.create_task(self.connection.run(), name="teamtree[monitor].connection")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sync.close()
        await self.connection.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def wait_connected(self, timeout: float = CONNECT_WAIT_S) -> None:
        """Wait for the first connect; raises ConnectError after `timeout` seconds.

        The broker answered the command's preflight (``check_broker``) by then, so this
        waits for a broker that is up but slow: a stack starting beside other work (a
        compose recorder under a loaded CI machine once gave up after 5 s while the
        robots connected)."""
        try:
            async with asyncio.timeout(timeout):
                await self.connection.connected.wait()
        except TimeoutError:
            last = self.connection.last_error
            raise ConnectError(
                f"cannot connect to the broker at {self.endpoint.url} within {timeout:g} s "
                + (f"(last attempt: {last}; " if last else "(")
                + "is it running? are the credentials right?)",
                endpoint=self.endpoint.url,
            ) from None

    async def wait_synced(self, timeout: float) -> bool:
        """Wait until the re-sync asked after the last connect is over (False after
        `timeout` seconds): by then every member running in cluster mode re-published
        its state. Returns at once for an observer made with ``resync=False``."""
        if not self._resync:
            return True
        return await self.sync.wait_synced(timeout)

    async def _on_connect(self) -> None:
        self.state.link(True)
        if self._resync:
            self.sync.connected()

    async def _receive(self, message: Incoming) -> None:
        if message.topic.startswith("$SYS/"):
            self.state.feed_sys(message.topic, message.payload)
            return
        try:
            topic = parse(message.topic)
            env = decode(message.payload, topic=message.topic)
        except WireError as exc:
            self.state.drop("malformed")
            if self._on_malformed is not None:
                self._on_malformed(message, exc)
            return
        if topic.team != self.team:
            self.state.drop("team")
            return
        if topic.agent is not None and env.sender != topic.agent:
            self.state.drop("sender_mismatch")
            return
        key = (message.topic, env.hid)
        if key in self._seen:
            return
        self._seen.add(key)
        self._order.append(key)
        if len(self._order) > 8192:
            self._seen.discard(self._order.popleft())
        self.sync.on_message(env, topic)
        if not message.retain and self.sync.kept(env, message):
            message = replace_struct(message, retain=True)  # re-published state, not news
        try:
            self.state.feed(env, topic, retained=message.retain)
        except Exception as exc:  # a body the view cannot read: it goes on without it,
            self.state.drop("unreadable")  # and the hook (a recorder) still gets it
            _log.warning(
                "monitor.unreadable", topic=message.topic, sender=env.sender, error=repr(exc)
            )
        if self._hook is not None:
            result = self._hook(env, topic, message)
            if result is not None:
                await result
