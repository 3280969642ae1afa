"""`teamtree run`: a broker, the services and every member agent as child processes.

Each child's output is prefixed with its name. The mission ends when every member
has exited 0; services and the broker are then stopped. A child that fails (or a
service that exits early) stops the run, which exits non-zero naming it; but an
optional observer (a recorder, monitor or web service whose entry does not say
``required = true``) that exits is reported in one line and the mission goes on, as it
does when a recorder reports that it cannot write; the result block then says the
recording is incomplete, where it stopped and why. Ctrl-C or SIGTERM stops every
child; children also get SIGTERM if the launcher itself dies.

The run's read-only view of the team (presence, outcome, the waits before the members
start) is ``run_watch``; the rules for its observers are ``run_observers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TextIO

from teamtree.agents.runtime.config import TeamConfig
from teamtree.agents.runtime.current_run import CurrentRun, clear_current_run, write_current_run
from teamtree.agents.runtime.kept import kept_missions
from teamtree.agents.runtime.mission import MISSION_ENV, new_mission_id
from teamtree.agents.runtime.mission_status import MissionStatus, status_message
from teamtree.agents.runtime.outcome import (
    MemberExit,
    OutcomeCollector,
    judge,
    render_result_block,
)
from teamtree.agents.runtime.priority import current_nice
from teamtree.agents.runtime.processes import (
    AgentProcess,
    agent_command,
    start_process,
    stop_processes,
)
from teamtree.agents.runtime.recording import exit_phrase
from teamtree.agents.runtime.run_observers import RunObservers
from teamtree.agents.runtime.run_output import (
    QUIET_EVENTS,
    compact_line,
    event_name,
    fit_line,
    terminal_columns,
)
from teamtree.agents.runtime.run_watch import RunWatch
from teamtree.broker import ConfigError
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.local_broker import (
    BrokerKind,
    MosquittoBroker,
    find_mosquitto,
    free_port,
    wait_for_port,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: seconds the verdict waits after the services stopped for their last messages
VERDICT_SETTLE_S = 0.2
#: seconds a child has to stop after SIGTERM before it is killed
STOP_GRACE_S = 5.0


def _toml(value: object) -> str:
    """A value as TOML text, so ``--set`` parses it back to the same type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class Child:
    """One child process of a run."""

    name: str
    role: str  # "broker", "service" or "member"
    argv: list[str]
    process: AgentProcess | None = None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    @property
    def last_words(self) -> list[str]:
        """Its last output lines that read like errors."""
        return [] if self.process is None else list(self.process.last_words)


