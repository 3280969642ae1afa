"""Allocation service benchmark: the round trip of ``allocation.solve`` against its solve time.

For each broker (mosquitto when installed, and the embedded amqtt), starts one
``allocator`` agent process and sends it kitting requests (20 subtasks, random mid-episode
states, beliefs and a human action under way) from an agent in this process, one at a
time. Prints p50/p95 of:

- round trip: request sent → reply received, at the requester;
- service: the replica's time from picking the request up to the answer (thread hop,
  parsing, model building, both solves, encoding);
- solve: the solvers' own time as the reply reports it;
and the ratios round trip / solve and round trip / service.

    python benchmarks/bench_allocation_service.py [--requests 200] [--solver auto]

Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from teamtree.agents import Agent, RuntimeSettings, configure_logging
from teamtree.agents.allocation.allocator import SOLVE, request_allocation
from teamtree.broker import Endpoint, MosquittoBroker, find_mosquitto, free_port, wait_for_port
from teamtree.planners.allocation import KittingScenario, SubtaskState

CONFIG = """
[team]
name = "{team}"

[runtime]
keepalive_s = 5

[[agents]]
id = "allocator"
kind = "allocator"
role = "service"
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def random_request(rng: random.Random, scenario: KittingScenario, solver: str) -> dict:
    """A kitting request from a plausible mid-episode table."""
    states = []
    for _w in range(4):
        done = rng.randint(0, 4)
        row = [SubtaskState.PLACED_CORRECTLY] * done + [SubtaskState.INITIAL] * (5 - done)
        if done < 5 and rng.random() < 0.3:
            row[done] = rng.choice(
                [SubtaskState.ASSIGNED_TO_HUMAN, SubtaskState.MISPLACED,
                 SubtaskState.ASSIGNED_TO_ROBOT_CORRECTLY]
            )  # fmt: skip
        states.extend(row)
    if all(s is SubtaskState.PLACED_CORRECTLY for s in states):
        states[-1] = SubtaskState.INITIAL
    in_progress = None
    free = [i for i, s in enumerate(states) if s is SubtaskState.INITIAL]
    if free and rng.random() < 0.5:
        task = rng.choice(free)
        in_progress = {
            "task": task,
            "action": "H1",
            "remaining": rng.uniform(0, scenario.subtasks[task].t_human),
        }
    return {
        "problem": {
            "form": "kitting",
            "states": [s.value for s in states],
            "p_follow": rng.uniform(0.2, 1.0),
            "p_error": rng.uniform(0.0, 0.6),
            "in_progress": in_progress,
        },
        "options": {"solver": solver},
    }


def episode_requests(rng: random.Random, scenario: KittingScenario, solver: str) -> list[dict]:
    """The re-plans of one kitting episode, as the cobot sends them: from the empty table
    until every subtask is placed, one subtask placed (now and then misplaced first, or
    under way by the human) between requests, and the beliefs drifting. The service's
    warm start is added when the request is sent (from the previous answer)."""
    n = scenario.n
    states = [SubtaskState.INITIAL] * n
    p_follow, p_error = rng.uniform(0.4, 0.9), rng.uniform(0.0, 0.3)
    bodies = []
    while True:
        open_ = [i for i in range(n) if states[i] is not SubtaskState.PLACED_CORRECTLY]
        if not open_:
            return bodies
        startable = [
            i for i in open_
            if (p := scenario.predecessor(i)) is None or states[p] is SubtaskState.PLACED_CORRECTLY
        ]  # fmt: skip
        in_progress = None
        free = [i for i in startable if states[i] is SubtaskState.INITIAL]
        if free and rng.random() < 0.4:
            task = rng.choice(free)
            remaining = rng.uniform(0, scenario.subtasks[task].t_human)
            in_progress = {"task": task, "action": "H1", "remaining": remaining}
        bodies.append(
            {
                "problem": {
                    "form": "kitting",
                    "states": [s.value for s in states],
                    "p_follow": p_follow,
                    "p_error": p_error,
                    "in_progress": in_progress,
                },
                "options": {"solver": solver},
            }
        )
        task = rng.choice(startable)
        if states[task] is SubtaskState.INITIAL and rng.random() < 0.15:
            states[task] = SubtaskState.MISPLACED
            p_error = min(1.0, p_error + 0.1)
        else:
            states[task] = SubtaskState.PLACED_CORRECTLY
            p_follow = min(1.0, max(0.0, p_follow + rng.uniform(-0.08, 0.08)))


