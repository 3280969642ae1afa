"""Runtime benchmark: request/reply round trip and batched state-delta throughput.

For each broker (mosquitto, embedded amqtt):
- round trip of ``echo.ping`` between this process and an echo agent process through
  the runtime, against a bare aiomqtt client pair (also two processes, QoS 1)
  measured in the same run; prints p50/p99 and the ratio;
- one-way throughput of batched node-state deltas (QoS 1) from this process to a
  sink agent process: messages/s and deltas/s.

    python benchmarks/bench_runtime.py [--requests 300] [--batches 2000] [--batch 50]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiomqtt

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker import Endpoint, MosquittoBroker, find_mosquitto, free_port, wait_for_port
from teamtree.broker.connection import NODELAY

HERE = Path(__file__).resolve()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- child roles -------------------------------------------------------------------


async def bare_responder(url: str, team: str) -> None:
    """A bare aiomqtt responder: echoes every payload on req to rep."""
    host, port = url.removeprefix("mqtt://").split(":")
    async with aiomqtt.Client(
        host, int(port), identifier=f"{team}-bare-resp", socket_options=NODELAY
    ) as client:
        await client.subscribe(f"bench/{team}/req", qos=1)
        print("ready", flush=True)
        async for message in client.messages:
            await client.publish(f"bench/{team}/rep", message.payload, qos=1)


class Sink(Agent):
    """Counts state batches and prints the elapsed time once `count` arrived."""

    kind = "sink"

    def __init__(self, *args, count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.count = count
        self.got = 0
        self.first = 0.0
        self.finished = asyncio.Event()

    async def setup(self) -> None:
        self.on_agents("state", self._on_state)

    async def _on_state(self, env, topic) -> None:
        if self.got == 0:
            self.first = time.perf_counter()
        self.got += 1
        if self.got >= self.count:
            self.finished.set()

    async def main(self) -> None:
        await self.finished.wait()
        print(f"done {self.got} {time.perf_counter() - self.first:.6f}", flush=True)


async def sink(url: str, team: str, count: int) -> None:
    host, port = url.removeprefix("mqtt://").split(":")
    agent = Sink("sink", team=team, endpoint=Endpoint(host, int(port)), count=count)
    async with agent:
        await agent.wait_connected(10)
        await asyncio.sleep(0.3)
        print("ready", flush=True)
        await agent.run_until_stopped()


# -- measurements ------------------------------------------------------------------


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip


def wait_line(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"child exited before printing {prefix!r}")
        if line.startswith(prefix):
            return line.strip()


async def runtime_round_trip(endpoint: Endpoint, team: str, n: int, workdir: Path) -> list[float]:
    config = workdir / f"{team}.toml"
    config.write_text(f'[team]\nname = "{team}"\n[[agents]]\nid = "echo1"\nkind = "echo"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config), "--id", "echo1",
         "--broker", endpoint.url, "--log-format", "json", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        agent = Agent("bench", team=team, endpoint=endpoint, runtime=RuntimeSettings())
        async with agent:
            while "echo1" not in agent.team_view.online():
                await asyncio.sleep(0.05)
            for _ in range(20):  # warm-up
                await agent.request("echo", "echo.ping", {"i": -1}, to="echo1", timeout=5)
            samples = []
            for i in range(n):
                start = time.perf_counter()
                await agent.request("echo", "echo.ping", {"i": i}, to="echo1", timeout=5)
                samples.append(time.perf_counter() - start)
            return samples
    finally:
        proc.terminate()
        proc.wait(10)


async def bare_round_trip(endpoint: Endpoint, team: str, n: int) -> list[float]:
    proc = spawn(str(HERE), "--role", "bare-responder", "--url", endpoint.url, "--team", team)
    try:
        wait_line(proc, "ready")
        async with aiomqtt.Client(
            endpoint.host, endpoint.port, identifier=f"{team}-bare-req", socket_options=NODELAY
        ) as client:
            await client.subscribe(f"bench/{team}/rep", qos=1)
            messages = aiomqtt_messages(client)
            samples = []
            for i in range(-20, n):
                start = time.perf_counter()
                await client.publish(f"bench/{team}/req", str(i).encode(), qos=1)
                while (await messages.__anext__()).payload != str(i).encode():
                    pass
                if i >= 0:
                    samples.append(time.perf_counter() - start)
            return samples
    finally:
        proc.terminate()
        proc.wait(10)


def aiomqtt_messages(client: aiomqtt.Client):
    return client.messages.__aiter__()


async def delta_throughput(
    endpoint: Endpoint, team: str, batches: int, batch: int
) -> tuple[float, float]:
    proc = spawn(
        str(HERE), "--role", "sink", "--url", endpoint.url, "--team", team, "--count", str(batches)
    )
    try:
        wait_line(proc, "ready")
        agent = Agent("source", team=team, endpoint=endpoint)
        async with agent:
            await agent.wait_connected(10)
            deltas = [
                {"node": f"root/{k}", "state": "working", "hlc": [1, k, "source"]}
                for k in range(batch)
            ]
            for _ in range(batches):
                await agent.publish("state", "node.deltas", {"deltas": deltas})
            line = await asyncio.to_thread(wait_line, proc, "done")
        _, got, elapsed = line.split()
        seconds = float(elapsed)
        return int(got) / seconds, int(got) * batch / seconds
    finally:
        proc.terminate()
        proc.wait(10)


async def start_broker(kind: str):
    if kind == "mosquitto":
        broker = MosquittoBroker(persistence=False)
        await broker.start()
        return broker.endpoint, broker.close
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "teamtree.agents", "broker", "--kind", "embedded", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    await wait_for_port("127.0.0.1", port, 30)

    async def close() -> None:
        proc.terminate()
        proc.wait(10)

    return Endpoint("127.0.0.1", port), close


async def bench(args: argparse.Namespace) -> None:
    kinds = ["mosquitto", "embedded"] if find_mosquitto() else ["embedded"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            endpoint, close = await start_broker(kind)
            try:
                team = f"bench{uuid.uuid4().hex[:6]}"
                print(f"[{kind}] round trips ({args.requests} requests each) ...", flush=True)
                bare = await bare_round_trip(endpoint, team, args.requests)
                runtime = await runtime_round_trip(endpoint, team, args.requests, Path(tmp))
                print(
                    f"[{kind}] state deltas ({args.batches} batches of {args.batch}) ...",
                    flush=True,
                )
                msgs, deltas = await delta_throughput(endpoint, team, args.batches, args.batch)
                rows.append((kind, bare, runtime, msgs, deltas))
            finally:
                await close()
    print()
    print("request/reply round trip between two processes, QoS 1 (ms)")
    print(
        f"{'broker':<10} {'bare p50':>9} {'bare p99':>9} {'teamtree p50':>13} {'teamtree p99':>13} {'ratio p50':>10}"
    )
    for kind, bare, runtime, _, _ in rows:
        b50, b99 = percentile(bare, 0.5) * 1e3, percentile(bare, 0.99) * 1e3
        r50, r99 = percentile(runtime, 0.5) * 1e3, percentile(runtime, 0.99) * 1e3
        print(f"{kind:<10} {b50:>9.2f} {b99:>9.2f} {r50:>13.2f} {r99:>13.2f} {r50 / b50:>9.2f}x")
    print()
    print(f"one-way batched state deltas, QoS 1, {args.batch} deltas per message")
    print(f"{'broker':<10} {'messages/s':>11} {'deltas/s':>11}")
    for kind, _, _, msgs, deltas in rows:
        print(f"{kind:<10} {msgs:>11.0f} {deltas:>11.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--role", choices=["bench", "bare-responder", "sink"], default="bench")
    parser.add_argument("--url")
    parser.add_argument("--team")
    parser.add_argument("--count", type=int, default=0)
    args = parser.parse_args()
    if args.role == "bare-responder":
        asyncio.run(bare_responder(args.url, args.team))
    elif args.role == "sink":
        asyncio.run(sink(args.url, args.team, args.count))
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
