"""Offline allocation, local and global reallocation times for 3, 9, 15 and 30 robots
(seed 003 §VI, Fig. 7 and Table I), on study 2 with replicated robot types.

Prints a table next to the paper's figures; no assertions. Run:
    python benchmarks/bench_ltl.py [--sizes 3 9 15 30] [--max-states N]
"""

from __future__ import annotations

import argparse
import time

from teamtree.broker import InfeasibleError, SolverLimitError
from teamtree.planners.ltl import (
    Mission,
    TSState,
    reallocate_global,
    reallocate_state_change,
    replicated_team,
)

PAPER = {"offline": "21 s (3 robots)", "local": "~0.02 s", "global": "~3 s"}


def bench(n: int, max_states: int | None) -> dict[str, str]:
    formula, robots = replicated_team(n)
    t0 = time.perf_counter()
    mission = Mission(formula, robots, max_states=max_states)
    t_build = time.perf_counter() - t0
    try:
        plan = mission.allocate()
    except SolverLimitError as exc:
        return {"n": str(n), "offline": f"bounded: {exc}"}
    t_offline = time.perf_counter() - t0

    # local: a delivering robot loses its cargo half way (Alg. 1)
    def carrying(i_s):
        return i_s[1].mode == "loaded" and i_s[1].region != "s1"

    name, k = next(
        (r, next(i for i, s in enumerate(p.states) if carrying((i, s))))
        for r, p in plan.plans.items()
        if any(carrying((i, s)) for i, s in enumerate(p.states))
    )
    dr = plan[name]
    executed_dr = [*dr.states[: k + 1], TSState(dr.states[k].region, "standby")]
    t1 = time.perf_counter()
    reallocate_state_change(mission, dr, executed_dr)
    t_local = time.perf_counter() - t1

    # global: that robot has a critical failure there instead (Defs. 4, 5)
    executed = {r: list(p.states[: k + 1]) for r, p in plan.plans.items()}
    t2 = time.perf_counter()
    try:
        new = reallocate_global(mission, plan, executed, failed=[name])
        note = f"cost {new.cost:.1f}"
    except (InfeasibleError, SolverLimitError) as exc:
        note = f"{type(exc).__name__}"
    t_global = time.perf_counter() - t2
    team_states = len(robots) * max(len(r.ts.succ) for r in robots) * mission.automaton.n_states
    return {
        "n": str(n),
        "automaton": f"{mission.automaton.n_states} st / |D| {len(mission.decomposition)}",
        "team": f"<= {team_states} st, {plan.explored} expanded",
        "build": f"{t_build:.3f}",
        "offline": f"{t_offline:.3f}",
        "local": f"{t_local:.4f}",
        "global": f"{t_global:.3f}",
        "note": f"plan cost {plan.cost:.1f}; disturbed {name}; after R2 {note}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[3, 9, 15, 30])
    ap.add_argument("--max-states", type=int, default=2_000_000)
    args = ap.parse_args()
    cols = ["n", "automaton", "team", "build", "offline", "local", "global", "note"]
    rows = [bench(n, args.max_states) for n in args.sizes]
    widths = {c: max(len(c), *(len(r.get(c, "")) for r in rows)) for c in cols}
    print("seconds; 'build' = automaton + decomposition, 'offline' includes it")
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(r.get(c, "").ljust(widths[c]) for c in cols))
    print(
        f"paper (Zhou et al., ROS/Python, Table I and Fig. 7): offline {PAPER['offline']}, "
        f"local {PAPER['local']}, global {PAPER['global']}; linear growth with robots"
    )


if __name__ == "__main__":
    main()