class Launcher:
    """Runs one team config as child processes; see the module docstring."""

    def __init__(
        self,
        config: TeamConfig,
        *,
        broker: Endpoint | None = None,
        broker_kind: BrokerKind | None = None,
        timeout_s: float | None = None,
        log_format: str = "plain",
        log_level: str = "info",
        out: TextIO | None = None,
        overrides: dict[str, object] | None = None,
        mission_id: str | None = None,
        resume: bool = False,
        without: frozenset[str] = frozenset(),
    ):
        self.config = config
        #: members not started: people take their places (``teamtree human --id ID``)
        self.without = frozenset(without)
        #: every child works for this mission (see teamtree.agents.runtime.mission)
        self.mission_id = mission_id or new_mission_id()
        self.resume = resume
        #: a team without members serves missions from a queue: its services (world,
        #: drivers, recorder) outlive each mission, so they work unscoped
        self.scoped = bool(config.members)
        self.broker = broker or config.broker
        self.broker_kind = broker_kind or config.broker_kind
        self.timeout_s = timeout_s or config.mission.timeout_s
        self.log_format = log_format
        self.log_level = log_level
        self.out = out or sys.stdout
        self.overrides = dict(overrides or {})
        self.children: list[Child] = []
        self._width = max([len(a.id) for a in config.agents] + [6])
        #: writes a child's output lines after its name (``_agent_line``)
        self.print = self._agent_line
        self._mosquitto: MosquittoBroker | None = None
        self._interrupted = asyncio.Event()
        self.outcome = OutcomeCollector()
        self._timed_out = False
        self._judged: tuple[bool, str] | None = None  #: the verdict, once judged
        #: optional and required observers, and what their recordings lost
        self.observers = RunObservers(config.services, self.say, self._since_start)
        self._started = time.monotonic()
        #: the run's read-only connection to the team: presence, outcome, verdict
        self.watch = RunWatch(self)

    def say(self, line: str) -> None:
        """A line from the launcher itself."""
        self._write(f"{'run':<{self._width}} | ", line)

    def _agent_line(self, name: str, text: str) -> None:
        """A line of agent `name`'s output; its ``peer.presence`` lines are not echoed
        (the run says each presence change once itself)."""
        if event_name(text) in QUIET_EVENTS:
            return
        self._write(f"{name:<{self._width}} | ", text, agent=name)

    def _write(self, prefix: str, text: str, agent: str | None = None) -> None:
        """One output line (of `agent`'s, or the run's own), shortened and wrapped to
        the terminal's width when it goes to one."""
        columns = terminal_columns(self.out)
        if columns is not None and agent is not None:
            text = compact_line(agent, text)
        lines = fit_line(prefix, text, columns)
        self.out.write("".join(line + "\n" for line in lines))
        self.out.flush()

    async def run(self) -> int:
        """Run the mission; returns the exit code (0, 1, or 130 when interrupted)."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._interrupted.set)
        started = self._started = time.monotonic()
        verb = "resuming" if self.resume else "starting"
        if self.scoped:
            self.say(f"{verb} mission {self.mission_id} of team {self.config.team}")
        else:
            self.say(f"serving team {self.config.team}: missions come from its mission queue")
        if nice := current_nice():  # [runtime] nice, or the nice `run` was started at
            who = "every agent runs" if self.broker else "the broker and every agent run"
            self.say(f"{who} at nice {nice}")
        judged = None  # the verdict is published once the mission has ended
        try:
            endpoint = await self._start_broker()
            if self.resume:
                await self._check_resume(endpoint)
            self._announce_run(endpoint)
            await self.watch.start(endpoint)
            for spec in [*self.config.services, *self.config.members]:
                if self.config.members and spec is self.config.members[0]:
                    if self.config.services:
                        await self.watch.wait_services()  # so the recorder misses nothing
                    await self.watch.wait_for_people(self._interrupted)
                if self._interrupted.is_set():
                    break  # Ctrl-C while waiting: start nobody more
                if spec.id in self.without:
                    continue
                argv = agent_command(
                    "agent",
                    "--config", str(self.config.path),
                    "--id", spec.id,
                    "--broker", endpoint.urls,
                    "--team", self.config.team,
                    *(["--mission-id", self.mission_id] if self.scoped else []),
                    *(["--wait-services", "0"] if spec.role == "member" else []),  # waited above
                    "--log-format", self.log_format,
                    "--log-level", self.log_level,
                    *[a for k, v in self.overrides.items() for a in ("--set", f"{k}={_toml(v)}")],
                )  # fmt: skip
                await self._spawn(Child(spec.id, spec.role, argv))
            code = await self._supervise()
            # how each child stood when the mission ended (None: still running, stopped now)
            ended = {c.name: c.returncode for c in self.children}
            for child in self.children:  # one that exited as the last member did
                if child.name in self.observers.optional and child.returncode is not None:
                    self.observers.exited(child)
            judged = functools.partial(self._verdict, code, ended)
        finally:
            await self._stop_all(judged)
            await self.watch.stop()
            clear_current_run(os.getpid())
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
        elapsed = time.monotonic() - started
        if not self.scoped:  # a serving team: its missions' outcomes are in its queue
            self.say(f"team {self.config.team} stopped after {elapsed:.1f} s")
            return code
        exits = self._exits(ended)
        ok, summary = self._judged or self._judge(code, exits)
        if code == EXIT_OK and not ok:
            code = EXIT_FAILED
        if code == EXIT_OK:
            self.say(
                f"mission complete: {len(self.config.members)} member(s) done in {elapsed:.1f} s"
            )
        block = render_result_block(self.mission_id, self.outcome, exits, elapsed, ok, summary)
        for line in [*block[:-1], *self.observers.losses.block_lines(), block[-1]]:
            self.say(line)
        return code

    def _exits(self, ended: dict[str, int | None]) -> list[MemberExit]:
        """How each child (but the broker) ended, with its last error lines."""
        return [
            MemberExit(c.name, c.role, ended[c.name], c.last_words)
            for c in self.children
            if c.role != "broker"
        ]

    def _judge(self, code: int, exits: list[MemberExit]) -> tuple[bool, str]:
        """The run's verdict (success, summary) from what it saw and how children ended."""
        ok, summary = judge(
            self.outcome,
            [e for e in exits if e.name not in self.observers.optional],  # reported below instead
            timed_out=self._timed_out,
            interrupted=code == EXIT_INTERRUPTED,
        )
        return self.observers.judge(ok, summary)

    async def _verdict(self, code: int, ended: dict[str, int | None]) -> None:
        """Judge the mission once its members and services stopped (the world's last
        state is in) and publish the verdict as the mission's status, so every view
        ends with what happened and why, whatever the members said before."""
        if not self.scoped or self.watch.connection is None:
            return
        await asyncio.sleep(VERDICT_SETTLE_S)  # the world's last state, sent as it stopped
        ok, summary = self._judged = self._judge(code, self._exits(ended))
        if ok:
            state = "succeeded"
        elif self._timed_out:
            state = "timed_out"
        elif code == EXIT_INTERRUPTED:
            state = "cancelled"
        else:
            state = "failed"
        reason = summary.removeprefix("Mission FAILED: ").removeprefix("Mission succeeded: ")
        status = MissionStatus(self.config.mission.kind, state, reason.rstrip("."))
        message = status_message(self.config.team, "run", self.mission_id, status)
        with contextlib.suppress(Exception):  # a view misses the verdict; the run does not
            await asyncio.wait_for(self.watch.connection.publish(message), 3.0)

    def _since_start(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self._started

    async def _check_resume(self, endpoint: Endpoint) -> None:
        """ConfigError unless the broker still keeps state of the mission to resume."""
        kept = await kept_missions(endpoint, self.config.team)
        if self.mission_id not in kept:
            others = ", ".join(f"{m} ({n} topics)" for m, n in kept.most_common(3)) or "none"
            raise ConfigError(
                f"cannot resume mission {self.mission_id}: the broker at {endpoint.url} keeps "
                f"none of its state (a later mission's replaced it, or it never ran there; "
                f"missions kept for team {self.config.team}: {others}); "
                "run without --resume to start a new mission"
                + (
                    " (a RabbitMQ cluster sends no retained state to this check's wildcard "
                    "subscription and shows it only through running teammates' re-sync; "
                    "resuming a stopped team needs a broker that keeps it, such as mosquitto)"
                    if endpoint.fallbacks and not kept
                    else ""
                ),
                key="--resume",
            )
        self.say(f"the broker keeps {kept[self.mission_id]} topic(s) of {self.mission_id}")

    def _announce_run(self, endpoint: Endpoint) -> None:
        """Say (and write to the current-run file) where other terminals find the team."""
        path = write_current_run(
            CurrentRun(
                broker=endpoint.urls,
                team=self.config.team,
                mission=self.mission_id if self.scoped else "",
                config=str(self.config.path),
                pid=os.getpid(),
            )
        )
        what = f"mission {self.mission_id}" if self.scoped else "serving missions"
        self.say(
            f"team {self.config.team} at {endpoint.url}, {what} "
            f"(written to {path}); from another terminal: "
            f"teamtree monitor --broker {endpoint.url} --team {self.config.team}"
        )

    async def _start_broker(self) -> Endpoint:
        if self.broker is not None:
            self.say(f"using broker {self.broker.url}")
            return self.broker
        kind = self.broker_kind
        if kind is BrokerKind.AUTO:
            kind = BrokerKind.MOSQUITTO if find_mosquitto() else BrokerKind.EMBEDDED
        if kind is BrokerKind.MOSQUITTO:
            self._mosquitto = MosquittoBroker()
            endpoint = await self._mosquitto.start()
            self.say(f"started mosquitto at {endpoint.url} (pid {self._mosquitto.pid})")
            return endpoint
        port = free_port()
        argv = agent_command("broker", "--kind", "embedded", "--port", str(port))
        await self._spawn(Child("broker", "broker", argv))
        await wait_for_port("127.0.0.1", port, timeout=20.0)
        endpoint = Endpoint("127.0.0.1", port)
        self.say(f"started the embedded broker (amqtt) at {endpoint.url}")
        return endpoint

    async def _spawn(self, child: Child) -> None:
        mission = self.mission_id if self.scoped else None
        child.process = await start_process(
            child.name, child.argv, self.print, env={MISSION_ENV: mission}
        )
        self.children.append(child)
        if child.role != "broker":
            self.say(f"started {child.role} {child.name} (pid {child.process.pid})")

    async def _supervise(self) -> int:
        members = [c for c in self.children if c.role == "member"]
        waits = {asyncio.create_task(c.process.wait()): c for c in self.children if c.process}
        interrupted = asyncio.create_task(self._interrupted.wait())
        lost = asyncio.create_task(self.observers.required_lost.wait())
        # a team without members serves (e.g. a mission queue) until Ctrl-C
        deadline = asyncio.get_running_loop().time() + (self.timeout_s if members else 1e9)
        try:
            while True:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    self._timed_out = True
                    running = [c.name for c in members if c.returncode is None]
                    self.say(
                        f"mission timed out after {self.timeout_s:.0f} s; still running: "
                        f"{', '.join(running)} (raise [mission] timeout_s or --timeout)"
                    )
                    return EXIT_FAILED
                pending = {t for t in waits if not t.done()}
                done, _ = await asyncio.wait(
                    [*pending, interrupted, lost],
                    timeout=remaining,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if interrupted in done:
                    self.say("interrupted; stopping every child")
                    return EXIT_INTERRUPTED
                if lost in done:  # said when it was seen
                    return EXIT_FAILED
                for task in done:
                    child = waits[task]
                    code = child.returncode
                    if child.role == "member" and code == 0:
                        continue
                    if child.name in self.observers.optional:
                        self.observers.exited(child)
                        continue
                    if child.role == "member":
                        self.say(f"agent {child.name!r} exited with code {code}; stopping the run")
                    else:
                        required = " (required = true)" if child.name in self.observers.ids else ""
                        self.say(
                            f"{child.role} {child.name!r}{required} exited early "
                            f"({exit_phrase(code)}); stopping"
                        )
                    return EXIT_FAILED
                if members and all(c.returncode == 0 for c in members):
                    return EXIT_OK
        finally:
            interrupted.cancel()
            lost.cancel()
            for task in waits:
                task.cancel()

    def _killing(self, process: AgentProcess) -> None:
        self.say(f"{process.name} did not stop in {STOP_GRACE_S:g} s; killing it")

    async def _stop_all(self, ended: Callable[[], Awaitable[None]] | None = None) -> None:
        """SIGTERM every live child (members first, the broker last), SIGKILL after
        `STOP_GRACE_S`; `ended` runs once the members and services stopped, while the
        recorders and the run's watch still listen."""
        # recorders go after the other services, so they still see those services' last words
        recorders = {s.id for s in self.config.services if s.kind == "recorder"}
        order = {"member": 0, "service": 1, "recorder": 2, "broker": 3}

        def role_of(child: Child) -> str:
            return "recorder" if child.name in recorders else child.role

        for role in sorted(order, key=order.get):
            if role == "recorder" and ended is not None:
                await ended()
            if role == "broker":  # our own watch leaves first, so it sees no lost broker
                await self.watch.stop()
            group = [c.process for c in self.children if role_of(c) == role and c.process]
            await stop_processes(group, STOP_GRACE_S, self._killing)
        for child in self.children:
            if child.process is not None:
                await child.process.drained()
        await self.watch.stop()
        if self._mosquitto is not None:
            await self._mosquitto.close()
