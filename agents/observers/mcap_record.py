"""Recordings as MCAP files: what Foxglove, Lichtblick and the mcap tools open.

Each message of the team is one MCAP message on its channel (``record_channels``: one
per kind and team topic, a JSON Schema each), JSON-encoded as ``wire_json`` writes it
(topic, kind, sender, ts, hlc, body, ...); its log time is when the recorder received
it, its publish time the sender's ``ts``. The recorder's own log lines go on ``/log``
as ``foxglove.Log``; the team and mission are the file's ``teamtree`` metadata.

``McapRecordFile`` has ``RecordFile``'s contract for the recorders: on the first write
error it keeps what it wrote, writes no more, and says why once (``error``). Written
in chunks, so a recorder killed without its stop leaves a file whose last chunk is
lost; ``read_mcap_records`` reads such a file up to where it ends.
"""

from __future__ import annotations

import contextlib
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mcap.exceptions import McapError
from mcap.records import Channel, Message
from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType, Writer

from teamtree.agents.observers.record_channels import (
    LOG_CHANNEL,
    LOG_SCHEMA,
    LOG_SCHEMA_NAME,
    channel_topic,
    record_schema_bytes,
    schema_name,
)
from teamtree.agents.observers.record_file import os_error_phrase
from teamtree.agents.observers.wire_json import record_json
from teamtree.broker import ConfigError

__all__ = [
    "LOG_LEVELS",
    "MAGIC",
    "McapRecordFile",
    "is_mcap",
    "read_mcap_log",
    "read_mcap_records",
]

MAGIC = b"\x89MCAP0\r\n"
"""The first bytes of every MCAP file."""
CHUNK_SIZE = 256 * 1024
"""Bytes of messages per compressed chunk: what a killed recorder can lose at most."""
LOG_LEVELS = {"debug": 1, "info": 2, "warning": 3, "error": 4, "critical": 5}
"""structlog level -> ``foxglove.Log`` level."""


