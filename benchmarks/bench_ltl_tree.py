"""Cost of one tick of the LTL robot's behaviour tree on py_trees (seed 003 §V).

Builds the legged robot A1 of ``configs/hospital_study1.toml`` (its tree has all four
recoveries), gives it a plan whose first action runs for a long time, and ticks the
tree as the agent does (``tick_once``) while that action is RUNNING: every recovery's
check (at its rate) and the running action are visited each tick. Baseline in the
same run: calling the tree's check functions directly once per tick, the least work
any executor has to do. Prints microseconds per tick, the ratio to the baseline, and
the share of the tick period at the default ``bt_hz`` (50 Hz: 20 ms). No broker.

    python benchmarks/bench_ltl_tree.py [--ticks 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from teamtree.agents import load_config
from teamtree.agents.ltl import CheckAtRate, LtlRobotAgent
from teamtree.broker import Endpoint
from teamtree.planners.ltl import RobotPlan

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "hospital_study1.toml"


def robot() -> LtlRobotAgent:
    config = load_config(CONFIG)
    params = LtlRobotAgent.params_from_config(config.agent("A1"), config)
    agent = LtlRobotAgent("A1", team="bench", endpoint=Endpoint("127.0.0.1", 1), **params)
    start = agent.current
    target = next(iter(agent.ts.succ[start]))
    agent.plan = RobotPlan("A1", (start, target), ("long action",), (1e9,), (0, 0))
    agent.run, agent.version = "bench", (0, 0)
    return agent


async def measure(ticks: int) -> None:
    agent = robot()
    checks = [n.check for n in agent.bt.iterate() if isinstance(n, CheckAtRate)]
    for _ in range(10):  # warm up; the action's task starts
        agent.bt.tick_once()
        await asyncio.sleep(0)
    t0 = time.perf_counter()
    for _ in range(ticks):
        agent.bt.tick_once()
    tree_us = (time.perf_counter() - t0) / ticks * 1e6
    running = agent.bt.tip()
    t0 = time.perf_counter()
    for _ in range(ticks):
        for check in checks:
            check()
    base_us = (time.perf_counter() - t0) / ticks * 1e6
    agent.bt.stop()
    await asyncio.sleep(0)
    period_us = 1e6 / agent.bt_hz
    print(
        f"tree: {sum(1 for _ in agent.bt.iterate())} nodes, {len(checks)} checks; tip while ticking: {running.name if running else None}"
    )
    print(f"  py_trees tick        {tree_us:8.1f} us")
    print(f"  checks called bare   {base_us:8.1f} us   (baseline)")
    print(f"  ratio                {tree_us / base_us:8.1f} x")
    print(
        f"  share of the {period_us / 1000:.0f} ms tick period at {agent.bt_hz:.0f} Hz: {100 * tree_us / period_us:.2f} %"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=20_000)
    args = ap.parse_args()
    asyncio.run(measure(args.ticks))


if __name__ == "__main__":
    main()
