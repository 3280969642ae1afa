"""How long a broker takes to publish a silent agent's Last Will, and whether a clean
stop is ever followed by a Will.

For each broker (mosquitto, embedded amqtt) and keepalive: start an echo agent
process, SIGSTOP it (a hung process: its socket stays open, so only the keepalive can
notice), and time until an observer sees its CONNECTION_BROKEN; then start it again,
stop it cleanly (SIGTERM: OFFLINE, then DISCONNECT) and count whether a Will follows
within 3 keepalives (raw, as the broker delivers it) and whether the observer's team
view still says OFFLINE (teamtree ignores a Will of the same session after OFFLINE).

    python benchmarks/bench_detection.py [--runs 5] [--keepalive 1 2]

Prints figures only; nothing is asserted. Measured figures: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from teamtree.agents import Agent, Presence
from teamtree.broker import Endpoint, MosquittoBroker, find_mosquitto, free_port, wait_for_port


def config(path: Path, team: str, keepalive: int) -> Path:
    path.write_text(
        f'[team]\nname = "{team}"\n[runtime]\nkeepalive_s = {keepalive}\nheartbeat_s = 0.5\n'
        '[mission]\nkind = "test"\n[[agents]]\nid = "a1"\nkind = "echo"\n'
    )
    return path


def start_agent(cfg: Path, url: str, team: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(cfg), "--id", "a1",
         "--broker", url, "--team", team, "--log-format", "json"],
        stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def state(view) -> Presence | None:
    member = view.get("a1")
    return None if member is None else member.presence


async def until(predicate, timeout: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        await asyncio.sleep(0.01)
    return None


async def measure(endpoint: Endpoint, runs: int, keepalive: int, tmp: Path) -> dict:
    detect: list[float] = []
    raw_wills = clean_views = 0
    for i in range(runs):
        team = f"det{uuid.uuid4().hex[:6]}"
        cfg = config(tmp / f"{team}.toml", team, keepalive)
        seen: list[str] = []
        observer = Agent(f"obs{i}", team=team, endpoint=endpoint)

        async def tap(env, topic, seen=seen) -> None:
            if topic.agent == "a1" and topic.channel == "connection" and isinstance(env.body, dict):
                seen.append(env.body.get("state"))

        observer.on_any(tap)
        async with observer:
            proc = start_agent(cfg, endpoint.url, team, tmp / f"{team}.log")
            view = observer.team_view
            await until(lambda v=view: state(v) is Presence.ONLINE, 30)
            await asyncio.sleep(0.5)
            proc.send_signal(signal.SIGSTOP)
            took = await until(
                lambda v=view: state(v) is Presence.CONNECTION_BROKEN, 10 * keepalive + 10
            )
            if took is not None:
                detect.append(took)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc = start_agent(cfg, endpoint.url, team, tmp / f"{team}.log")
            await until(lambda v=view: state(v) is Presence.ONLINE, 30)
            await asyncio.sleep(0.5)
            seen.clear()
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            await asyncio.sleep(3 * keepalive)
            raw_wills += "CONNECTION_BROKEN" in seen
            clean_views += state(view) is Presence.OFFLINE
    return {"detect": detect, "raw_wills": raw_wills, "clean_views": clean_views, "runs": runs}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keepalive", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-detection-"))
    brokers = []
    if find_mosquitto():
        brokers.append("mosquitto")
    brokers.append("embedded")
    print("broker     keepalive  runs  detection s (min / median / max)  bound 1.5xKA  "
          "Will after clean stop (raw)  view OFFLINE after clean stop")  # fmt: skip
    for kind in brokers:
        proc = None
        if kind == "mosquitto":
            mosq = MosquittoBroker(persistence=False)
            endpoint = await mosq.start()
        else:
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "teamtree.agents", "broker", "--kind", "embedded",
                 "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            await wait_for_port("127.0.0.1", port, timeout=30)
            endpoint = Endpoint("127.0.0.1", port)
        try:
            for ka in args.keepalive:
                r = await measure(endpoint, args.runs, ka, tmp)
                d = sorted(r["detect"])
                fig = f"{d[0]:.2f} / {d[len(d) // 2]:.2f} / {d[-1]:.2f}" if d else "none"
                print(f"{kind:<10} {ka:>9}  {r['runs']:>4}  {fig:>32}  {1.5 * ka:>12.1f}  "
                      f"{r['raw_wills']:>14} of {r['runs']}  {r['clean_views']:>20} of {r['runs']}",
                      flush=True)  # fmt: skip
        finally:
            if kind == "mosquitto":
                await mosq.close()
            elif proc is not None:
                proc.terminate()
                proc.wait(10)
    os.system(f"rm -rf {tmp}")


if __name__ == "__main__":
    asyncio.run(main())
