"""Cluster benchmark: a three-node RabbitMQ cluster against one mosquitto, same run.

- request round trip: ``echo.ping`` from this process to an echo agent process through
  the runtime (QoS 1), on mosquitto, on one RabbitMQ node (both agents on it) and
  across two nodes; p50/p99 and the ratio to mosquitto;
- claim latency: the tea party (scenario 1) run whole with ``teamtree run`` on
  mosquitto and on the cluster with the two robots on different nodes; the robots'
  ``node.claim_won latency_ms`` (claim sent to claim won) p50/max, and the mission time.

    python benchmarks/bench_cluster.py [--requests 300] [--runs 1]

Needs rabbitmq-server (Debian) and mosquitto. Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from teamtree.agents import Agent, RuntimeSettings  # noqa: E402
from teamtree.broker import MosquittoBroker  # noqa: E402
from teamtree.broker.endpoint import Endpoint, parse_endpoint  # noqa: E402
from teamtree.broker.failover import NodeRing  # noqa: E402
from tests.cluster_support import rabbitmq_missing, start_cluster  # noqa: E402

CLAIM = re.compile(r"^(pr2|baxter)\s+\|.*node\.claim_won.*latency_ms=(\d+(?:\.\d+)?)", re.M)
DONE = re.compile(r"SUCCEEDED in ([\d.]+) s")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def team_with(urls: str, prefix: str, want: dict[str, int]) -> str:
    """A team name whose agents start on the wanted node indexes."""
    endpoint = parse_endpoint(urls)
    for i in range(100_000):
        team = f"{prefix}{i}"
        if all(NodeRing(endpoint, f"teamtree-{team}-{a}").index == n for a, n in want.items()):
            return team
    raise RuntimeError("no team name fits")


async def round_trip(endpoint: Endpoint, team: str, n: int, workdir: Path) -> list[float]:
    config = workdir / f"{team}.toml"
    config.write_text(f'[team]\nname = "{team}"\n[[agents]]\nid = "echo1"\nkind = "echo"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config), "--id", "echo1",
         "--broker", endpoint.urls, "--log-format", "json", "--log-level", "warning"],
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


def tea_party(broker: str, team: str, workdir: Path) -> tuple[list[float], float]:
    """Run scenario 1 whole; returns the claim latencies (ms) and the mission time."""
    run_dir = workdir / team
    run_dir.mkdir()
    config = run_dir / "tea.toml"
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    config.write_text(text.replace('name = "tea-party-s1"', f'name = "{team}"'))
    out = subprocess.run(
        [sys.executable, "-m", "teamtree.agents", "run", str(config), "--broker", broker],
        capture_output=True, text=True, timeout=300, cwd=run_dir,
    )  # fmt: skip
    (run_dir / "run.out").write_text(out.stdout)
    if out.returncode != 0:
        print(f"  tea party {team} FAILED on {broker}: see {run_dir}/run.out")
        return [], 0.0
    done = DONE.search(out.stdout)
    return [float(m[2]) for m in CLAIM.finditer(out.stdout)], float(done[1]) if done else 0.0


def line(name: str, samples: list[float], base: float | None) -> str:
    p50, p99 = percentile(samples, 0.5) * 1000, percentile(samples, 0.99) * 1000
    ratio = f"{p50 / (base * 1000):5.2f}x" if base else " 1.00x"
    return f"  {name:<26} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  p50 vs mosquitto {ratio}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--runs", type=int, default=1, help="tea party runs per broker")
    args = parser.parse_args()
    reason = rabbitmq_missing()
    if reason:
        sys.exit(reason)
    workdir = Path(tempfile.mkdtemp(prefix="bench_cluster-"))  # kept: the runs' logs
    print(f"run folders under {workdir}")
    mosquitto = MosquittoBroker()
    await mosquitto.start()
    cluster = start_cluster(workdir / "rabbit")
    print(f"rabbitmq cluster of 3 up in {cluster.started_in_s:.1f} s")
    try:
        urls = ",".join(cluster.urls)
        stamp = int(time.time()) % 100000
        print(f"request round trip, echo.ping through the runtime, {args.requests} requests")
        base_rt = await round_trip(mosquitto.endpoint, f"bm{stamp}", args.requests, workdir)
        base = percentile(base_rt, 0.5)
        print(line("mosquitto", base_rt, None))
        same = team_with(urls, f"bs{stamp}-", {"bench": 0, "echo1": 0})
        rt = await round_trip(parse_endpoint(urls), same, args.requests, workdir)
        print(line("rabbitmq, same node", rt, base))
        cross = team_with(urls, f"bx{stamp}-", {"bench": 0, "echo1": 1})
        rt = await round_trip(parse_endpoint(urls), cross, args.requests, workdir)
        print(line("rabbitmq, across nodes", rt, base))
        print(f"tea party scenario 1, {args.runs} run(s) per broker; claim_won latency_ms")
        for name, broker in [("mosquitto", mosquitto.endpoint.url), ("rabbitmq", urls)]:
            claims: list[float] = []
            times: list[float] = []
            for r in range(args.runs):
                team = team_with(urls, f"tp{stamp}{name[0]}{r}-", {"pr2": 0, "baxter": 1})
                got, took = tea_party(broker, team, workdir)
                claims += got
                times.append(took)
            ok = [t for t in times if t]
            if not claims or not ok:
                print(f"  {name:<10} no run completed")
                continue
            print(
                f"  {name:<10} claims {len(claims):3d}  p50 {percentile(claims, 0.5):5.0f} ms"
                f"  max {max(claims):5.0f} ms  mission {sum(ok) / len(ok):5.1f} s"
                f"  completed {len(ok)}/{len(times)}"
            )
    finally:
        cluster.close()
        await mosquitto.close()


if __name__ == "__main__":
    asyncio.run(main())
