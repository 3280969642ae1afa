"""Seed 004 benchmark: steps and simulated time per experiment and planner.

For each shipped layout (configs/pr2_multitask_e1..e4.toml): one-at-a-time (the whole
robot for one behaviour, each pick-and-place to its end), greedy (the paper's
allocator, §III.C), lookahead (A* seeded by greedy, bounded) and the exhaustive
optimum (uniform-cost search), with behaviours skipped and run in parallel, distance
driven and the planner's compute time. ``--larger N`` adds random N-object layouts
where the bounded lookahead falls back to its rollout.

Run: python benchmarks/bench_multitask.py [--larger 8] [--seeds 3]
"""

from __future__ import annotations

import argparse
import random
import time
import tomllib
from pathlib import Path

from teamtree.planners.multitask import (
    MultitaskAllocator,
    exhaustive_plan,
    lookahead_plan,
    plan_policy,
    problem_from_mission,
    run_policy,
    simulate,
)

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
PAPER = {1: "10 (optimal)", 2: "16 (suboptimal)", 3: "12 (suboptimal)", 4: "12 (optimal)"}


def _row(name: str, run, ms: float, note: str = "") -> str:
    return (
        f"  {name:<14}{run.n_steps:>6}{run.time_s:>10.1f}{len(run.skipped):>9}"
        f"{run.parallel:>10}{run.distance_m:>10.1f}{ms:>11.1f}  {note}"
    )


def bench_problem(prob, *, exhaustive: bool = True, budget: int = 200_000) -> None:
    print(f"  {'planner':<14}{'steps':>6}{'time s':>10}{'skipped':>9}{'parallel':>10}"
          f"{'dist m':>10}{'compute ms':>11}")  # fmt: skip
    for planner in ("sequential", "greedy"):
        t = time.perf_counter()
        run = simulate(prob, planner)
        print(_row("one-at-a-time" if planner == "sequential" else planner, run,
                   1e3 * (time.perf_counter() - t)))  # fmt: skip
    alloc = MultitaskAllocator(prob)
    t = time.perf_counter()
    plan = lookahead_plan(alloc, max_expansions=budget)
    ms = 1e3 * (time.perf_counter() - t)
    run = run_policy(alloc, plan_policy(plan), name="lookahead")
    print(_row("lookahead", run, ms, f"{plan.method}, {plan.expansions} expansions"))
    if exhaustive:
        t = time.perf_counter()
        best = exhaustive_plan(alloc)
        ms = 1e3 * (time.perf_counter() - t)
        run = run_policy(alloc, plan_policy(best), name="optimum")
        print(_row("optimum", run, ms, f"exhaustive, {best.expansions} expansions"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--larger", type=int, default=0, help="objects in random layouts (0: off)")
    parser.add_argument("--seeds", type=int, default=2, help="random layouts with --larger")
    parser.add_argument("--budget", type=int, default=2_000, help="lookahead expansions (larger)")
    args = parser.parse_args()
    for n in (1, 2, 3, 4):
        path = CONFIGS / f"pr2_multitask_e{n}.toml"
        with path.open("rb") as f:
            prob = problem_from_mission(tomllib.load(f)["mission"])
        print(f"\nexperiment {n} ({path.name}); paper (§V-VI, greedy): {PAPER[n]} steps")
        bench_problem(prob)
    for seed in range(args.seeds if args.larger else 0):
        rng = random.Random(seed)
        spots = [(float(rng.randint(0, 9)), float(rng.randint(0, 6))) for _ in range(args.larger)]
        objects = {
            f"o{i}": {"position": list(rng.choice(spots)), "destination": list(rng.choice(spots))}
            for i in range(args.larger)
        }
        for o in objects.values():
            if o["position"] == o["destination"]:
                o["destination"] = [o["destination"][0] + 1.0, o["destination"][1]]
        prob = problem_from_mission({"start": [0.0, 0.0], "objects": objects})
        print(
            f"\nrandom layout, {args.larger} objects, seed {seed} (lookahead budget {args.budget})"
        )
        bench_problem(prob, exhaustive=False, budget=args.budget)


if __name__ == "__main__":
    main()
