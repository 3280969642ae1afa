"""Task-tree benchmark over a real broker (seed 000 at scale).

For each team size x tree size: a world, one driver per robot and the robots run as
agents against mosquitto (or the embedded broker) at a high time factor; a flat
``AND`` of ``THEN(a, b)`` pairs of PLACE behaviours is executed. Prints mission time,
protocol messages per behaviour, and claim latency (announcement to decision, p50/p99)
next to the broker round trip measured in the same run.

To fit on two cores, the agents of one run share this process (one connection each),
so figures include contention between them: read them as an upper bound.

    python benchmarks/bench_tasktree.py [--robots 2 4 8] [--behaviours 10 50]
    python benchmarks/bench_tasktree.py --robots 32 --behaviours 500   # the full size
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from teamtree.agents import Agent, RuntimeSettings, build_agent, parse_config
from teamtree.broker import Endpoint, MosquittoBroker, find_mosquitto

PROTOCOL_KINDS = {
    "node.claim",
    "node.claim_reply",
    "node.transition",
    "node.snapshot",
    "node.claim_decided",
}


def team_config(team: str, robots: int, behaviours: int, time_factor: float) -> dict[str, Any]:
    """Robots on a ring around a round table, objects spread on it, goals near them."""
    pairs = max(1, behaviours // 2)
    tree = "AND(" + ", ".join(f"THEN(o{2 * i}, o{2 * i + 1})" for i in range(pairs)) + ")"
    radius = 0.9 if robots <= 4 else 0.25 * robots / math.pi + 0.6
    world_robots, agents = {}, []
    for r in range(robots):
        angle = 2 * math.pi * r / robots
        base = [radius * math.cos(angle), radius * math.sin(angle), 0.0]
        world_robots[f"r{r}"] = {"profile": "pr2", "base": base, "yaw": angle + math.pi}
        agents.append(
            {
                "id": f"r{r}",
                "kind": "robot",
                "profile": "pr2",
                "metric": "distance",
                "start_timeout_s": 30.0,
            }
        )
        agents.append(
            {"id": f"r{r}-driver", "kind": "sim_driver", "role": "service", "robot": f"r{r}"}
        )
    objects = {}
    for i in range(2 * pairs):
        # objects near the robots' ring, each goal a little inward of its object
        angle = 2 * math.pi * (i * 0.618034 % 1.0)
        dist = radius - 0.55
        pos = [dist * math.cos(angle), dist * math.sin(angle), 0.80]
        goal = [0.85 * pos[0], 0.85 * pos[1], 0.81]
        objects[f"o{i}"] = {
            "shape": "cylinder",
            "dims": [0.03, 0.10],
            "position": pos,
            "goal": goal,
        }
    agents.append({"id": "world", "kind": "world", "role": "service", "time_factor": time_factor,
                   "objects": objects, "robots": world_robots})  # fmt: skip
    agents.append({"id": "echo", "kind": "echo", "role": "service"})
    return {
        "team": {"name": team},
        "runtime": {"tick_hz": 20, "keepalive_s": 5, "heartbeat_s": 2.0},
        "mission": {"kind": "tasktree", "tree": tree, "timeout_s": 600},
        "agents": agents,
    }


class Tap(Agent):
    """Counts protocol messages and collects claim stamps and decisions."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.counts: Counter[str] = Counter()
        self.claims: dict[str, int] = {}
        self.latencies: list[float] = []
        self.done: set[str] = set()

    async def setup(self) -> None:
        self.on_any(self._tap)

    async def _tap(self, env, topic) -> None:
        if env.kind in PROTOCOL_KINDS:
            self.counts[env.kind] += 1
        body = env.body if isinstance(env.body, dict) else {}
        if env.kind == "node.claim" and body.get("round", 0) == 0:
            self.claims.setdefault(body.get("claim_id", ""), body["stamp"][0])
        elif env.kind == "node.claim_decided" and body.get("claim_id") in self.claims:
            self.latencies.append(env.ts - self.claims[body["claim_id"]])
        elif env.kind == "node.transition" and body.get("status") == "done":
            self.done.add(body.get("node"))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def one_run(
    endpoint: Endpoint, robots: int, behaviours: int, time_factor: float
) -> dict[str, Any]:
    team = f"bench{uuid.uuid4().hex[:6]}"
    config = parse_config(team_config(team, robots, behaviours, time_factor), Path(f"<{team}>"))
    leaves = 2 * max(1, behaviours // 2)
    services = [build_agent(config, s.id, endpoint=endpoint) for s in config.services]
    members = [build_agent(config, m.id, endpoint=endpoint) for m in config.members]
    tap = Tap("tap", team=team, endpoint=endpoint, runtime=RuntimeSettings(keepalive_s=5))
    prober = Agent("prober", team=team, endpoint=endpoint, runtime=RuntimeSettings(keepalive_s=5))
    started_agents: list[Agent] = []
    try:
        for agent in [tap, prober, *services]:
            await agent.__aenter__()
            started_agents.append(agent)
        service_mains = [asyncio.create_task(agent.run_until_stopped()) for agent in services]
        assert service_mains  # keep references: the tasks run until the services stop
        await tap.wait_connected(10)
        while "world" not in prober.team_view.online():
            await asyncio.sleep(0.05)
        for agent in members:
            await agent.__aenter__()
            started_agents.append(agent)
        t0 = time.perf_counter()
        mains = [asyncio.create_task(agent.run_until_stopped()) for agent in members]
        rtts: list[float] = []
        while not all(m.done() for m in mains):
            start = time.perf_counter()
            try:
                await prober.request("echo", "echo.ping", None, to="echo", timeout=2)
                rtts.append((time.perf_counter() - start) * 1000)
            except Exception:
                pass
            await asyncio.sleep(0.2)
            if time.perf_counter() - t0 > 600:
                raise TimeoutError("mission did not finish in 600 s")
        mission_s = time.perf_counter() - t0
        codes = [m.result() for m in mains]
        await asyncio.sleep(0.3)
        return {
            "robots": robots,
            "behaviours": leaves,
            "mission_s": mission_s,
            "ok": all(c == 0 for c in codes) and len(tap.done) >= leaves,
            "msgs_per_behaviour": sum(tap.counts.values()) / leaves,
            "claim_p50": pct(tap.latencies, 0.5),
            "claim_p99": pct(tap.latencies, 0.99),
            "rtt_p50": pct(rtts, 0.5),
            "rtt_p99": pct(rtts, 0.99),
        }
    finally:
        for agent in services:
            agent.request_stop()
        for agent in reversed(started_agents):
            await agent.stop()


async def main_async(args: argparse.Namespace) -> None:
    if args.broker == "mosquitto" and find_mosquitto():
        broker = MosquittoBroker(persistence=False)
    else:
        from teamtree.broker import EmbeddedBroker

        broker = EmbeddedBroker()
    await broker.start()
    rows = []
    try:
        for robots in args.robots:
            for behaviours in args.behaviours:
                print(f"running {robots} robots x {behaviours} behaviours ...", flush=True)
                rows.append(await one_run(broker.endpoint, robots, behaviours, args.time_factor))
    finally:
        await broker.close()
    print()
    print(
        f"task trees over {broker.kind.value}, time factor {args.time_factor:g}, agents in one process"
    )
    print(f"{'robots':>6} {'behav':>6} {'ok':>3} {'mission s':>10} {'msgs/behav':>11} "
          f"{'claim p50 ms':>13} {'claim p99 ms':>13} {'rtt p50 ms':>11} {'rtt p99 ms':>11} {'claim/rtt':>10}")  # fmt: skip
    for r in rows:
        print(f"{r['robots']:>6} {r['behaviours']:>6} {'y' if r['ok'] else 'n':>3} {r['mission_s']:>10.1f} "
              f"{r['msgs_per_behaviour']:>11.1f} {r['claim_p50']:>13.1f} {r['claim_p99']:>13.1f} "
              f"{r['rtt_p50']:>11.2f} {r['rtt_p99']:>11.2f} {r['claim_p50'] / max(r['rtt_p50'], 1e-9):>9.1f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--behaviours", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--time-factor", type=float, default=50.0)
    parser.add_argument("--broker", choices=["mosquitto", "embedded"], default="mosquitto")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    import logging

    import structlog

    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.ERROR if not args.verbose else logging.INFO
        )
    )
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
