"""Seed 002 benchmark: time from job receipt to member selection, methods 1 and 2.

Pure and in-process: the favor protocol runs over the simulated network of
``teamtree.planners.capability.simulation`` (every robot in range, no loss). Two
figures per cell: the wall time the state machines spend computing (verification,
pre-calculation, forwarding, selection) and the simulated time to the selection
(the collection window plus latency). The paper's Phase-1 times (§VIII.A) are Godot
simulations including communication, so only the trend is comparable.

Run: python benchmarks/bench_capability.py [--repeats N]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time

from teamtree.broker import NoCapableAgentError
from teamtree.hardware import factory_robots
from teamtree.planners.capability import (
    JOBS,
    FavorSimulation,
    Selected,
    decide_mode,
    grid_positions,
)

PAPER = {(1, 8): "0.17 s", (1, 24): "0.17 s", (2, 8): "0.18 s", (2, 24): "2.53 s"}
JOB_AGENTS = [("job1", "m1"), ("job2", "s2"), ("job3b", "l1"), ("job4", "b1"), ("job5", "l1")]


def one_run(n: int, method: int, job: str, agent: str, seed: int) -> tuple[float, float, int]:
    robots = factory_robots(n)
    ids = [r.robot_id for r in robots]
    sim = FavorSimulation(
        robots, grid_positions(ids), random.Random(seed), method=method, comm_range=1e9, ttl=1
    )
    t0 = time.perf_counter()
    sim.assign(JOBS[job], agent)
    res = sim.run_until_selected(agent, limit=5.0)
    wall = time.perf_counter() - t0
    ok = 1 if isinstance(res, Selected) else 0
    return wall, sim.now, ok


def select_only(n: int, method: int, job: str, agent: str) -> float:
    robots = {r.robot_id: r for r in factory_robots(n)}
    others = [r for r in robots.values() if r.robot_id != agent]
    t0 = time.perf_counter()
    with contextlib.suppress(NoCapableAgentError):  # method 1 cannot do job 5; still timed
        decide_mode(robots[agent], JOBS[job], others, method)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print("job receipt -> member selection (jobs 1, 2, 3b, 4, 5; mean over the selections made)")
    hdr = (
        f"{'robots':>6} {'method':>6} {'protocol wall ms':>17} {'decide ms':>10} "
        f"{'sim time s':>10} {'selected':>9} {'paper':>8}"
    )
    print(hdr)
    print("-" * len(hdr))
    for n in (8, 24, 100):
        for method in (1, 2):
            walls, sims, decides, oks, total = [], [], [], 0, 0
            for rep in range(args.repeats):
                for job, agent in JOB_AGENTS:
                    wall, sim_t, ok = one_run(n, method, job, agent, seed=rep)
                    total += 1
                    if not ok:  # e.g. no O1 among 8 robots; failures retry rounds
                        continue
                    walls.append(wall)
                    sims.append(sim_t)
                    decides.append(select_only(n, method, job, agent))
                    oks += 1
            print(
                f"{n:>6} {method:>6} {1e3 * statistics.mean(walls):>17.2f} "
                f"{1e3 * statistics.mean(decides):>10.2f} {statistics.mean(sims):>10.2f} "
                f"{oks:>4}/{total:<4} {PAPER.get((method, n), '-'):>8}"
            )


if __name__ == "__main__":
    main()