def is_mcap(path: str | Path) -> bool:
    """Whether `path` is an MCAP file (by its first bytes, not its name)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


class McapRecordFile:
    """Records written to the MCAP file `path` (emptied first)."""

    def __init__(self, path: Path, *, metadata: dict[str, str] | None = None):
        self.path = path
        self._stream: IO[bytes] | None = open(path, "wb")  # noqa: SIM115 (closed by close)
        self._writer = Writer(self._stream, chunk_size=CHUNK_SIZE, compression=CompressionType.ZSTD)
        #: messages written by this file (what the recorders count)
        self.written = 0
        #: the error that stopped the writing (None: still writing)
        self.error: OSError | None = None
        self._schemas: dict[str, int] = {}
        self._channels: dict[tuple[str, str], int] = {}
        self._log_channel: int | None = None
        self._sequence = 0
        self._guard(lambda: self._start(metadata or {}))

    def _start(self, metadata: dict[str, str]) -> None:
        self._writer.start(profile="", library="teamtree")
        if metadata:
            self._writer.add_metadata("teamtree", {k: str(v) for k, v in metadata.items()})

    @property
    def failure(self) -> str:
        """What stopped the writing, as one phrase ('' while it goes on)."""
        return "" if self.error is None else os_error_phrase(self.error)

    @property
    def writing(self) -> bool:
        """True until the file is closed or a write failed."""
        return self._stream is not None

    def _guard(self, step: Any) -> bool:
        if self._stream is None:
            return False
        try:
            step()
        except OSError as exc:
            self.error = exc
            self._abandon()
            return False
        return True

    def _channel(self, topic: str, kind: str) -> int:
        key = (topic, kind)
        found = self._channels.get(key)
        if found is not None:
            return found
        schema = self._schemas.get(kind)
        if schema is None:
            schema = self._writer.register_schema(
                name=schema_name(kind), encoding="jsonschema", data=record_schema_bytes(kind)
            )
            self._schemas[kind] = schema
        channel = self._writer.register_channel(
            topic=channel_topic(topic, kind),
            message_encoding="json",
            schema_id=schema,
            metadata={"mqtt_topic": topic, "kind": kind},
        )
        self._channels[key] = channel
        return channel

    def write_record(self, record: dict[str, Any], *, log_time_ns: int | None = None) -> bool:
        """Add one message record (``wire_json.message_record``); False when it was not
        written (closed, or this write failed: then ``error`` is set)."""
        now = time.time_ns() if log_time_ns is None else log_time_ns
        data = record_json(record).encode()

        def add() -> None:
            channel = self._channel(record["topic"], record["kind"])
            self._sequence += 1
            self._writer.add_message(
                channel, log_time=now, data=data, publish_time=int(record["ts"]) * 1_000_000,
                sequence=self._sequence,
            )  # fmt: skip

        if not self._guard(add):
            return False
        self.written += 1
        return True

    def write_log(self, level: str, name: str, fields: dict[str, Any]) -> bool:
        """Add one log line on ``/log``: event `name`, its `fields` as the message."""
        now = time.time_ns()
        line = {
            "timestamp": {"sec": now // 1_000_000_000, "nsec": now % 1_000_000_000},
            "level": LOG_LEVELS.get(level, 2),
            "message": " ".join([name, *(f"{k}={v}" for k, v in fields.items() if v is not None)]),
            "name": str(fields.get("agent", "recorder")),
            "file": "",
            "line": 0,
        }

        def add() -> None:
            if self._log_channel is None:
                schema = self._writer.register_schema(
                    name=LOG_SCHEMA_NAME, encoding="jsonschema",
                    data=json.dumps(LOG_SCHEMA).encode(),
                )  # fmt: skip
                self._log_channel = self._writer.register_channel(
                    topic=LOG_CHANNEL, message_encoding="json", schema_id=schema
                )
            self._writer.add_message(
                self._log_channel, log_time=now, data=record_json(line).encode(),
                publish_time=now,
            )  # fmt: skip

        return self._guard(add)

    def _abandon(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()

    def close(self) -> None:
        """Write the summary and close (idempotent); a failing close only closes."""
        if self._stream is None:
            return
        if self._guard(self._writer.finish):
            self._guard(self._stream.flush)
        self._abandon()


def _mcap_messages(path: Path) -> Iterator[tuple[Channel, Message]]:
    """(channel, message) of every message of `path`, in file order; a file cut short
    (a killed recorder) ends where its last whole chunk ends."""
    try:
        stream = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise ConfigError(f"cannot read the record: {exc.strerror}", path=str(path)) from None
    with stream:
        if stream.read(len(MAGIC)) != MAGIC:
            raise ConfigError(
                "not an MCAP file (it does not start with MCAP's magic bytes)", path=str(path)
            )
        stream.seek(0)
        channels: dict[int, Channel] = {}
        with contextlib.suppress(McapError, EOFError, ValueError, struct.error):
            for record in StreamReader(stream).records:  # in file order, up to a cut
                if isinstance(record, Channel):
                    channels[record.id] = record
                elif isinstance(record, Message) and record.channel_id in channels:
                    yield channels[record.channel_id], record


def read_mcap_records(path: str | Path) -> list[dict[str, Any]]:
    """The message records of an MCAP recording, in the order they were written.
    Raises ConfigError when it is not one (naming the file and what is wrong)."""
    path = Path(path)
    records = []
    for channel, message in _mcap_messages(path):
        if channel.topic == LOG_CHANNEL:
            continue
        try:
            record = json.loads(message.data)
        except ValueError:
            raise ConfigError(
                f"message {message.sequence} on {channel.topic} is not JSON; is this a "
                "teamtree recording?",
                path=str(path),
            ) from None
        if isinstance(record, dict) and "kind" in record and "ts" in record:
            records.append(record)
    return records


def read_mcap_log(path: str | Path) -> list[dict[str, Any]]:
    """The recorder's log lines of an MCAP recording (``foxglove.Log`` maps)."""
    return [
        json.loads(message.data)
        for channel, message in _mcap_messages(Path(path))
        if channel.topic == LOG_CHANNEL
    ]
