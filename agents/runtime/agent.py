"""The Agent base: one process's presence, loops, handlers and request/reply.

``async with Agent(...) as agent:`` connects (and keeps reconnecting), publishes
presence and the factsheet after every connect, and runs the named loops
``teamtree[<id>].connection``, ``.tick`` and ``.heartbeat``. Leaving the block
publishes OFFLINE and disconnects cleanly, so the Last Will does not fire.

Subclasses override small hooks (``setup``, ``on_connected``, ``on_presence``,
``on_tick``, ``main``, ``on_stop``) and register handlers with ``on_team`` /
``on_agents``. Handlers run one at a time in arrival order and must not wait for
other messages; use ``spawn`` for work that does. The spawned tasks (and the tick and
heartbeat loops) are the agent's task group: one that fails fails the agent (exit code
1, ``agent.task_failed`` naming it) unless it was spawned optional, as work for one
message or event is; a handler's error is logged and never fails the agent.
``on_connection_lost`` and
``on_connection_regained`` tell a subclass when the broker goes and comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import random
import ssl
import time
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar

import structlog

from teamtree.agents.runtime.clock_skew import SkewWatch
from teamtree.agents.runtime.config import AgentSpec, RuntimeSettings, TeamConfig, spec_reader
from teamtree.agents.runtime.credentials import warn_no_access_control
from teamtree.agents.runtime.event_loop import running_loop_name
from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, foreign, stamp
from teamtree.agents.runtime.pending import PendingRequests
from teamtree.agents.runtime.presence_wire import heartbeat_body, presence_body
from teamtree.agents.runtime.priority import current_nice
from teamtree.agents.runtime.resync import Resync
from teamtree.agents.runtime.sessions import SESSION_KEY, SINCE_KEY, stale_kept
from teamtree.agents.runtime.team_view import Presence, RefusedState, TeamView
from teamtree.broker import (
    ConnectionLostError,
    LifecycleError,
    RequestTimeoutError,
    TeamtreeError,
    TooLargeError,
    WireError,
)
from teamtree.broker.connection import Connection, Incoming, Outgoing
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import MAX_PAYLOAD, Envelope, decode, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.inbound import give_way_to_critical
from teamtree.broker.long_lived import freeze_startup
from teamtree.broker.topics import Topic, build, parse, pattern, validate_id

Handler = Callable[[Envelope, Topic], Awaitable[None]]

PRESENCE_CHANNEL = "connection"
FACTSHEET_CHANNEL = "factsheet"
HEARTBEAT_CHANNEL = "heartbeat"
REPLY_CHANNEL = "reply"
DROP_LOG_INTERVAL_S = 10.0
"""Dropped messages are logged once per sender per interval, with counts by reason."""
DROP_WINDOWS_MAX = 1024
"""Senders (and reasons) whose drops are counted each on its own line; drops of the
senders beyond share the line of sender ``DROP_OTHERS``, so made-up senders cannot
grow the table without limit."""
DROP_OTHERS = "*others*"
REASSERT_EVERY_S = 1.0
"""An agent says its own presence or factsheet again at most once per this many seconds
(two processes under one id must not answer each other's answers at network speed)."""


class AgentState(enum.Enum):
    """Lifecycle of an Agent."""

    UNSTARTED = "unstarted"  #: constructed; not entered yet
    RUNNING = "running"  #: inside ``async with``; loops running
    STOPPING = "stopping"  #: leaving: hooks, OFFLINE, disconnect
    STOPPED = "stopped"  #: left; cannot be entered again


class _DedupWindow:
    """Recently seen (topic, sender, connection id, header id) keys, to drop
    at-least-once duplicates. The sender and its random per-connection id are part of
    the key, so nobody can make a receiver drop another sender's messages by sending
    header ids ahead of it."""

    def __init__(self, size: int = 4096):
        self._order: deque[tuple[str, str, str | None, int]] = deque()
        self._seen: set[tuple[str, str, str | None, int]] = set()
        self._size = size

    def add(self, topic: str, hid: int, sender: str = "", sid: str | None = None) -> bool:
        """Record the key; False when it was already seen."""
        key = (topic, sender, sid, hid)
        if key in self._seen:
            return False
        self._seen.add(key)
        self._order.append(key)
        if len(self._order) > self._size:
            self._seen.discard(self._order.popleft())
        return True


class Agent:
    """Base of every teamtree agent process. See the module docstring."""

    kind: ClassVar[str] = "agent"
    #: config keys that ``teamtree run/agent --set KEY=VALUE`` may override
    overridable: ClassVar[frozenset[str]] = frozenset()
    #: names of the tasks this kind spawns for one message or event, whose failure is
    #: logged and not the agent's (as ``spawn(..., optional=True)``)
    optional_tasks: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        agent_id: str,
        *,
        team: str,
        endpoint: Endpoint,
        runtime: RuntimeSettings | None = None,
        params: dict[str, Any] | None = None,
        max_payload: int = MAX_PAYLOAD,
        username: str | None = None,
        password: str | None = None,
        clean_session: bool = False,
        tls_context: ssl.SSLContext | None = None,
        mission_id: str | None = None,
    ):
        self.id = validate_id(agent_id, "agent id")
        self.team = validate_id(team, "team")
        #: the mission this agent works for; scopes its retained state (see mission.py)
        self.mission_id = None if mission_id is None else validate_id(mission_id, "mission id")
        self.endpoint = endpoint
        self.runtime = runtime or RuntimeSettings()
        self.params = dict(params or {})
        self.session = uuid.uuid4().hex[:12]
        """This process's session id, in its presence, factsheet and every retained body,
        so receivers can refuse other sessions' (``sessions.py``)."""
        self.since = wall_ms()
        """From when (UTC ms) this session speaks for the agent: its start, raised past
        another session of this id that claims a later one (``sessions.py``)."""
        self.connection_sid = uuid.uuid4().hex[:16]
        """Random id of the current connection, in every envelope (de-duplication)."""
        self._my_sids = {self.connection_sid}
        self.clock = HybridLogicalClock(self.id)
        self.team_view = TeamView(self.id, mission=self.mission_id)
        #: the session of the last retained state believed per (topic, sender)
        self._kept_sessions: dict[tuple[str, str], str] = {}
        self._reasserted_at: dict[str, float] = {}  #: channel -> when last said again
        self._reassert_pending: set[str] = set()
        self.stats: Counter[str] = Counter()
        self.log = structlog.get_logger("teamtree.agent").bind(agent=self.id)
        self.state = AgentState.UNSTARTED
        self.exit_code = 0
        self._max_payload = max_payload
        self._hid_base = time.time_ns() // 1000  # restarts continue above old header ids
        self._hids: dict[str, int] = {}
        self._dedup = _DedupWindow()
        self._skew = SkewWatch(self.runtime.max_clock_skew_s)
        # (sender, reason) -> (window start, drops since the logged one, last topic)
        self._drop_windows: dict[tuple[str | None, str], tuple[float, int, str]] = {}
        self._handlers: dict[tuple[str, str], list[tuple[str | None, Handler]]] = {}
        self._pending = PendingRequests()
        self._filters: set[str] = set()
        #: own channels read with any recipient segment (``on_agents(any_recipient=True)``)
        self._any_recipient: set[str] = set()
        self._latest_topics: set[str] = set()
        self._urgent_channels: set[str] = set()
        self._critical_channels: set[str] = set()
        self._taps: list[Handler] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._spawned: set[asyncio.Task[Any]] = set()
        self._stop_requested: asyncio.Event | None = None
        self._started_ms = wall_ms()
        #: on a broker cluster (see RuntimeSettings.cluster): re-sync state on join
        self.clustered = (
            bool(endpoint.fallbacks) if self.runtime.cluster is None else self.runtime.cluster
        )
        self.resync = Resync(self)
        self._logged_in = username is not None
        self.connection = Connection(
            endpoint,
            client_id=f"teamtree-{self.team}-{self.id}",
            on_message=self._receive,
            on_connect=self._announce,
            on_disconnect=self._on_connection_lost,
            will=self._will,
            keepalive=self.runtime.keepalive_s,
            username=username,
            password=password,
            clean_session=clean_session,
            tls_context=tls_context,
            latest_topics=self._latest_topics,
            urgent_channels=self._urgent_channels,
            critical_channels=self._critical_channels,
        )

    # -- hooks for subclasses ------------------------------------------------------

    async def setup(self) -> None:
        """Register handlers and state before the first connect."""

    async def on_connected(self) -> None:
        """After every (re)connect, once presence is published."""

    async def on_connection_lost(self) -> None:
        """The broker connection dropped while running (it is being re-established);
        requests in flight have already failed with ConnectionLostError."""

    async def on_connection_regained(self) -> None:
        """After every reconnect (not the first connect), once ``on_connected`` ran."""

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        """A teammate's presence changed."""

    async def on_tick(self) -> None:
        """Called `runtime.tick_hz` times a second."""

    async def main(self) -> None:
        """The agent's mission logic; when it returns, the agent stops. The default
        waits until a stop is requested (a service)."""
        await self.wait_stop_requested()

    async def on_stop(self) -> None:
        """Before OFFLINE is published on a graceful stop."""

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the kind-specific keys of `spec`; returns constructor keyword
        arguments. Raises ConfigError naming the key. The base accepts none."""
        reader = spec_reader(spec, config)
        reader.no_extras()
        return {}

    def factsheet(self) -> dict[str, Any]:
        """What this agent is, published retained on its ``factsheet`` topic."""
        sheet = {"kind": self.kind, SESSION_KEY: self.session, SINCE_KEY: self.since}
        if self.mission_id is not None:
            sheet["mission"] = self.mission_id
        return sheet

    # -- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> Agent:
        if self.state is not AgentState.UNSTARTED:
            raise LifecycleError(
                f"agent {self.id!r} is {self.state.value}; an Agent can be entered only once"
            )
        self.state = AgentState.RUNNING
        self._stop_requested = asyncio.Event()
        if not self._logged_in:
            warn_no_access_control(self.log, self.id)
        for channel in (PRESENCE_CHANNEL, FACTSHEET_CHANNEL):
            await self.connection.subscribe(pattern(self.team, "+", channel))
        await self.connection.subscribe(pattern(self.team, "+", REPLY_CHANNEL, self.id))
        if self.clustered:
            self.resync.register()
        await self.setup()
        self._tasks = [
            asyncio.create_task(self.connection.run(), name=f"teamtree[{self.id}].connection"),
            asyncio.create_task(self._tick_loop(), name=f"teamtree[{self.id}].tick"),
            asyncio.create_task(self._heartbeat_loop(), name=f"teamtree[{self.id}].heartbeat"),
        ]
        self._tasks[0].add_done_callback(self._connection_ended)
        for task, name in zip(self._tasks[1:], ("tick", "heartbeat"), strict=True):
            task.add_done_callback(functools.partial(self._task_ended, name, False))
        return self

    def _connection_ended(self, task: asyncio.Task[None]) -> None:
        """The connection's task ends only on ``stop``; ended otherwise (a bug in it or
        in a hook it runs), the agent cannot hear or speak again: it fails loudly,
        stopping with exit code 1, rather than living on silent."""
        if task.cancelled():
            return
        error = task.exception()
        if self.state is not AgentState.RUNNING:
            return
        self.log.error(
            "agent.connection_failed",
            broker=str(self.endpoint),
            error=repr(error) if error is not None else "the connection ended",
            action="stopping",
        )
        self.request_stop(exit_code=1)

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Stop gracefully: ``on_stop``, OFFLINE presence, clean disconnect."""
        if self.state is not AgentState.RUNNING:
            return
        self.state = AgentState.STOPPING
        try:
            await asyncio.wait_for(self.on_stop(), 5.0)
        except Exception as exc:
            self.log.warning("agent.on_stop_failed", error=repr(exc))
        for task in [*self._tasks[1:], *self._spawned]:
            task.cancel()
        await asyncio.gather(*self._tasks[1:], *self._spawned, return_exceptions=True)
        self._pending.fail_all(ConnectionLostError(f"agent {self.id!r} is stopping"))
        await self.connection.close(final=[self._presence_message(Presence.OFFLINE)])
        await asyncio.gather(*self._tasks[:1], return_exceptions=True)
        self.state = AgentState.STOPPED
        self.log.info("agent.stopped", exit_code=self.exit_code)

    def request_stop(self, exit_code: int = 0) -> None:
        """Ask ``run_until_stopped`` to return; safe from signal handlers."""
        if exit_code and not self.exit_code:
            self.exit_code = exit_code
        if self._stop_requested is not None:
            self._stop_requested.set()

    async def wait_stop_requested(self) -> None:
        if self._stop_requested is None:
            raise LifecycleError(f"agent {self.id!r} has not been started")
        await self._stop_requested.wait()

    async def run_until_stopped(self) -> int:
        """Run ``main`` until it returns, fails, or a stop is requested; return the exit
        code (0 on success)."""
        main = asyncio.create_task(self.main(), name=f"teamtree[{self.id}].main")
        stop = asyncio.create_task(self.wait_stop_requested())
        done, _ = await asyncio.wait({main, stop}, return_when=asyncio.FIRST_COMPLETED)
        for task in (main, stop):
            if task not in done:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if main in done and main.exception() is not None:
            error = main.exception()
            self.log.error("agent.failed", error=repr(error), error_type=type(error).__name__)
            self.exit_code = self.exit_code or 1
        return self.exit_code

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Wait until this agent has the team's state: on a cluster, until its first
        re-sync is over (``resync_wait_s`` after connecting); elsewhere, until
        connected (retained messages come with the subscriptions)."""
        if not self.clustered:
            await self.wait_connected(timeout)
            return
        async with asyncio.timeout(timeout):
            await self.resync.synced.wait()

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until connected; raises TimeoutError after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            await self.connection.connected.wait()

    def spawn(
        self, coro: Awaitable[Any], name: str = "task", *, optional: bool = False
    ) -> asyncio.Task[Any]:
        """Run `coro` in the background as one of the agent's tasks, cancelled on stop.

        The agent's tasks are its task group: one that fails fails the agent (it logs
        ``agent.task_failed`` naming the task and stops with exit code 1), unless it
        was spawned `optional` or its name is in ``optional_tasks`` (work for one
        message or event, a watch that may end): then the error is logged and the agent
        goes on."""
        task = asyncio.ensure_future(coro)
        task.set_name(f"teamtree[{self.id}].{name}")
        self._spawned.add(task)
        optional = optional or name in self.optional_tasks
        task.add_done_callback(functools.partial(self._task_ended, name, optional))
        return task

    def _task_ended(self, name: str, optional: bool, task: asyncio.Task[Any]) -> None:
        """One of the agent's tasks ended: a failure fails the agent unless optional."""
        self._spawned.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        self.stats["task_errors"] += 1
        fatal = not optional and self.state is AgentState.RUNNING
        self.log.error(
            "agent.task_failed",
            task=name,
            error=repr(error),
            action="stopping" if fatal else "going on" if optional else "already stopping",
            exc_info=error,
        )
        if fatal:
            self.request_stop(exit_code=1)

    # -- publishing ------------------------------------------------------------------

    def topic(self, channel: str, recipient: str | None = None) -> str:
        """This agent's own topic for `channel`."""
        return build(self.team, self.id, channel, recipient)

    def team_topic(self, channel: str) -> str:
        """The team-wide topic for `channel`."""
        return build(self.team, None, channel)

    def envelope(self, kind: str, body: Any = None, topic: str = "", **fields: Any) -> Envelope:
        """A stamped envelope from this agent (next header id for `topic`)."""
        hid = self._hids.get(topic, self._hid_base) + 1
        self._hids[topic] = hid
        return Envelope(
            kind=kind,
            sender=self.id,
            hid=hid,
            ts=wall_ms(),
            hlc=self.clock.now(),
            body=body,
            sid=self.connection_sid,
            **fields,
        )

    async def publish(
        self,
        channel: str,
        kind: str,
        body: Any = None,
        *,
        team: bool = False,
        recipient: str | None = None,
        qos: int = 1,
        retain: bool = False,
        **fields: Any,
    ) -> Envelope:
        """Publish on this agent's `channel` (or the team channel with `team=True`).

        Returns once the message is on its way, in order with this agent's other
        messages; the broker's acknowledgement is awaited in the background (pipelined),
        so a handler never waits a round trip. QoS 1 messages are queued while
        disconnected and re-sent if the acknowledgement is lost with the session.
        Raises TooLargeError, SchemaError or OutboxFullError; returns the envelope sent.
        """
        topic = self.team_topic(channel) if team else self.topic(channel, recipient)
        if channel not in UNSCOPED_CHANNELS:
            body = stamp(body, self.mission_id)
            if retain and isinstance(body, dict):  # kept state: whose process kept it
                body = {**body, SESSION_KEY: self.session}
        envelope = self.envelope(kind, body, topic, **fields)
        payload = encode(envelope, max_size=self._max_payload)
        await self.connection.publish(Outgoing(topic, payload, qos, retain), wait=False)
        self.stats["sent"] += 1
        return envelope

    async def reply(self, request: Envelope, kind: str, body: Any = None) -> None:
        """Answer `request` on ``<self>/reply/<requester>`` with its correlation id."""
        if request.reply_to is None or request.corr is None:
            self.log.warning("reply.no_address", kind=request.kind, sender=request.sender)
            return
        await self.publish(REPLY_CHANNEL, kind, body, recipient=request.reply_to, corr=request.corr)

    async def request(
        self,
        channel: str,
        kind: str,
        body: Any = None,
        *,
        to: str | None = None,
        timeout: float | None = None,
        own: bool = False,
    ) -> Envelope:
        """Send a request on the team channel and return the first reply (from `to`
        when given). With `own`, on this agent's own `channel` instead: the topic names
        the sender, so under access control the receiver knows the request comes from
        this login. Raises RequestTimeoutError at the deadline ("not granted") and
        ConnectionLostError if the connection drops meanwhile."""
        replies = await self._exchange(
            channel,
            kind,
            body,
            to=to,
            expect=None if to is None else [to],
            first_only=True,
            timeout=timeout,
            team=not own,
        )
        if not replies:
            raise RequestTimeoutError(
                f"no reply to {kind!r}{f' from {to!r}' if to else ''} within the deadline",
                kind=kind,
            )
        return next(iter(replies.values()))

    async def gather(
        self,
        channel: str,
        kind: str,
        body: Any = None,
        *,
        expect: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Envelope]:
        """Send a request on the team channel and collect replies until every agent in
        `expect` has answered or the deadline passes; returns what arrived (by sender).
        Raises ConnectionLostError if the connection drops meanwhile."""
        return await self._exchange(
            channel, kind, body, to=None, expect=expect, first_only=False, timeout=timeout
        )

    async def _exchange(
        self,
        channel: str,
        kind: str,
        body: Any,
        *,
        to: str | None,
        expect: Iterable[str] | None,
        first_only: bool,
        timeout: float | None,
        team: bool = True,
    ) -> dict[str, Envelope]:
        timeout = self.runtime.request_timeout_s if timeout is None else timeout
        corr = uuid.uuid4().hex
        pending = self._pending.open(
            corr, kind, expect=None if expect is None else frozenset(expect), first_only=first_only
        )
        try:
            await self.publish(
                channel,
                kind,
                body,
                team=team,
                to=to,
                corr=corr,
                reply_to=self.id,
                deadline=wall_ms() + int(timeout * 1000),
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pending.done), timeout)
            if pending.done.done() and pending.done.exception() is not None:
                raise pending.done.exception()  # type: ignore[misc]
            return dict(pending.replies)
        finally:
            self._pending.close(corr)

    # -- receiving -------------------------------------------------------------------

    def on_team(
        self, channel: str, handler: Handler, *, kind: str | None = None, share: str | None = None
    ) -> None:
        """Handle messages on the team channel `channel` (optionally only `kind`).

        With `share`, subscribe as a member of the shared subscription
        ``$share/<share>/...`` so replicas split the messages (mosquitto; a broker
        without shared subscriptions, such as amqtt, delivers each to every replica)."""
        topic_filter = pattern(self.team, None, channel)
        if share is not None:
            topic_filter = f"$share/{validate_id(share, 'share group')}/{topic_filter}"
        self._register(("team", channel), handler, kind, topic_filter)

    def urgent(self, *channels: str, critical: bool = False) -> None:
        """Handle messages on `channels` (team or agents' channels) before any other
        message waiting for this agent: for a protocol whose round trips others wait on
        (the peer rule's transitions and declarations), not for state a newer message
        supersedes. With `critical`, before even those, and this agent's own messages
        on `channels` leave within ``publish``, not a loop turn later with the others:
        for what a pending round trip waits on (the peer rule's claims and replies)."""
        names = [validate_id(c, "channel") for c in channels]
        self._urgent_channels.update(names)
        if critical:
            self._critical_channels.update(names)

    def on_agents(
        self,
        channel: str,
        handler: Handler,
        *,
        kind: str | None = None,
        addressed: bool = False,
        senders: Iterable[str] | None = None,
        latest: bool = False,
        any_recipient: bool = False,
    ) -> None:
        """Handle messages on every agent's own `channel` (optionally only `kind`).

        With `any_recipient`, those on ``<sender>/<channel>/<anything>`` instead (e.g.
        ``mission_status/<mission>``: one retained topic per mission).

        With `addressed`, only messages sent to this agent on
        ``<sender>/<channel>/<this id>`` (commands, directed messages). With `senders`,
        only those agents' messages: one subscription each, so the broker sends
        nothing else (the world publishes its 77 kB state on its ``state`` channel,
        where robots read their peers' transitions).

        With `latest`, each message is state that the sender's next one supersedes
        (snapshots, potentials): it is taken at QoS 0, so no acknowledgement goes back
        for it (a message lost with a connection is replaced by the sender's next, and
        a retained one comes again with the re-subscribe), and with `senders` one still
        waiting to be handled is replaced by the same sender's newer one, as
        ``on_agent(latest=True)`` does."""
        recipient = self.id if addressed else "+" if any_recipient else None
        if any_recipient:
            self._any_recipient.add(channel)
        if senders is None:
            filters = [pattern(self.team, "+", channel, recipient)]
        else:
            filters = [pattern(self.team, s, channel, recipient) for s in sorted(set(senders))]
            if latest:
                self._latest_topics.update(filters)
        self._register(("agents", channel), handler, kind, *filters, qos=0 if latest else 1)

    def on_agent(
        self,
        sender: str,
        channel: str,
        handler: Handler,
        *,
        kind: str | None = None,
        latest: bool = False,
    ) -> None:
        """Handle messages on one agent's own `channel` only (e.g. a robot's driver's
        observations): the broker sends nothing else, which matters at scale.

        With `latest`, only the newest message counts: one still waiting to be handled
        is replaced by a newer one (``CoalescingQueue``), so a busy agent skips stale
        observations instead of falling behind on them."""
        topic = pattern(self.team, validate_id(sender), channel)
        if latest:
            self._latest_topics.add(topic)
        self._register(("agents", channel), handler, kind, topic)

    def on_any(self, handler: Handler) -> None:
        """See every valid message of the team (recorders, monitors), before routing."""
        self._taps.append(handler)
        topic_filter = f"{pattern(self.team, '+', '+').rsplit('/', 2)[0]}/#"
        if topic_filter not in self._filters:
            self._filters.add(topic_filter)
            self.spawn(self.connection.subscribe(topic_filter), "subscribe", optional=True)

    def _register(
        self,
        key: tuple[str, str],
        handler: Handler,
        kind: str | None,
        *topic_filters: str,
        qos: int = 1,
    ) -> None:
        self._handlers.setdefault(key, []).append((kind, handler))
        new = [f for f in dict.fromkeys(topic_filters) if f not in self._filters]
        if new:
            self._filters.update(new)
            self.spawn(self.connection.subscribe(*new, qos=qos), "subscribe", optional=True)

    def _drop(self, reason: str, topic: str, sender: str | None, detail: str = "") -> None:
        """Count a dropped message; log it when it is the first of its sender and
        reason in ``DROP_LOG_INTERVAL_S``, else fold it into that pair's next summary
        line (``more``: how many were dropped since), so a flood logs a line per
        interval, not per message."""
        self.stats["dropped"] += 1
        self.stats[f"dropped.{reason}"] += 1
        now = time.monotonic()
        key = (sender, reason)
        if key not in self._drop_windows and len(self._drop_windows) >= DROP_WINDOWS_MAX:
            key = (DROP_OTHERS, reason)  # a flood of made-up senders: one line for them all
        window = self._drop_windows.get(key)
        if window is not None and now - window[0] < DROP_LOG_INTERVAL_S:
            self._drop_windows[key] = (window[0], window[1] + 1, topic)
            return
        self._flush_drops(key)
        self._drop_windows[key] = (now, 0, topic)
        others = {} if key[0] == sender else {"first": sender}  # the others' line
        self.log.warning(
            "message.dropped", reason=reason, topic=topic, sender=key[0], detail=detail, **others
        )

    def _flush_drops(self, key: tuple[str | None, str] | None = None) -> None:
        """Log the drops folded since the last line of `key` (None: of every pair whose
        interval is over), one summary line each."""
        now = time.monotonic()
        keys = list(self._drop_windows) if key is None else [key]
        for k in keys:
            window = self._drop_windows.get(k)
            if window is None or not window[1]:
                continue
            if key is None and now - window[0] < DROP_LOG_INTERVAL_S:
                continue
            self._drop_windows[k] = (window[0], 0, window[2])
            self.log.warning(
                "message.dropped",
                sender=k[0],
                reason=k[1],
                more=window[1],
                topic=window[2],
                interval_s=DROP_LOG_INTERVAL_S,
            )
        if key is None and len(self._drop_windows) >= DROP_WINDOWS_MAX:  # forget quiet ones
            for k, w in list(self._drop_windows.items()):
                if not w[1] and now - w[0] >= DROP_LOG_INTERVAL_S:
                    del self._drop_windows[k]

    async def _receive(self, message: Incoming) -> None:
        """Validate and dispatch one message; never raises (bad input is dropped)."""
        self.stats["received"] += 1
        try:
            await self._dispatch(message)
        except Exception as exc:  # a handler bug must not kill the agent
            self.stats["handler_errors"] += 1
            self.log.error("handler.failed", topic=message.topic, error=repr(exc), exc_info=True)

    async def _dispatch(self, message: Incoming) -> None:
        try:
            topic = parse(message.topic)
        except WireError as exc:
            self._drop("topic", message.topic, None, exc.reason)
            return
        if topic.team != self.team:
            self._drop("team", message.topic, topic.agent)
            return
        try:
            env = decode(message.payload, max_size=self._max_payload, topic=message.topic)
        except TooLargeError as exc:
            self._drop("too_large", message.topic, topic.agent, exc.reason)
            return
        except WireError as exc:
            self._drop("malformed", message.topic, exc.sender or topic.agent, exc.reason)
            return
        if topic.agent is not None and env.sender != topic.agent:
            self._drop("sender_mismatch", message.topic, env.sender, f"topic says {topic.agent!r}")
            return
        if not self._dedup.add(message.topic, env.hid, env.sender, env.sid):
            self.stats["duplicates"] += 1
            return
        if topic.channel not in UNSCOPED_CHANNELS and foreign(env.body, self.mission_id):
            self.stats["other_mission"] += 1  # another mission's (kept or queued): not ours
            return
        if env.sender != self.id and self._stale_retained(message.topic, env):
            return
        for tap in self._taps:
            await tap(env, topic)
        if (
            topic.recipient is not None
            and topic.recipient != self.id
            and topic.channel not in self._any_recipient
        ):
            if not self._taps:
                self._drop("not_for_me", message.topic, env.sender)
            return
        if env.sender == self.id:
            if topic.channel == PRESENCE_CHANNEL and topic.agent == self.id:
                self._check_own_presence(env)
            elif topic.channel == FACTSHEET_CHANNEL and topic.agent == self.id:
                self._check_own_factsheet(env)
            return  # our own message, e.g. our retained presence
        if not message.retain and self.team_view.get(env.sender) is not None:
            self._watch_skew(env)  # a retained message is as old as it was kept
        self.clock.update(env.hlc)
        self.team_view.seen(env.sender, env.ts)
        if topic.agent is not None and topic.channel == PRESENCE_CHANNEL:
            await self._on_presence_message(env)
            return
        if topic.agent is not None and topic.channel == FACTSHEET_CHANNEL:
            try:
                self.team_view.apply_factsheet(env.sender, env.body)
            except RefusedState as exc:
                self._drop(exc.reason, message.topic, env.sender, str(exc))
            except ValueError as exc:
                self._drop("malformed", message.topic, env.sender, str(exc))
            return
        if topic.channel == REPLY_CHANNEL and topic.recipient == self.id:
            self._pending.resolve(env)
            return
        if env.to is not None and env.to != self.id:
            self.stats["not_addressed"] += 1
            return
        if env.deadline is not None and env.deadline < wall_ms():
            self._drop("expired", message.topic, env.sender, f"deadline {env.deadline}")
            return
        key = ("team" if topic.agent is None else "agents", topic.channel)
        for kind, handler in self._handlers.get(key, []):
            if kind is None or kind == env.kind:
                await handler(env, topic)

    def _watch_skew(self, env: Envelope) -> None:
        """Name a peer whose clock is off by more than ``max_clock_skew_s`` (once per
        peer per minute; ``clock_skew.SkewWatch``)."""
        offset = self._skew.observe(env.sender, env.ts, wall_ms(), time.monotonic())
        if offset is None:
            return
        self.stats["clock_skew"] += 1
        bound = self.runtime.max_clock_skew_s
        self.log.warning(
            "clock.skew",
            peer=env.sender,
            offset_s=round(offset / 1000, 3),
            direction="ahead" if offset > 0 else "behind",
            max_clock_skew_s=bound,
            fix=f"synchronise {env.sender}'s clock with this host's (NTP); leases and "
            "fencing do not depend on it, but the claim rule's earliest-stamp order does",
        )

    def _stale_retained(self, topic: str, env: Envelope) -> bool:
        """Whether `env` is kept state (a body naming its session) of another session
        than its sender's current one, on a topic where the current one's state was
        believed already: a replay, dropped. (The first kept state on a topic is
        believed whatever its session: a resumed mission reads its peers' old state.)"""
        body = env.body
        if not isinstance(body, dict) or SESSION_KEY not in body:
            return False
        if topic.endswith((f"/{PRESENCE_CHANNEL}", f"/{FACTSHEET_CHANNEL}")):
            return False  # the team view judges presence and factsheets
        member = self.team_view.get(env.sender)
        current = None if member is None else member.session
        key = (topic, env.sender)  # per sender: on a team channel several agents keep state
        session = body[SESSION_KEY]
        if stale_kept(self._kept_sessions.get(key), current, session):
            self._drop("stale_session", topic, env.sender, f"session {session!r}")
            return True
        if isinstance(session, str):
            if len(self._kept_sessions) >= 65536 and key not in self._kept_sessions:
                self._kept_sessions.pop(next(iter(self._kept_sessions)))
            self._kept_sessions[key] = session
        return False

    async def _on_presence_message(self, env: Envelope) -> None:
        topic = build(self.team, env.sender, PRESENCE_CHANNEL)
        try:
            change = self.team_view.apply_presence(env.sender, env.body, env.ts)
        except RefusedState as exc:
            self._drop(exc.reason, topic, env.sender, str(exc))
            return
        except ValueError as exc:
            self._drop("malformed", topic, env.sender, str(exc))
            return
        if change is not None:
            old, new = change
            self.log.info("peer.presence", peer=env.sender, state=new.value, was=old.value)
            await self.on_presence(env.sender, old, new)

    # -- presence ----------------------------------------------------------------

    def _check_own_factsheet(self, env: Envelope) -> None:
        """A factsheet under this agent's id that this process did not send (e.g. a
        forged world address, or a replay of an older session's): publish the true one
        again, retained."""
        if env.sid in self._my_sids or env.body == self.factsheet() or not self._speaking():
            return
        if isinstance(env.body, dict):
            self._outbid(env.body)
        self.stats["factsheet_reasserted"] += 1
        self.log.warning("factsheet.reasserted", sid=env.sid)
        self._reassert(FACTSHEET_CHANNEL, self._factsheet_message)

    def _check_own_presence(self, env: Envelope) -> None:
        """Someone (a forger, a replay of an older session's presence, or the broker with
        a stale Will) says something else of this running agent than that this session
        is online: say ONLINE again, so the broker keeps, and peers believe, presence
        from the agent itself."""
        body = env.body if isinstance(env.body, dict) else {}
        if body.get("state") == Presence.ONLINE.value and body.get("session") == self.session:
            return
        if not self._speaking():
            return
        self._outbid(body)
        self.stats["presence_reasserted"] += 1
        self.log.warning(
            "presence.reasserted",
            seen=body.get("state"),
            session=body.get("session"),
            mission=body.get("mission"),
        )
        self._reassert(PRESENCE_CHANNEL, lambda: self._presence_message(Presence.ONLINE))

    def _outbid(self, body: dict[str, Any]) -> None:
        """Another session of this id says it speaks from no earlier than this one (a
        forgery dated ahead, or an earlier process of this agent on a clock that ran
        ahead): speak from after it, presence and factsheet both, so peers believe
        this process again rather than it for good."""
        since = body.get(SINCE_KEY)
        if body.get(SESSION_KEY) == self.session or not isinstance(since, int):
            return
        if since >= self.since:
            self.stats["session_outbid"] += 1
            self.log.warning("session.outbid", session=body.get(SESSION_KEY), since=since,
                             ahead_ms=since - self.since)  # fmt: skip
            self.since = since + 1
            self._reassert(PRESENCE_CHANNEL, lambda: self._presence_message(Presence.ONLINE))
            self._reassert(FACTSHEET_CHANNEL, self._factsheet_message)

    def _speaking(self) -> bool:
        """Running and connected: what this agent says of itself can go out now."""
        return self.state is AgentState.RUNNING and self.connection.connected.is_set()

    def _reassert(self, channel: str, message: Callable[[], Outgoing]) -> None:
        """Publish this agent's own `channel` message again: at once, or at the end of
        ``REASSERT_EVERY_S`` after the last time (one pending at a time per channel)."""
        if not self._speaking():
            return
        if channel in self._reassert_pending:
            return  # one is already waiting for its turn: it says the same
        last = self._reasserted_at.get(channel, float("-inf"))
        wait = max(0.0, last + REASSERT_EVERY_S - time.monotonic())
        self._reassert_pending.add(channel)

        async def again() -> None:
            try:
                if wait:
                    await asyncio.sleep(wait)
                if self.state is AgentState.RUNNING:
                    await self.connection.publish(message(), wait=False)
            finally:
                self._reassert_pending.discard(channel)
                self._reasserted_at[channel] = time.monotonic()

        self.spawn(again(), channel, optional=True)

    def _factsheet_message(self) -> Outgoing:
        topic = self.topic(FACTSHEET_CHANNEL)
        sheet = self.envelope("factsheet", self.factsheet(), topic)
        return Outgoing(topic, encode(sheet), qos=1, retain=True)

    def _presence_message(self, state: Presence) -> Outgoing:
        topic = self.topic(PRESENCE_CHANNEL)
        body = presence_body(state, self.kind, self.session, self.mission_id, self.since)
        return Outgoing(topic, encode(self.envelope("presence", body, topic)), qos=1, retain=True)

    def _will(self) -> Outgoing:
        return self._presence_message(Presence.CONNECTION_BROKEN)

    async def _announce(self) -> None:
        if self.state is AgentState.STOPPING:
            # connected again only to say OFFLINE (``Connection.close``): no ONLINE
            # in between, and no ``on_connected`` work for an agent that is leaving
            return
        self.connection_sid = uuid.uuid4().hex[:16]
        self._my_sids.add(self.connection_sid)
        await self.connection.publish_now(self._presence_message(Presence.ONLINE))
        await self.connection.publish_now(self._factsheet_message())
        self.log.info(
            "agent.online",
            broker=str(self.connection.endpoint),
            connects=self.connection.connects,
            loop=running_loop_name(),
            nice=current_nice(),
        )
        freeze_startup()  # the process's imports are in: out of the full collections' scans
        self.spawn(self._after_connect(), "on_connected", optional=True)

    async def _after_connect(self) -> None:
        if self.clustered:
            await self.resync.ask()
        await self.on_connected()
        if self.connection.connects > 1:
            await self.on_connection_regained()

    def _on_connection_lost(self) -> None:
        if self.state is AgentState.RUNNING:
            self.log.warning("agent.disconnected", broker=str(self.endpoint))
        self._pending.fail_all(
            ConnectionLostError("connection to the broker was lost", endpoint=str(self.endpoint))
        )
        if self.state is AgentState.RUNNING:
            self.spawn(self.on_connection_lost(), "on_connection_lost", optional=True)

    # -- loops -----------------------------------------------------------------------

    def _tick_phase(self) -> float:
        """Where in the tick period this agent's ticks fall (0 to 1), drawn from its id.

        Agents started together with the same ``tick_hz`` ticked at the same instants
        for good: every idle robot of a team claimed in the same millisecond, so every
        claim waited behind the others' replies in the broker and in processes that
        host several agents. Spread over the period, the claims interleave."""
        return random.Random(f"tick:{self.id}").random()

    async def _tick_loop(self) -> None:
        period = 1.0 / self.runtime.tick_hz
        loop = asyncio.get_running_loop()
        next_at = loop.time() + self._tick_phase() * period
        await asyncio.sleep(max(0.0, next_at - loop.time()))
        while True:
            next_at += period
            await give_way_to_critical()  # another agent's claim or reply goes first
            try:
                await self.on_tick()
            except TeamtreeError as exc:
                self.log.warning("tick.failed", error=str(exc))
            except Exception as exc:
                self.stats["tick_errors"] += 1
                self.log.error("tick.failed", error=repr(exc), exc_info=True)
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = max(next_at, loop.time() - period)

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.runtime.heartbeat_s)
            self._flush_drops()
            if self.connection.connected.is_set():
                body = heartbeat_body(
                    wall_ms() - self._started_ms,
                    self.stats["sent"],
                    self.stats["received"],
                    self.stats["dropped"],
                )
                with contextlib.suppress(TeamtreeError):
                    await self.publish(HEARTBEAT_CHANNEL, "heartbeat", body, qos=0)
