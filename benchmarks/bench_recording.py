"""Recording and the live view: what each costs per message.

1. Recorder throughput, MCAP against JSON lines, in the same run: the messages of a
   recorded tea party, as envelopes the recorder has received, made into records and
   written (``message_record`` then ``write_record``) to a JSON-lines file and to an
   MCAP file, alternating over ``--rounds``; prints messages per second of each and
   the ratio MCAP / JSON lines.
2. The live Foxglove server's added CPU per message with 0, 1 and 5 viewers: the same
   messages fed to ``LiveServer.on_message`` (channels, JSON, the scene, tree and log
   views; no broker), with that many viewers (``tests/foxglove/watch_live.mjs``, Node
   processes whose CPU is not counted) subscribed to every channel; the server
   process's CPU time (all its threads, the SDK's senders too) over the messages,
   after the viewers have taken them all in. The monitor's own bookkeeping (what the
   tree and team views read) is counted too: the live server does it for them.

    python benchmarks/bench_recording.py [--record RUN.jsonl] [--messages 20000] [--rounds 3]

Without ``--record`` it records a tea party first (``teamtree run
configs/tea_party_s1.toml`` in a temporary directory, about 15 s).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from teamtree.agents.observers.foxglove_server import LiveServer
from teamtree.agents.observers.mcap_record import McapRecordFile
from teamtree.agents.observers.monitor import MonitorState
from teamtree.agents.observers.record_channels import warm_schemas
from teamtree.agents.observers.record_file import RecordFile
from teamtree.agents.observers.timeline import load_records
from teamtree.agents.observers.wire_json import message_record
from teamtree.broker import Envelope, HlcStamp
from teamtree.broker.messages import Incoming
from teamtree.broker.topics import parse

REPO = Path(__file__).resolve().parent.parent
WATCH = REPO / "tests" / "foxglove" / "watch_live.mjs"


def _tea_party(out: Path) -> Path:
    """Record a tea party into `out`; returns its JSON-lines file."""
    subprocess.run(
        [sys.executable, "-m", "teamtree.agents", "run", str(REPO / "configs" / "tea_party_s1.toml")],
        cwd=out, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return out / "runs" / "tea_party_s1.jsonl"


def _messages(record: Path, count: int) -> list[tuple[Envelope, object, Incoming]]:
    """`count` messages of `record`, round after round, as the recorder receives them."""
    base = load_records(record)
    out = []
    while len(out) < count:
        for rec in base:
            hlc = HlcStamp(rec["hlc"][0], rec["hlc"][1] + len(out), rec["sender"])
            env = Envelope(rec["kind"], rec["sender"], len(out), rec["ts"], hlc, rec["body"])
            out.append((env, parse(rec["topic"]), Incoming(rec["topic"], b"", False, 1)))
            if len(out) == count:
                break
    return out


def _write(messages: list, path: Path, mcap: bool) -> float:
    """Seconds to make and write the records of `messages`, the file closed."""
    start = time.perf_counter()
    out = McapRecordFile(path) if mcap else RecordFile(path)
    for env, topic, _ in messages:
        out.write_record(message_record(env, topic, recorded_ms=env.ts))
    out.close()
    return time.perf_counter() - start


def recorder_throughput(messages: list, rounds: int, workdir: Path) -> None:
    warm_schemas()
    rates: dict[str, list[float]] = {"jsonl": [], "mcap": []}
    sizes: dict[str, int] = {}
    for _ in range(rounds):
        for name in ("jsonl", "mcap"):
            path = workdir / f"bench.{name}"
            rates[name].append(len(messages) / _write(messages, path, name == "mcap"))
            sizes[name] = path.stat().st_size
    jsonl, mcap = statistics.median(rates["jsonl"]), statistics.median(rates["mcap"])
    print(f"recorder, {len(messages)} messages, median of {rounds} rounds:")
    print(f"  JSON lines  {jsonl:9.0f} messages/s  {sizes['jsonl'] / 1e6:6.2f} MB")
    print(f"  MCAP        {mcap:9.0f} messages/s  {sizes['mcap'] / 1e6:6.2f} MB")
    print(f"  MCAP / JSON lines: {mcap / jsonl:.2f} of the throughput, "
          f"{sizes['mcap'] / sizes['jsonl']:.2f} of the size")  # fmt: skip


def _received(path: Path) -> int:
    try:
        return path.read_text().count('"event":"message"')
    except OSError:
        return 0


async def _live_cpu(messages: list, viewers: int, workdir: Path) -> float:
    """CPU seconds per message of a LiveServer serving `messages` to `viewers`."""
    server = LiveServer({}, port=0)
    server.state = MonitorState("tea-party-s1")
    port = server.start()

    def feed(batch: list) -> None:  # as the observer does: its state, then the server
        for env, topic, message in batch:
            server.state.feed(env, topic)
            server.on_message(env, topic, message)

    procs, outs = [], []
    try:
        feed(messages[:400])  # every channel made before the viewers join
        for index in range(viewers):
            out = workdir / f"viewer{index}.out"
            outs.append(out)
            with out.open("wb") as stdout:
                procs.append(subprocess.Popen(
                    ["node", str(WATCH), f"ws://127.0.0.1:{port}", "/*"], stdout=stdout,
                ))  # fmt: skip
        while viewers and not all(_received(o) for o in outs):  # subscribed: messages arrive
            feed(messages[:50])
            await asyncio.sleep(0.2)
        before = [_received(o) for o in outs]
        cpu = time.process_time()
        feed(messages)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(  # every viewer took them all in
            _received(o) - b < len(messages) for o, b in zip(outs, before, strict=True)
        ):
            await asyncio.sleep(0.1)
        return (time.process_time() - cpu) / len(messages)
    finally:
        server.stop()  # first: the viewers' connections close, not break
        for proc in procs:
            proc.terminate()
            proc.wait(10)


def live_cpu(messages: list, rounds: int, workdir: Path) -> None:
    warm_schemas()
    if shutil.which("node") is None or not (WATCH.parent / "node_modules").is_dir():
        print("live server: skipped (needs Node and `npm ci` in tests/foxglove)")
        return
    print(f"live server, {len(messages)} messages, CPU per message, median of {rounds} rounds:")
    for viewers in (0, 1, 5):
        cpu = [asyncio.run(_live_cpu(messages, viewers, workdir)) for _ in range(rounds)]
        print(f"  {viewers} viewer(s): {statistics.median(cpu) * 1e6:7.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, help="a JSON-lines or MCAP recording to replay")
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        record = args.record or _tea_party(workdir)
        messages = _messages(record, args.messages)
        kinds = len({env.kind for env, _, _ in messages})
        print(f"replaying {record.name}: {kinds} kinds, {len(messages)} messages")
        recorder_throughput(messages, args.rounds, workdir)
        live_cpu(messages[: max(1, args.messages // 4)], args.rounds, workdir)


if __name__ == "__main__":
    main()
