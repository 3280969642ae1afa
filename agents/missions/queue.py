"""The mission queue: a service that takes missions submitted to a running team.

It answers the dispatch protocol (``teamtree.agents.missions.protocol``) and runs
queued missions: for each it starts the config's ``on_call`` agents that serve the
mission's kind (the robots; for an LTL mission the planner and its robots) as
``teamtree agent`` processes with the mission's id and table, so every mission is
scoped at the broker like a ``teamtree run``. The team's services (world, drivers,
recorder) keep running between missions. A mission is done when every agent started
for it exits 0 (a task-tree robot exits 0 only when the root is done), failed when one
does not, and cancelled by ``mission.cancel``: its agents get SIGTERM, go OFFLINE, and
their drivers cancel the behaviour in progress. A cancel of a mission that already
ended changes nothing and is refused (``mission.rejected``, field ``state``) saying how
it ended.

Requests come on the requester's own ``<login>/missions`` topic (or, from older
clients, on ``_/missions``): the topic names the login, and when the queue itself logs
in (a broker with ``teamtree acl``'s access control, where every login writes only
under its own id) that name is the broker's word; the mission table records it as
``submitted_by``/``cancelled_by`` (else the claimed name, marked unverified). With an
``[access]`` table in the config only its operators may submit and cancel.

Missions run at once when they share no member and no object
(``teamtree.agents.missions.schedule``): a mission may name its members
(``members = ["pr2"]``) or ask for a number of idle ones (``members = 1``); without
``members`` it takes every member serving its kind, so such missions run one at a time.
Members that end a mission are idle at once and take the next queued mission that fits
while other missions still run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from typing import Any

import msgspec

from teamtree.agents.missions.protocol import (
    ACCEPTED,
    CANCEL,
    CANCELLED,
    CHANNEL,
    LIST,
    REJECTED,
    SERVES,
    SUBMIT,
    TABLE,
    TABLE_CHANNEL,
    MissionRow,
    SubmissionError,
    check_submission,
    mission_config,
)
from teamtree.agents.missions.schedule import Need, conflicts, next_starts
from teamtree.agents.missions.wire import (
    Accepted,
    Cancelled,
    CancelRequest,
    DispatchWireError,
    Rejected,
    Table,
    decode_dispatch,
    to_wire,
)
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import (
    AgentSpec,
    MissionSpec,
    TeamConfig,
    load_config,
    spec_reader,
)
from teamtree.agents.runtime.kinds import AGENT_KINDS, agent_class
from teamtree.agents.runtime.mission import new_mission_id
from teamtree.agents.runtime.mission_status import (
    STATUS_CHANNEL,
    STATUS_KIND,
    MissionBoard,
    MissionStatus,
    merge,
)
from teamtree.agents.runtime.outcome import (
    RESULT_CHANNEL,
    RESULT_KIND,
    OutcomeWireError,
    ResultBody,
    decode_result,
)
from teamtree.agents.runtime.processes import (
    AgentProcess,
    LinePrinter,
    agent_command,
    start_process,
    stop_processes,
)
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic


def serves(spec: AgentSpec) -> tuple[str, ...]:
    """The mission kinds an ``on_call`` entry serves (its kind's ``mission_kinds``, or
    the built-in table ``SERVES``)."""
    declared = getattr(AGENT_KINDS.get(spec.kind), "mission_kinds", None)
    return tuple(declared) if declared else SERVES.get(spec.kind, ())


#: missions that may wait in the queue at once; a submission beyond is rejected
MAX_QUEUED = 64
#: ended missions the table keeps (the oldest are forgotten first): the table is one
#: retained message, and every row takes room in it
MAX_ENDED_ROWS = 64
#: the states of a mission that is over (a cancel of one is refused, saying which)
ENDED = ("done", "failed", "cancelled")
#: characters of a row's reason and summary (a failing agent's last words, a result)
MAX_REASON = 300
#: seconds a mission's agent has to stop after SIGTERM before it is killed
STOP_GRACE_S = 10.0
#: seconds the queue waits, once a mission's agents have ended, for a ``mission.result``
#: they sent (kinds whose agents send none end this much later)
RESULT_GRACE_S = 0.5


class MissionQueue(Agent):
    """See the module docstring. Parameters: ``members`` (ids of ``on_call`` agents
    to start for missions; default every ``on_call`` agent of the config)."""

    kind = "mission_queue"

    def __init__(
        self,
        *args: Any,
        config_path: str,
        members: list[str],
        objects: list[str] | None = None,
        served: dict[str, list[str]] | None = None,
        operators: list[str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        #: who may submit and cancel (``[access] operators``); None: no [access] table
        self.operators = None if operators is None else frozenset(operators)
        #: the broker checks this queue's login, so a topic's id is that login's word
        self._verified = bool(kwargs.get("username"))
        self.config_path = config_path
        self.members = list(members)
        self.objects = None if objects is None else set(objects)
        served = served or {m: ["tasktree"] for m in members}
        self.served = {m: tuple(k) for m, k in served.items()}
        self._config: TeamConfig | None = None
        self.rows: dict[str, MissionRow] = {}
        self.queue: deque[str] = deque()
        self._wake = asyncio.Event()
        self._procs: dict[str, dict[str, AgentProcess]] = {}  # mission -> member -> process
        #: passes each mission agent's output on, after its id (as ``teamtree run`` does)
        self._print = LinePrinter(width=max(map(len, self.members), default=0))
        self._running: dict[str, asyncio.Task[None]] = {}
        self._results: dict[str, ResultBody] = {}  # mission -> its mission.result
        self._statuses: dict[str, MissionStatus] = {}  # mission -> the status it published
        self.board = MissionBoard()  # the members' word on each mission's progress

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        reader = spec_reader(spec, config)
        on_call = [s.id for s in config.agents if s.role == "on_call"]
        members = reader.take("members", list, on_call, "a list of on_call agent ids")
        reader.no_extras()
        for index, member in enumerate(members):
            if member in members[:index]:
                raise reader.error("members", f"names {member!r} twice; list each member once")
            if member not in on_call:
                raise reader.error(
                    "members", f"names {member!r}, not an on_call agent (on_call: {on_call})"
                )
        if not members:
            raise reader.error("members", 'is empty; mark the robots role = "on_call"')
        served = {}
        for member in members:
            entry = config.agent(member)
            kinds = serves(entry)
            if not kinds:
                raise reader.error(
                    "members",
                    f"names {member!r} of kind {entry.kind!r}, which serves no mission kind "
                    f"(kinds that do: {', '.join(sorted(SERVES))})",
                )
            served[member] = list(kinds)
        worlds = [s for s in config.agents if s.kind == "world"]
        objects = None
        if worlds and isinstance(worlds[0].params.get("objects"), dict):
            objects = sorted(worlds[0].params["objects"])
        return {
            "config_path": str(config.path),
            "members": members,
            "objects": objects,
            "served": served,
            "operators": list(config.access.operators) if config.access.declared else None,
        }

    def factsheet(self) -> dict[str, Any]:
        kinds = sorted({k for ks in self.served.values() for k in ks})
        return {**super().factsheet(), "serves": kinds, "members": self.members}

    async def setup(self) -> None:
        for kind, handler in ((SUBMIT, self._on_submit), (LIST, self._on_list),
                              (CANCEL, self._on_cancel)):  # fmt: skip
            self.on_team(CHANNEL, handler, kind=kind)
            self.on_agents(CHANNEL, handler, kind=kind)  # <login>/missions: who asks
        self.on_team(RESULT_CHANNEL, self._on_result, kind=RESULT_KIND)
        self.on_agents(STATUS_CHANNEL, self._on_status, kind=STATUS_KIND, any_recipient=True)

    async def on_connected(self) -> None:
        await self._publish_table()

    async def main(self) -> None:
        worker = self.spawn(self._work(), "missions")
        await self.wait_stop_requested()
        worker.cancel()

    async def on_stop(self) -> None:
        for procs in self._procs.values():
            self._terminate(procs)

    @staticmethod
    def _terminate(procs: dict[str, AgentProcess]) -> None:
        for proc in procs.values():
            proc.terminate()

    async def _stop(self, procs: dict[str, AgentProcess]) -> None:
        """SIGTERM every agent still running, and SIGKILL those still there after
        `STOP_GRACE_S` (an agent must not hold its body, or the queue, for ever)."""
        await stop_processes(procs.values(), STOP_GRACE_S, self._killing)

    def _killing(self, proc: AgentProcess) -> None:
        self.log.warning("mission.agent_killed", member=proc.name, grace_s=STOP_GRACE_S)

    # -- checking a submission -------------------------------------------------------------

    def _check_member(self, member: str, spec: MissionSpec, team: frozenset[str]) -> None:
        """Validate `spec` as `member` would read it when started for it (ConfigError)."""
        if self._config is None:
            self._config = load_config(self.config_path)
        config = mission_config(self._config, spec, team)
        entry = config.agent(member)
        agent_class(entry, config).params_from_config(entry, config)

    # -- protocol ----------------------------------------------------------------------

    def _requester(self, env: Envelope, topic: Topic) -> str:
        """Who asks: the login the topic names (the broker's word when this queue logs
        in), else the name the client claims, marked unverified."""
        if topic.agent is not None and self._verified:
            return topic.agent
        return f"{topic.agent or env.sender} (unverified)"

    async def _not_allowed(self, env: Envelope, topic: Topic, what: str) -> bool:
        """Refuse (reply and log) a submit or cancel from a login that is no operator."""
        who = topic.agent or env.sender
        if self.operators is None or who in self.operators:
            return False
        error = (
            f"{who!r} may not {what} missions: only operators may ([access] operators = "
            f"{sorted(self.operators)})"
        )
        self.log.warning("mission.refused", by=who, what=what, error=error)
        await self.reply(env, REJECTED, to_wire(Rejected("by", error)))
        return True

    async def _on_submit(self, env: Envelope, topic: Topic) -> None:
        if await self._not_allowed(env, topic, "submit"):
            return
        try:
            if len(self.queue) >= MAX_QUEUED:
                raise SubmissionError(
                    "mission",
                    f"the queue holds {MAX_QUEUED} missions already; submit again once some "
                    "have started, or cancel some",
                )
            spec, need = check_submission(env.body, self.objects, self.served, self._check_member)
        except SubmissionError as exc:
            self.log.info("mission.rejected", field=exc.field, error=str(exc), by=env.sender)
            await self.reply(env, REJECTED, to_wire(Rejected(exc.field, str(exc))))
            return
        except Exception as exc:  # a check that broke on this input: refuse it, say why
            self.log.error("mission.unchecked", error=repr(exc), by=env.sender, exc_info=True)
            error = f"[mission] could not be checked ({type(exc).__name__}); it is refused"
            await self.reply(env, REJECTED, to_wire(Rejected("mission", error)))
            return
        row = MissionRow(
            new_mission_id(),
            spec.kind,
            submitted_ms=wall_ms(),
            spec={"kind": spec.kind, "timeout_s": spec.timeout_s, **spec.params},
            need=need,
            submitted_by=self._requester(env, topic),
        )
        self.rows[row.id] = row
        self.queue.append(row.id)
        self.log.info("mission.queued", id=row.id, by=row.submitted_by, position=len(self.queue))
        await self.reply(env, ACCEPTED, to_wire(Accepted(row.id, row.state, len(self.queue))))
        await self._publish_table()
        self._wake.set()

    async def _on_list(self, env: Envelope, topic: Topic) -> None:
        try:
            decode_dispatch(LIST, env.body)
        except DispatchWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        await self.reply(env, TABLE, self._table())

    async def _on_cancel(self, env: Envelope, topic: Topic) -> None:
        if await self._not_allowed(env, topic, "cancel"):
            return
        known = ", ".join(self.rows) or "none"
        try:
            request: CancelRequest = decode_dispatch(CANCEL, env.body)
        except DispatchWireError as exc:
            self.log.info("mission.rejected", field="id", error=str(exc), by=env.sender)
            await self.reply(env, REJECTED, to_wire(Rejected("id", f"{exc} (known: {known})")))
            return
        row = self.rows.get(request.id)
        if row is None:
            error = f"no mission {request.id!r} (known: {known})"
            await self.reply(env, REJECTED, to_wire(Rejected("id", error)))
            return
        if row.state in ENDED:  # nothing to cancel: say how it ended, change nothing
            said = row.summary or (f"{row.state} ({row.reason})" if row.reason else row.state)
            error = f"mission {row.id!r} already ended: {said}; nothing to cancel"
            self.log.info("mission.cancel_refused", id=row.id, state=row.state)
            await self.reply(env, REJECTED, to_wire(Rejected("state", error)))
            return
        by = self._requester(env, topic)
        if row.state in ("queued", "running"):
            row.cancelled_by = by
        if row.state == "queued":
            self.queue.remove(row.id)
            self._end(row, "cancelled", f"cancelled by {by} before it started")
            self._wake.set()  # a mission waiting behind it may fit now
        elif row.state == "running":
            row.reason = f"cancelled by {by}"
            row.state = "cancelling"  # its runner ends it once its agents have stopped
            self._terminate(self._procs.get(row.id, {}))
        self.log.info("mission.cancel", id=row.id, state=row.state, by=by)
        await self.reply(env, CANCELLED, to_wire(Cancelled(row.id, row.state)))
        await self._publish_table()

    async def _on_result(self, env: Envelope, topic: Topic) -> None:
        """Keep a running mission's ``mission.result`` (its agents' own judgement of its
        criterion: every job done, the formula satisfied, the kit right): its summary
        says what the mission achieved, and why it failed, better than a log line."""
        try:
            result = decode_result(env.body)
        except OutcomeWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if isinstance(result.mission, str) and result.mission in self._running:
            self._results[result.mission] = result

    def _table(self) -> dict[str, Any]:
        rows = [
            msgspec.structs.replace(r.row(), status=self._status_of(r)) for r in self.rows.values()
        ]
        return to_wire(Table(rows))

    def _status_of(self, row: MissionRow) -> MissionStatus:
        """The mission's status: the members' progress, the queue's word on its state."""
        status = merge(self.board.missions.get(row.id), row_status(row))
        return msgspec.structs.replace(status, mission=msgspec.UNSET)

    async def _on_status(self, env: Envelope, topic: Topic) -> None:
        self.board.feed(env.kind, env.sender, env.body, env.ts)

    async def _publish_table(self) -> None:
        ended = [m for m, r in self.rows.items() if r.state in ENDED]
        for mission in ended[: max(0, len(ended) - MAX_ENDED_ROWS)]:  # the oldest first
            del self.rows[mission]
        await self.publish(TABLE_CHANNEL, TABLE, self._table(), retain=True)
        for row in list(self.rows.values()):
            await self._publish_status(row)

    async def _publish_status(self, row: MissionRow) -> None:
        """The mission's status as the queue knows it (``mission.status``), on change:
        queued is pending, a time-out and a cancel are named as such, with the reason."""
        status = row_status(row)
        if self._statuses.get(row.id) == status:
            return
        self._statuses[row.id] = status
        body = {**to_wire(status), "mission": row.id}
        await self.publish(STATUS_CHANNEL, STATUS_KIND, body, recipient=row.id, retain=True)

    def _end(self, row: MissionRow, state: str, reason: str = "") -> None:
        row.state, row.ended_ms = state, wall_ms()
        row.reason = (row.reason or reason)[:MAX_REASON]

    # -- running missions ----------------------------------------------------------------

    def _held(self) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """Running missions -> (members, objects) they hold."""
        return {
            m: (frozenset(self.rows[m].members), self.rows[m].need.objects)  # type: ignore[union-attr]
            for m in self._running
        }

    async def _work(self) -> None:
        while True:
            self._wake.clear()
            held = self._held()
            queued = [(m, self.rows[m].need or Need(frozenset(self.members))) for m in self.queue]
            busy_members = {x for members, _ in held.values() for x in members}
            busy_objects = {x for _, objects in held.values() for x in objects}
            for mission, members in next_starts(queued, busy_members, busy_objects):
                self.queue.remove(mission)
                row = self.rows[mission]
                row.members = sorted(members)
                clash = conflicts({**held, mission: (members, row.need.objects)})  # type: ignore[union-attr]
                if clash:  # the schedule is wrong: refuse to put a body in two missions
                    self._end(row, "failed", f"not started: {'; '.join(clash)}")
                    self.log.error("mission.schedule_conflict", id=mission, clash=clash)
                    continue
                held[mission] = (members, row.need.objects)  # type: ignore[union-attr]
                self._running[mission] = self.spawn(
                    self._run(row), f"mission {mission}", optional=True
                )
            await self._wake.wait()

    async def _run(self, row: MissionRow) -> None:
        try:
            await self._run_mission(row)
        except Exception as exc:  # this mission failed, not the queue: say why in its row
            self._end(row, "failed", f"the queue could not run it: {exc!r}")
            raise
        finally:
            self._running.pop(row.id, None)
            self._procs.pop(row.id, None)
            await self._publish_table()
            self._wake.set()  # its members are idle: the next queued mission may start

    async def _run_mission(self, row: MissionRow) -> None:
        row.state, row.started_ms = "running", wall_ms()
        await self._publish_table()
        self.log.info("mission.running", id=row.id, members=row.members)
        started = time.monotonic()
        mission_json = json.dumps(row.spec)
        procs: dict[str, AgentProcess] = {}
        self._procs[row.id] = procs
        for member in row.members:
            argv = agent_command(
                "agent",
                "--config", self.config_path, "--id", member,
                "--broker", self.endpoint.urls, "--team", self.team,
                "--mission-id", row.id, "--mission-json", mission_json,
                "--members", ",".join(row.members),
                "--log-format", "plain",
            )  # fmt: skip
            procs[member] = await start_process(member, argv, self._print)
            if row.state == "cancelling":  # cancelled while its agents were starting
                self._terminate(procs)
        timeout = float(row.spec.get("timeout_s", 120.0))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        pending = {asyncio.create_task(p.wait()) for p in procs.values()}
        first_failed: str | None = None
        while pending and first_failed is None and loop.time() < deadline:
            _, pending = await asyncio.wait(
                pending, timeout=deadline - loop.time(), return_when=asyncio.FIRST_COMPLETED
            )
            failed = [m for m, p in procs.items() if p.returncode not in (None, 0)]
            if failed and row.state != "cancelling":
                first_failed = failed[0]  # the mission has failed: stop the others now
        await self._stop(procs)
        for proc in procs.values():
            await proc.drained()
        codes = {m: p.returncode for m, p in procs.items()}
        took = time.monotonic() - started
        # a result sent just before its agent exited may still be on its way here
        for _ in range(int(RESULT_GRACE_S / 0.05)):
            if row.id in self._results or row.state == "cancelling":
                break
            await asyncio.sleep(0.05)
        result = self._results.pop(row.id, None)
        said = result.summary if result is not None else ""
        if row.state == "cancelling":
            self._end(row, "cancelled")
        elif result is not None and result.ok is False:  # the mission's own verdict
            self._end(row, "failed", said)
        elif first_failed is not None:
            words = procs[first_failed].last_words
            why = f" ({words[-1]})" if words else ""
            self._end(row, "failed", f"{first_failed} exited {codes[first_failed]}{why}")
        elif pending:
            self._end(row, "failed", f"timed out after {timeout:g} s")
        elif all(code == 0 for code in codes.values()):
            self._end(row, "done")
        else:
            bad = ", ".join(f"{m} exited {c}" for m, c in codes.items() if c != 0)
            self._end(row, "failed", bad)
        row.summary = f"{row.state} in {took:.1f} s" + (f" ({row.reason})" if row.reason else "")
        if said and row.state == "done":
            row.summary += f": {said}"
        row.summary = row.summary[: 2 * MAX_REASON]
        self.log.info(
            "mission.ended", id=row.id, state=row.state, reason=row.reason, took_s=round(took, 1)
        )


def row_status(row: MissionRow) -> MissionStatus:
    """A row of the mission table as a mission status (``mission.status``)."""
    if row.state == "queued":
        return MissionStatus(row.kind, "pending", "queued: waiting for its members")
    if row.state in ("running", "cancelling"):
        return MissionStatus(row.kind, "running", row.reason if row.state == "cancelling" else "")
    if row.state == "done":
        return MissionStatus(row.kind, "succeeded", row.summary)
    if row.state == "failed" and row.reason.startswith("timed out"):
        return MissionStatus(row.kind, "timed_out", row.reason)
    return MissionStatus(row.kind, row.state, row.reason or row.summary)
