"""``teamtree convert``: a recording from one format to the other.

- ``teamtree convert RUN.jsonl -o RUN.mcap``: a JSON-lines recording as MCAP, to open
  it in Foxglove or Lichtblick;
- ``teamtree convert RUN.mcap -o RUN.jsonl``: back to JSON lines.

The output's format is its suffix's; each message keeps its record (topic, kind,
sender, ts, hlc, body, ...), and its MCAP log time is when it was recorded
(``recorded_ms``; the send time ``ts`` where a record lacks it). Exit codes: 0 done, 2
an input that is no recording or an output of another suffix.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from teamtree.agents.cli.args import log_flags
from teamtree.agents.observers.mcap_record import McapRecordFile
from teamtree.agents.observers.record_file import RecordFile
from teamtree.agents.observers.timeline import load_records
from teamtree.broker import ConfigError

__all__ = ["convert_recording", "register"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``convert`` to `subparsers`; returns ``{"convert": handler}``."""
    convert = subparsers.add_parser(
        "convert",
        help="convert a recording between JSON lines and MCAP",
        description="Write the recording RUN (.jsonl or .mcap) to -o OUT in OUT's format: "
        ".mcap (Foxglove, Lichtblick, the mcap tools) or .jsonl.",
    )
    convert.add_argument("run", help="a recording: RUN.jsonl or RUN.mcap")
    convert.add_argument("-o", "--output", required=True, help="the file to write: .mcap or .jsonl")
    log_flags(convert)
    return {"convert": run_convert}


def convert_recording(source: Path, target: Path) -> int:
    """Write the recording `source` to `target` in `target`'s format; returns how many
    messages were written. Raises ConfigError naming a bad input or output."""
    if target.suffix not in (".mcap", ".jsonl"):
        raise ConfigError(
            f"cannot tell the format of {target.name}: name it .mcap or .jsonl", key="--output"
        )
    if target.resolve() == source.resolve():
        raise ConfigError("the output is the input: name another file", key="--output")
    records = load_records(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix == ".mcap":
        out: RecordFile | McapRecordFile = McapRecordFile(
            target, metadata={"converted_from": source.name}
        )
    else:
        out = RecordFile(target)
    try:
        for record in records:
            if isinstance(out, McapRecordFile):
                logged = record.get("recorded_ms", record["ts"])
                out.write_record(record, log_time_ns=int(logged) * 1_000_000)
            else:
                out.write_record(record)
            if out.error is not None:
                break
    finally:
        out.close()
    if out.error is not None:
        raise ConfigError(f"cannot write it: {out.failure}", path=str(target))
    return out.written


async def run_convert(args: argparse.Namespace) -> int:
    """The ``convert`` handler."""
    written = convert_recording(Path(args.run), Path(args.output))
    print(f"wrote {written} messages to {args.output}", flush=True)
    return 0
