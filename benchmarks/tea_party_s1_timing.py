"""Why seed 000's scenario 1 under distance-only depends on who is free first.

§4 (Nicolescu et al., "A heterogeneity-aware distributed task allocation ...", scenario
1, distance-only): the PR2 places the sandwich, the orange, then the sugar; the Baxter
the cup, the tea pot, then the burger. The third pair follows only if the PR2's orange
ends before the Baxter's tea pot: a Baxter free first finds the sugar the only open
leaf (the burger waits for the OR) and takes it. The paper gives neither arm speeds
nor the timing figure's numbers. This prints, for ``configs/tea_party_s1.toml`` run by
``run_place_trial`` (one process, no broker):

1. the two robots' second placements at the default start, and the margin between them;
2. in how many of ``--offsets`` start-up offsets (the Baxter up to 0.2 s before or after
   the PR2, 1.6 simulated s at the world's 8x) §4's order holds, for random layouts
   around the config's: the five objects the first four placements move (cup, tea
   pot, sugar, sandwich, orange), each moved by a normal step of ``--sigma`` metres,
   objects kept 7 cm apart, the goals (the same in every scenario, §3) kept;
3. the same count for arm speeds other than the profiles' (PR2 0.25, Baxter 0.30 m/s),
   with the other scenarios' distance-only outcomes beside it.

    python benchmarks/tea_party_s1_timing.py [--layouts 300] [--sigma 0.15] [--seed 2]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import itertools
import math
import random
import tomllib
from collections import Counter
from typing import Any

import bench_grasp_tables as tables  # beside this script

from teamtree.hardware import profiles
from teamtree.planners.tasktree import TrialMember, TrialResult, parse_tree, run_place_trial

REPO = tables.REPO

MOVED = ("cup", "tea_pot", "sugar", "sandwich", "orange")
CELL = (1, "distance")


def _doc() -> dict[str, Any]:
    return tomllib.loads((REPO / "configs" / "tea_party_s1.toml").read_text())


def layout_trial(doc: dict[str, Any], offset: float) -> TrialResult:
    """Scenario 1 of `doc` under distance-only, the Baxter starting `offset` s after
    the PR2 (before it when negative)."""
    world = next(a for a in doc["agents"] if a.get("kind") == "world")
    members = {
        a["id"]: TrialMember("distance", float(a.get("w_d", 1.0)), float(a.get("w_g", 0.001)),
                             int(a.get("seed", 0)))
        for a in doc["agents"]
        if a.get("kind") == "robot"
    }  # fmt: skip
    spec = {"objects": world["objects"], "robots": world["robots"]}
    start = {"pr2": max(0.0, -offset), "baxter": max(0.0, offset)}
    return run_place_trial(parse_tree(doc["mission"]["tree"]), spec, members,
                           time_factor=float(world.get("time_factor", 8.0)), start=start)  # fmt: skip


def held(doc: dict[str, Any], n: int) -> int:
    """In how many of `n` start-up offsets §4's scenario 1 distance-only order holds."""
    return sum(tables.PINNED[CELL](layout_trial(doc, o)) for o in tables.offsets(n))


def margin() -> None:
    r = layout_trial(_doc(), 0.0)
    ends = {(p.robot, p.object): p.end for p in r.placements}
    orange, tea_pot = ends.get(("pr2", "orange")), ends.get(("baxter", "tea_pot"))
    print("1. at the default start (simulated s):")
    for p in r.placements:
        print(f"   {p.robot:<7} {p.object:<9} {p.start:5.1f} - {p.end:5.1f}")
    if orange is not None and tea_pot is not None:
        print(f"   the PR2's orange ends {orange - tea_pot:+.1f} s after the Baxter's tea pot "
              "(§4's order needs it before, by more than the start-up offsets' 1.6 s)")  # fmt: skip


def layouts(count: int, sigma: float, seed: int, n: int) -> None:
    doc0 = _doc()
    world0 = next(a for a in doc0["agents"] if a.get("kind") == "world")
    base = {name: obj["position"] for name, obj in world0["objects"].items()}
    rng = random.Random(seed)
    counts: Counter[int] = Counter()
    best: tuple[int, dict[str, list[float]]] = (-1, {})
    tried = 0
    while tried < count:
        moved = {
            name: [round(min(0.45, max(-0.45, base[name][0] + rng.gauss(0, sigma))), 3),
                   round(min(0.35, max(-0.35, base[name][1] + rng.gauss(0, sigma))), 3),
                   base[name][2]]
            for name in MOVED
        }  # fmt: skip
        where = {**base, **moved}
        if any(math.dist(where[a][:2], where[b][:2]) < 0.07
               for a, b in itertools.combinations(where, 2)):  # fmt: skip
            continue
        tried += 1
        doc = copy.deepcopy(doc0)
        world = next(a for a in doc["agents"] if a.get("kind") == "world")
        for name, position in moved.items():
            world["objects"][name]["position"] = position
        h = held(doc, n)
        counts[h] += 1
        if h > best[0]:
            best = (h, moved)
        if tried % 50 == 0:
            print(f"   ... {tried} of {count} layouts", flush=True)
    print(f"2. {count} random layouts (sigma {sigma} m, seed {seed}): layouts by offsets held")
    print("   " + ", ".join(f"{h} of {n}: {c}" for h, c in sorted(counts.items())))
    print(f"   the best held {best[0]} of {n}: {best[1]}")


def speeds(n: int) -> None:
    print(f"3. arm speeds (m/s): offsets of {n} where §4's distance-only outcome holds")
    print(f"   {'pr2':>5} {'baxter':>6}   S1   S2   S3")
    saved = dict(profiles.PROFILES)
    try:
        for pr2, baxter in ((0.25, 0.30), (0.25, 0.25), (0.30, 0.25), (0.25, 0.20),
                            (0.30, 0.20), (0.40, 0.25), (0.25, 0.15)):  # fmt: skip
            profiles.PROFILES["pr2"] = dataclasses.replace(profiles.PR2, arm_speed=pr2)
            profiles.PROFILES["baxter"] = dataclasses.replace(profiles.BAXTER, arm_speed=baxter)
            cells = [tables.sweep(s, "distance", n)[1] for s in (1, 2, 3)]
            print(f"   {pr2:5.2f} {baxter:6.2f}  " + "  ".join(f"{c:>3}" for c in cells),
                  flush=True)  # fmt: skip
    finally:
        profiles.PROFILES.clear()
        profiles.PROFILES.update(saved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layouts", type=int, default=300, help="random layouts (default 300)")
    parser.add_argument("--sigma", type=float, default=0.15, help="step in metres (0.15)")
    parser.add_argument("--seed", type=int, default=2, help="the layouts' seed (default 2)")
    parser.add_argument("--offsets", type=int, default=11, help="start-up offsets (11)")
    args = parser.parse_args()
    margin()
    layouts(args.layouts, args.sigma, args.seed, args.offsets)
    speeds(args.offsets)


if __name__ == "__main__":
    main()
