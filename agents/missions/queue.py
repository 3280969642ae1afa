"""The mission queue: a service that takes missions submitted to a running team.

It answers the dispatch protocol (``teamtree.agents.missions.protocol``) and runs
queued missions one at a time: for each it starts the config's ``on_call`` agents
(the robots) as ``teamtree agent`` processes with the mission's id and tree, so every
mission is scoped at the broker like a ``teamtree run``. The team's services (world,
drivers, recorder) keep running between missions. A mission is done when every
robot exits 0 (a task-tree robot exits 0 only when the root is done), failed when
one does not, and cancelled by ``mission.cancel``: the robots get SIGTERM, go
OFFLINE, and their drivers cancel the behaviour in progress.

Choice: one mission runs at a time. The task-tree robots work one tree each, so two
missions at once would need two disjoint sets of robots; a queue per robot set does
that today (``members`` says which robots this queue dispatches to).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import deque
from typing import Any

from teamtree.agents.missions.protocol import (
    ACCEPTED,
    CANCEL,
    CANCELLED,
    CHANNEL,
    LIST,
    REJECTED,
    SUBMIT,
    TABLE,
    TABLE_CHANNEL,
    MissionRow,
    SubmissionError,
    check_submission,
)
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.mission import new_mission_id
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic


class MissionQueue(Agent):
    """See the module docstring. Parameters: ``members`` (ids of ``on_call`` agents
    to start per mission; default every ``on_call`` agent of the config)."""

    kind = "mission_queue"

    def __init__(
        self,
        *args: Any,
        config_path: str,
        members: list[str],
        objects: list[str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.config_path = config_path
        self.members = list(members)
        self.objects = None if objects is None else set(objects)
        self.rows: dict[str, MissionRow] = {}
        self.queue: deque[str] = deque()
        self._wake = asyncio.Event()
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._current: str | None = None

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        reader = spec_reader(spec, config)
        on_call = [s.id for s in config.agents if s.role == "on_call"]
        members = reader.take("members", list, on_call, "a list of on_call agent ids")
        reader.no_extras()
        for member in members:
            if member not in on_call:
                raise reader.error(
                    "members", f"names {member!r}, not an on_call agent (on_call: {on_call})"
                )
        if not members:
            raise reader.error("members", 'is empty; mark the robots role = "on_call"')
        worlds = [s for s in config.agents if s.kind == "world"]
        objects = None
        if worlds and isinstance(worlds[0].params.get("objects"), dict):
            objects = sorted(worlds[0].params["objects"])
        return {"config_path": str(config.path), "members": members, "objects": objects}

    def factsheet(self) -> dict[str, Any]:
        return {**super().factsheet(), "serves": ["tasktree"], "members": self.members}

    async def setup(self) -> None:
        self.on_team(CHANNEL, self._on_submit, kind=SUBMIT)
        self.on_team(CHANNEL, self._on_list, kind=LIST)
        self.on_team(CHANNEL, self._on_cancel, kind=CANCEL)

    async def on_connected(self) -> None:
        await self._publish_table()

    async def main(self) -> None:
        worker = self.spawn(self._work(), "missions")
        await self.wait_stop_requested()
        worker.cancel()

    async def on_stop(self) -> None:
        for proc in self._procs.values():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)

    # -- protocol ----------------------------------------------------------------------

    async def _on_submit(self, env: Envelope, topic: Topic) -> None:
        try:
            spec = check_submission(env.body, self.objects)
        except SubmissionError as exc:
            self.log.info("mission.rejected", field=exc.field, error=str(exc), by=env.sender)
            await self.reply(env, REJECTED, {"field": exc.field, "error": str(exc)})
            return
        row = MissionRow(
            new_mission_id(),
            spec.kind,
            submitted_ms=wall_ms(),
            spec={"kind": spec.kind, "timeout_s": spec.timeout_s, **spec.params},
        )
        self.rows[row.id] = row
        self.queue.append(row.id)
        self.log.info("mission.queued", id=row.id, by=env.sender, position=len(self.queue))
        await self.reply(
            env, ACCEPTED, {"id": row.id, "state": row.state, "position": len(self.queue)}
        )
        await self._publish_table()
        self._wake.set()

    async def _on_list(self, env: Envelope, topic: Topic) -> None:
        await self.reply(env, TABLE, self._table())

    async def _on_cancel(self, env: Envelope, topic: Topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        mission = body.get("id")
        row = self.rows.get(mission) if isinstance(mission, str) else None
        if row is None:
            known = ", ".join(self.rows) or "none"
            await self.reply(
                env, REJECTED, {"field": "id", "error": f"no mission {mission!r} (known: {known})"}
            )
            return
        if row.state == "queued":
            self.queue.remove(row.id)
            self._end(row, "cancelled", f"cancelled by {env.sender} before it started")
        elif row.state == "running":
            row.reason = f"cancelled by {env.sender}"
            row.state = "cancelling"  # the worker ends it once the robots have stopped
            for proc in self._procs.values():
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        self.log.info("mission.cancel", id=row.id, state=row.state, by=env.sender)
        await self.reply(env, CANCELLED, {"id": row.id, "state": row.state})
        await self._publish_table()

    def _table(self) -> dict[str, Any]:
        return {"missions": [r.to_wire() for r in self.rows.values()]}

    async def _publish_table(self) -> None:
        await self.publish(TABLE_CHANNEL, TABLE, self._table(), retain=True)

    def _end(self, row: MissionRow, state: str, reason: str = "") -> None:
        row.state, row.ended_ms = state, wall_ms()
        row.reason = row.reason or reason

    # -- running missions ----------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            while not self.queue:
                self._wake.clear()
                await self._wake.wait()
            row = self.rows[self.queue.popleft()]
            await self._run(row)
            await self._publish_table()

    async def _run(self, row: MissionRow) -> None:
        row.state, row.started_ms, self._current = "running", wall_ms(), row.id
        await self._publish_table()
        self.log.info("mission.running", id=row.id, members=self.members)
        started = time.monotonic()
        mission_json = json.dumps(row.spec)
        for member in self.members:
            self._procs[member] = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "teamtree.agents", "agent",
                "--config", self.config_path, "--id", member,
                "--broker", self.endpoint.urls, "--team", self.team,
                "--mission-id", row.id, "--mission-json", mission_json,
                "--log-format", "plain",
                stdin=asyncio.subprocess.DEVNULL,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )  # fmt: skip
        timeout = float(row.spec.get("timeout_s", 120.0))
        waits = {m: asyncio.create_task(p.wait()) for m, p in self._procs.items()}
        _, pending = await asyncio.wait(waits.values(), timeout=timeout)
        for proc in self._procs.values():
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        await asyncio.gather(*waits.values(), return_exceptions=True)
        codes = {m: p.returncode for m, p in self._procs.items()}
        self._procs.clear()
        self._current = None
        took = time.monotonic() - started
        if row.state == "cancelling":
            self._end(row, "cancelled")
        elif pending:
            self._end(row, "failed", f"timed out after {timeout:g} s")
        elif all(code == 0 for code in codes.values()):
            self._end(row, "done")
        else:
            bad = ", ".join(f"{m} exited {c}" for m, c in codes.items() if c != 0)
            self._end(row, "failed", bad)
        row.summary = f"{row.state} in {took:.1f} s" + (f" ({row.reason})" if row.reason else "")
        self.log.info(
            "mission.ended", id=row.id, state=row.state, reason=row.reason, took_s=round(took, 1)
        )
