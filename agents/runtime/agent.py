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

The Agent owns its parts: ``own_presence`` (what it says of itself, the Will,
heartbeats), ``receiver`` (the receive path), ``routes`` (the handler table, with
its registration API mixed into Agent), ``request_reply``, ``drop_log`` and ``ticks``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Iterable
from typing import Any, ClassVar

import structlog

from teamtree.agents.runtime.agent_state import AgentState
from teamtree.agents.runtime.config import AgentSpec, RuntimeSettings, TeamConfig, spec_reader
from teamtree.agents.runtime.credentials import warn_no_access_control
from teamtree.agents.runtime.drop_log import DropLog
from teamtree.agents.runtime.event_loop import running_loop_name
from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, stamp
from teamtree.agents.runtime.own_presence import FACTSHEET_CHANNEL, PRESENCE_CHANNEL, OwnPresence
from teamtree.agents.runtime.priority import current_nice
from teamtree.agents.runtime.receiver import Receiver
from teamtree.agents.runtime.request_reply import REPLY_CHANNEL, RequestReply
from teamtree.agents.runtime.resync import Resync
from teamtree.agents.runtime.routes import RouteTable, Routing
from teamtree.agents.runtime.sessions import SESSION_KEY, SINCE_KEY
from teamtree.agents.runtime.team_view import Presence, TeamView
from teamtree.agents.runtime.ticks import tick_loop
from teamtree.broker import ConnectionLostError, LifecycleError
from teamtree.broker.connection import Connection, Outgoing
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import MAX_PAYLOAD, Envelope, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.long_lived import freeze_startup
from teamtree.broker.topics import build, pattern, validate_id


class Agent(Routing):
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
        self.clock = HybridLogicalClock(self.id)
        self.team_view = TeamView(self.id, mission=self.mission_id)
        self.stats: Counter[str] = Counter()
        self.log = structlog.get_logger("teamtree.agent").bind(agent=self.id)
        self.state = AgentState.UNSTARTED
        self.exit_code = 0
        self._max_payload = max_payload
        self._hid_base = time.time_ns() // 1000  # restarts continue above old header ids
        self._hids: dict[str, int] = {}
        self.drops = DropLog(self.stats, self.log)
        self.own_presence = OwnPresence(self)
        self.request_reply = RequestReply(self)
        self.routes = RouteTable()
        self.receiver = Receiver(self, max_payload)
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
            on_message=self.receiver.receive,
            on_connect=self._announce,
            on_disconnect=self._on_connection_lost,
            will=self.own_presence.will,
            keepalive=self.runtime.keepalive_s,
            username=username,
            password=password,
            clean_session=clean_session,
            tls_context=tls_context,
            latest_topics=self.routes.latest_topics,
            urgent_channels=self.routes.urgent_channels,
            critical_channels=self.routes.critical_channels,
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
            asyncio.create_task(tick_loop(self), name=f"teamtree[{self.id}].tick"),
            asyncio.create_task(
                self.own_presence.heartbeat_loop(), name=f"teamtree[{self.id}].heartbeat"
            ),
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
        self.request_reply.pending.fail_all(ConnectionLostError(f"agent {self.id!r} is stopping"))
        await self.connection.close(final=[self.own_presence.presence_message(Presence.OFFLINE)])
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

    # -- request/reply (``request_reply.RequestReply``) ------------------------------

    async def reply(self, request: Envelope, kind: str, body: Any = None) -> None:
        """Answer `request` on ``<self>/reply/<requester>`` with its correlation id."""
        await self.request_reply.reply(request, kind, body)

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
        """Send a request on the team channel (this agent's own with `own`) and return
        the first reply; RequestTimeoutError at the deadline (``RequestReply.request``)."""
        return await self.request_reply.request(
            channel, kind, body, to=to, timeout=timeout, own=own
        )

    async def gather(
        self,
        channel: str,
        kind: str,
        body: Any = None,
        *,
        expect: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Envelope]:
        """Send a request on the team channel and collect replies, by sender, until all of
        `expect` answered or the deadline passed (``RequestReply.gather``)."""
        return await self.request_reply.gather(channel, kind, body, expect=expect, timeout=timeout)

    # -- handlers (registered through ``routes.Routing``) ----------------------------

    def _drop(self, reason: str, topic: str, sender: str | None, detail: str = "") -> None:
        """Count and log a message a handler refuses (``drop_log.DropLog.drop``)."""
        self.drops.drop(reason, topic, sender, detail)

    # -- connection events -----------------------------------------------------------

    async def _announce(self) -> None:
        if self.state is AgentState.STOPPING:
            # connected again only to say OFFLINE (``Connection.close``): no ONLINE
            # in between, and no ``on_connected`` work for an agent that is leaving
            return
        await self.own_presence.announce()
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
        self.request_reply.pending.fail_all(
            ConnectionLostError("connection to the broker was lost", endpoint=str(self.endpoint))
        )
        if self.state is AgentState.RUNNING:
            self.spawn(self.on_connection_lost(), "on_connection_lost", optional=True)
