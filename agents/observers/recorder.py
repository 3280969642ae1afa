"""The recorder service: writes every message of the team, from the broker alone, to a
JSON-lines or MCAP file, and logs a summary of who did which behaviour when it stops.

A path ending in ``.mcap`` is written as MCAP (``mcap_record``: a channel per kind and
topic with its JSON Schema, the summary as log lines), which Foxglove and Lichtblick
open; any other as JSON lines, one per message: ``{"topic", "kind", "sender", "ts",
"hlc", "body", ...}`` (``wire_json``; bytes in a body as hex). ``teamtree timeline
FILE`` draws the timing diagrams from either.

An observer, not a participant: when its file cannot be written (a full disk, an I/O
error) it logs one error line naming the file and the OS error, keeps the lines it
wrote, writes no more, stays up, and reports the failure in the ``recording`` field of
its factsheet (``teamtree.agents.runtime.recording``), which ``teamtree run`` quotes in
its result.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Any

import msgspec

from teamtree.agents.observers.human_work import human_rows
from teamtree.agents.observers.mcap_record import McapRecordFile
from teamtree.agents.observers.mission_labels import mission_labels
from teamtree.agents.observers.record_channels import warm_schemas
from teamtree.agents.observers.record_file import RecordFile, os_error_phrase
from teamtree.agents.observers.wire_json import message_record
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.mission_status import MissionBoard
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.recording import RECORDING_FIELD, RecordingState
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic


def behaviour_summary(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Executed behaviours in start order: agent, node, start/end (ms), potential, grasp.
    The grasp is the working transition's, or where that has none (a robot under the
    distance metric alone scores it after the start) the done or inactive one's."""
    started: dict[tuple[str, str], dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for rec in records:
        if rec.get("kind") != "node.transition" or not isinstance(rec.get("body"), dict):
            continue
        body = rec["body"]
        key = (str(body.get("agent")), str(body.get("node")))
        if body.get("status") == "working":
            row = {
                "agent": key[0],
                "node": key[1],
                "start_ms": rec["ts"],
                "end_ms": None,
                "potential": body.get("potential"),
                "grasp": body.get("grasp"),
            }
            started[key] = row
            rows.append(row)
        elif body.get("status") in ("done", "inactive") and key in started:
            row = started.pop(key)
            row["end_ms"] = rec["ts"] if body["status"] == "done" else None
            if row["grasp"] is None:
                row["grasp"] = body.get("grasp")
    return rows


SUMMARY_KINDS = frozenset(
    {"node.transition", "factsheet", "mission.tree", "world.state", "tom.belief"}
)
"""The message kinds the stop summary reads (``behaviour_summary``, ``human_rows``):
the only ones kept in memory, so a flood of anything else (claims) costs none."""
SUMMARY_MAX = 200_000
"""Messages kept for the summary at most (a summary of the first ones beats memory
that a flood of transitions grows without limit)."""


def _summarised(env: Envelope) -> bool:
    """Whether the summary reads `env` (a world state only when people's hands are in it)."""
    if env.kind == "world.state":
        return isinstance(env.body, dict) and bool(env.body.get("hands"))
    return env.kind in SUMMARY_KINDS


class RecorderParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The recorder's ``[[agents]]`` keys."""

    path: Annotated[
        str | None,
        msgspec.Meta(description="the record's file: MCAP when it ends in .mcap, else JSON lines"),
    ] = None


class RecorderAgent(Agent):
    """Record the team's traffic to ``path`` (default ``runs/<team>.jsonl``).

    Working for a mission, it writes ``<stem>.<mission id>.jsonl`` instead (appending
    when the mission is resumed) and points ``path`` at it with a symbolic link, so a
    new mission never overwrites an old one's recording and ``path`` is the latest."""

    kind = "recorder"

    def __init__(self, *args: Any, path: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.board = MissionBoard()  #: each mission's status, for the summary
        configured = Path(path or f"runs/{self.team}.jsonl")
        #: the symbolic link to the latest mission's recording (None: not scoped)
        self.latest: Path | None = None
        self.path = configured
        if self.mission_id is not None:
            self.latest = configured
            self.path = configured.with_name(
                f"{configured.stem}.{self.mission_id}{configured.suffix or '.jsonl'}"
            )
        self._file: RecordFile | McapRecordFile | None = None
        #: the recording as the factsheet reports it (failed: the file is written no more)
        self.recording = RecordingState("writing", str(self.path))
        #: messages seen after the recording failed (not in the file)
        self.missed = 0
        self.records: list[dict[str, Any]] = []
        """The messages the summary reads (``SUMMARY_KINDS``), at most ``SUMMARY_MAX``."""
        self.recorded = 0
        self._labels: dict[str, str] = {}

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``path`` (a file for the JSON-lines record)."""
        return params_dict(decode_params(spec, config, RecorderParams))

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "path": str(self.path),
            RECORDING_FIELD: msgspec.to_builtins(self.recording),
        }

    async def setup(self) -> None:
        if self.path.suffix == ".mcap":  # before it listens: no first message waits
            await asyncio.to_thread(warm_schemas)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self._open()
            if self._file.error is not None:
                raise self._file.error
        except OSError as exc:  # stays up: its factsheet reports it when online
            self._fail(0, exc)
        else:
            self.log.info("recorder.writing", path=str(self.path))
        if self.latest is not None and self._file is not None:
            self._link_latest(self.latest)
        self.on_any(self._record)

    def _open(self) -> RecordFile | McapRecordFile:
        """The record file: MCAP by its suffix, else JSON lines (appended to when the
        mission is resumed; an MCAP file cannot be, so a resumed mission's goes on in a
        new file beside the first)."""
        if self.path.suffix != ".mcap":
            return RecordFile(self.path, append=self.latest is not None)
        if self.latest is not None and self.path.exists():
            self.path = self.path.with_name(f"{self.path.stem}.resumed-{wall_ms()}.mcap")
            self.recording = RecordingState("writing", str(self.path))
        metadata = {"team": self.team, "mission": self.mission_id or "", "recorder": self.id}
        return McapRecordFile(self.path, metadata=metadata)

    def _say(self, event: str, **fields: Any) -> None:
        """Log a summary line, and write it into an MCAP record's log."""
        self.log.info(event, **fields)
        if isinstance(self._file, McapRecordFile) and self._file.writing:
            self._file.write_log("info", event, fields)

    def _link_latest(self, link: Path) -> None:
        """Point `link` at this mission's file; an old plain file there is kept aside."""
        try:
            if link.is_symlink():
                link.unlink()
            elif link.exists():
                link.rename(link.with_name(f"{link.stem}.unscoped{link.suffix}"))
            link.symlink_to(self.path.name)
        except OSError as exc:
            self.log.warning("recorder.no_link", link=str(link), error=str(exc))

    async def _record(self, env: Envelope, topic: Topic) -> None:
        record = message_record(env, topic, recorded_ms=time.time_ns() // 1_000_000)
        self.board.feed(env.kind, env.sender, env.body, env.ts)
        if env.kind == "mission.tree":
            found = mission_labels(env.body)
            if found is not None:
                self._labels = found[0]
        self.recorded += 1
        if _summarised(env) and len(self.records) < SUMMARY_MAX:
            self.records.append(record)  # what the summary reads; the file has everything
        if self._file is None or not self._file.writing:
            self.missed += 1
        elif not self._file.write_record(record):
            self.missed += 1
            assert self._file.error is not None
            self._fail(self._file.written, self._file.error)
            try:
                await self.publish("factsheet", "factsheet", self.factsheet(), retain=True)
            except Exception as exc:  # the error line still says it
                self.log.warning("recorder.report_failed", error=repr(exc))

    def _fail(self, written: int, exc: OSError) -> None:
        """The file cannot be written: say so once, in one line; record no more."""
        self.recording = RecordingState(
            "failed", str(self.path), written, os_error_phrase(exc), wall_ms()
        )
        self.log.error(
            "recorder.write_failed",
            path=str(self.path),
            error=self.recording.error,
            written=written,
            fix="free space on (or repair) that file system, or set the recorder's path "
            "elsewhere; the lines written so far are kept, the rest of the mission is "
            "not recorded",
        )

    async def on_stop(self) -> None:
        for mission, view in self.board.views().items():  # how each mission went
            self._say(
                "summary.mission", mission=mission, kind=view["kind"], status=view["headline"]
            )
        rows = behaviour_summary(self.records) + human_rows(self.records)
        rows.sort(key=lambda r: r["start_ms"])
        t0 = min((r["start_ms"] for r in rows), default=0)
        for index, row in enumerate(rows, 1):
            self._say(
                "summary.behaviour",
                n=index,
                agent=row["agent"],
                node=self._labels.get(row["node"], row["node"]),
                start_s=round((row["start_ms"] - t0) / 1000, 2),
                end_s=None if row["end_ms"] is None else round((row["end_ms"] - t0) / 1000, 2),
                potential=None if row.get("potential") is None else round(row["potential"], 4),
                grasp=None if row.get("grasp") is None else round(row["grasp"], 1),
                person=row.get("human", False),
            )
        if self.recording.state == "failed":
            self.log.warning(  # the error was logged when it happened
                "recorder.incomplete",
                path=str(self.path),
                written=self.recording.written,
                missed=self.missed,
                error=self.recording.error,
            )
        else:
            self._say("recorder.saved", path=str(self.path), messages=self.recorded)
        if self._file is not None:
            self._file.close()
            self._file = None
