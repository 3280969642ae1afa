"""Allocation service benchmark: re-plans through a running ``allocation.solve`` service.

For each broker (mosquitto when installed, and the embedded amqtt) and each
``reuse_models`` setting of ``--reuse`` (``on,off``: the kept Gurobi models against
models passed afresh, in the same run), starts one ``allocator`` agent process and
sends it kitting requests (20 subtasks) from an agent in this process, one at a time:

- ``--workload episodes`` (default): the re-plans of whole kitting episodes, as the
  cobot sends them: from the empty table until every subtask is placed, one subtask
  placed (now and then misplaced first) between requests, beliefs drifting, a human
  action under way now and then, each request warm-started from the previous answer;
- ``--workload random``: random mid-episode tables, no warm start.

Per run and setting, prints p50/p99 of the round trip (request sent → reply received),
the service time (the replica's time from picking the request up to the answer) and the
solvers' own time, and which solvers answered; then the medians over ``--runs`` runs,
the ratio reuse on / off, and how many runs missed the goal (p50 < 8 ms, p99 < 30 ms).

    python benchmarks/bench_allocation_service.py [--requests 200] [--runs 5]
        [--workload episodes|random] [--reuse on,off] [--brokers mosquitto]
        [--older DIR]   # also the code under DIR/teamtree, e.g. a git archive of a commit

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
{reuse}
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


def workload(kind: str, requests: int, solver: str) -> list[list[dict]]:
    """``requests`` (+ 5 to warm up) request bodies in sequences; each sequence's warm
    starts chain (episodes), random requests are sequences of one."""
    rng = random.Random(1)
    scenario = KittingScenario.default()
    if kind == "random":
        return [[random_request(rng, scenario, solver)] for _ in range(requests + 5)]
    out: list[list[dict]] = []
    total = 0
    while total < requests + 5:
        out.append(episode_requests(rng, scenario, solver))
        total += len(out[-1])
    return out


async def bench(
    endpoint: Endpoint, sequences: list[list[dict]], requests: int, setting: str, older: str
) -> dict[str, list[float] | dict[str, int]]:
    """One allocator process (``setting``: ``on``/``off`` for ``reuse_models``, or
    ``older``: the code importable from the path ``older``, without the key), the requests
    sent one at a time; the timings after 5 warm-up requests."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if setting == "older":
        env["PYTHONPATH"] = older
        line = ""
    else:
        line = f"reuse_models = {'true' if setting == 'on' else 'false'}"
    team = f"bench-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "team.toml"
        config.write_text(CONFIG.format(team=team, reuse=line))
        proc = subprocess.Popen(
            [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config),
             "--id", "allocator", "--broker", endpoint.url, "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env,
        )  # fmt: skip
        try:
            runtime = RuntimeSettings(request_timeout_s=30.0)
            async with Agent("bench", team=team, endpoint=endpoint, runtime=runtime) as me:
                while "allocator" not in me.team_view.online("allocator"):
                    await asyncio.sleep(0.02)
                rt, service, solve = [], [], []
                solvers: dict[str, int] = {}
                sent = 0
                for sequence in sequences:
                    warm = None
                    for body in sequence:
                        if warm is not None:
                            body = {**body, "warm_start": warm}
                        t0 = time.perf_counter()
                        reply = await request_allocation(me, SOLVE, body, timeout=30)
                        took = time.perf_counter() - t0
                        warm = reply.body["warm_start"]
                        sent += 1
                        if sent <= 5:  # warm up (imports, Gurobi environment)
                            continue
                        if sent > requests + 5:
                            break
                        rt.append(took)
                        service.append(reply.body["timing"]["service_s"])
                        solve.append(reply.body["solve_time"])
                        name = reply.body["solver"]
                        solvers[name] = solvers.get(name, 0) + 1
        finally:
            proc.terminate()
            proc.wait(10)
    return {"rt": rt, "service": service, "solve": solve, "solvers": solvers}


def ms(xs: list[float], q: float) -> float:
    return 1000 * percentile(xs, q)


def report(kind: str, runs: list[dict[str, dict]], requests: int, workload: str) -> None:
    """Per run and setting p50/p99 of round trip, service and solve; then medians over
    the runs and the ratios against reuse off."""
    print(f"\n{kind}: {workload}, {requests} allocation.solve requests a run, {len(runs)} runs")
    print(f"{'run':>4} {'setting':>7} {'rt p50':>8} {'rt p99':>8} {'svc p50':>8} {'svc p99':>8}"
          f" {'solve p50':>9} {'solve p99':>9}  solvers")  # fmt: skip
    for k, run in enumerate(runs):
        for setting, r in run.items():
            print(
                f"{k + 1:>4} {setting:>7} {ms(r['rt'], 0.5):8.2f} "
                f"{ms(r['rt'], 0.99):8.2f} {ms(r['service'], 0.5):8.2f} "
                f"{ms(r['service'], 0.99):8.2f} {ms(r['solve'], 0.5):9.2f} "
                f"{ms(r['solve'], 0.99):9.2f}  {r['solvers']}"
            )
    medians: dict[str, dict[str, float]] = {}
    for setting in runs[0]:
        medians[setting] = {
            f"{what} {q}": statistics.median(
                ms(run[setting][what], 0.5 if q == "p50" else 0.99) for run in runs
            )
            for what in ("rt", "service", "solve")
            for q in ("p50", "p99")
        }
        m = medians[setting]
        print(
            f"median over runs, {setting}: round trip p50 "
            f"{m['rt p50']:.2f} ms, p99 {m['rt p99']:.2f} ms; service p50 "
            f"{m['service p50']:.2f}, p99 {m['service p99']:.2f}; solve p50 "
            f"{m['solve p50']:.2f}, p99 {m['solve p99']:.2f}"
        )
    base = medians.get("off")
    for setting, m in medians.items():
        if base is not None and setting != "off":
            print(
                f"ratio {setting} / off: round trip p50 {m['rt p50'] / base['rt p50']:.2f}, "
                f"p99 {m['rt p99'] / base['rt p99']:.2f}; service p50 "
                f"{m['service p50'] / base['service p50']:.2f}"
            )
    for setting in runs[0]:
        over = sum(
            1
            for run in runs
            if ms(run[setting]["rt"], 0.5) >= 8 or ms(run[setting]["rt"], 0.99) >= 30
        )
        print(f"{setting}: {over} of {len(runs)} runs over the goal (p50 < 8 ms, p99 < 30 ms)")


async def run_broker(kind: str, endpoint: Endpoint, args: argparse.Namespace) -> None:
    sequences = workload(args.workload, args.requests, args.solver)
    settings = args.reuse.split(",") + (["older"] if args.older else [])
    runs = []
    for _ in range(args.runs):
        runs.append({setting: await bench(endpoint, sequences, args.requests, setting, args.older)
                     for setting in settings})  # fmt: skip
    report(kind, runs, args.requests, args.workload)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--solver", choices=["auto", "gurobi", "highs"], default="auto")
    parser.add_argument("--brokers", default="mosquitto,embedded")
    parser.add_argument("--workload", choices=["episodes", "random"], default="episodes")
    parser.add_argument("--reuse", default="on,off", help="reuse_models settings to compare")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--older",
        default="",
        help="also run the allocator from this PYTHONPATH (e.g. a git archive of an older "
        "commit under DIR/teamtree), without reuse_models",
    )
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
                await run_broker(kind, endpoint, args)
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
                await run_broker("embedded (amqtt)", Endpoint("127.0.0.1", port), args)
            finally:
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