async def bench(kind: str, endpoint: Endpoint, requests: int, solver: str) -> None:
    team = f"bench-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "team.toml"
        config.write_text(CONFIG.format(team=team))
        proc = subprocess.Popen(
            [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config),
             "--id", "allocator", "--broker", endpoint.url, "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
        try:
            runtime = RuntimeSettings(request_timeout_s=30.0)
            async with Agent("bench", team=team, endpoint=endpoint, runtime=runtime) as me:
                while "allocator" not in me.team_view.online("allocator"):
                    await asyncio.sleep(0.02)
                rng = random.Random(1)
                scenario = KittingScenario.default()
                bodies = [random_request(rng, scenario, solver) for _ in range(requests + 5)]
                for body in bodies[:5]:  # warm up (imports, Gurobi environment)
                    await request_allocation(me, SOLVE, body, timeout=30)
                rt, service, solve = [], [], []
                solvers: dict[str, int] = {}
                for body in bodies[5:]:
                    t0 = time.perf_counter()
                    reply = await request_allocation(me, SOLVE, body, timeout=30)
                    rt.append(time.perf_counter() - t0)
                    service.append(reply.body["timing"]["service_s"])
                    solve.append(reply.body["solve_time"])
                    solvers[reply.body["solver"]] = solvers.get(reply.body["solver"], 0) + 1
        finally:
            proc.terminate()
            proc.wait(10)

    def ms(xs: list[float], q: float) -> str:
        return f"{1000 * percentile(xs, q):8.2f}"

    print(f"\n{kind}: {requests} kitting allocation.solve requests, solvers {solvers}")
    print(f"{'':24}{'p50 ms':>8} {'p95 ms':>8}")
    print(f"{'round trip':24}{ms(rt, 0.5)} {ms(rt, 0.95)}")
    print(f"{'service (in replica)':24}{ms(service, 0.5)} {ms(service, 0.95)}")
    print(f"{'solve (solvers)':24}{ms(solve, 0.5)} {ms(solve, 0.95)}")
    overhead = [r - s for r, s in zip(rt, solve, strict=True)]
    print(f"{'round trip - solve':24}{ms(overhead, 0.5)} {ms(overhead, 0.95)}")
    print(
        f"ratio round trip / solve: p50 {percentile(rt, 0.5) / percentile(solve, 0.5):.2f}, "
        f"p95 {percentile(rt, 0.95) / percentile(solve, 0.95):.2f}; "
        f"round trip / service p50 {percentile(rt, 0.5) / percentile(service, 0.5):.2f}; "
        f"mean per-request ratio {statistics.fmean(r / s for r, s in zip(rt, solve, strict=True) if s > 0):.2f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--solver", choices=["auto", "gurobi", "highs"], default="auto")
    parser.add_argument("--brokers", default="mosquitto,embedded")
    args = parser.parse_args()
    configure_logging("plain", level="warning")
    for kind in args.brokers.split(","):
        if kind == "mosquitto":
            if find_mosquitto() is None:
                print("\nmosquitto: not installed, skipped")
                continue
            broker = MosquittoBroker()
            endpoint = await broker.start()
            try:
                await bench(kind, endpoint, args.requests, args.solver)
            finally:
                await broker.close()
        else:
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "teamtree.agents", "broker", "--kind", "embedded",
                 "--port", str(port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await wait_for_port("127.0.0.1", port, timeout=30)
                await bench(
                    "embedded (amqtt)", Endpoint("127.0.0.1", port), args.requests, args.solver
                )
            finally:
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
