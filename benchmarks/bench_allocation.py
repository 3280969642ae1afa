"""Benchmark: allocation + schedule solve times for seed 001's kitting, Gurobi vs HiGHS.

Prints figures only (no assertions):
1. the 20-subtask kitting plan (allocation + schedule) at several belief points, p50/p95;
2. scaling 20 → 200 subtasks (1 human + 1 robot) and 2 → 6 agents (1 human + robots).

Run: python benchmarks/bench_allocation.py [--reps N] [--time-limit S]
"""

from __future__ import annotations

import argparse
import time

from teamtree.planners.allocation import (
    HUMAN,
    AllocationProblem,
    KittingScenario,
    ScheduleProblem,
    ScheduleTask,
    SolveOptions,
    SolverPool,
    SubtaskState,
    build_allocation_model,
    build_schedule_model,
    gurobi_available,
    human_robot_costs,
    kitting_allocation_problem,
    kitting_schedule_problem,
    plan,
)

BELIEFS = [(0.8, 0.1), (1.0, 0.0), (0.3, 0.5), (1.0, 0.35), (0.5, 0.2), (0.6, 0.4)]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def kitting_plan(sc: KittingScenario, pf: float, pe: float, solver: str, opts, pool):  # type: ignore[no-untyped-def]
    states = [SubtaskState.INITIAL] * sc.n
    ap = kitting_allocation_problem(sc, states, pf, pe)
    t0 = time.perf_counter()
    p = plan(
        ap,
        lambda al: kitting_schedule_problem(sc, states, al),
        solver=solver,  # type: ignore[arg-type]
        allocation_options=opts,
        schedule_options=opts,
        pool=pool,
    )
    return time.perf_counter() - t0, p


def section_kitting(solvers: list[str], reps: int, opts: SolveOptions, pool: SolverPool) -> None:
    print("\n1. 20-subtask kitting: allocation + schedule (wall ms, incl. model building)")
    print(f"{'solver':8} {'p50':>8} {'p95':>8} {'max':>8}  makespans")
    sc = KittingScenario.default()
    for solver in solvers:
        times, mks = [], []
        for _ in range(reps):
            for pf, pe in BELIEFS:
                dt, p = kitting_plan(sc, pf, pe, solver, opts, pool)
                times.append(dt * 1000)
                mks.append(round(p.schedule.makespan, 1))
        print(
            f"{solver:8} {pct(times, 0.5):8.1f} {pct(times, 0.95):8.1f} {max(times):8.1f}  "
            f"{sorted(set(mks))}"
        )


def section_subtasks(solvers: list[str], opts: SolveOptions, pool: SolverPool) -> None:
    print("\n2a. scaling subtasks (1 human + 1 robot, 5 spots per workspace, beliefs 0.8/0.1)")
    print(
        f"{'n':>4} {'solver':8} {'alloc vars':>10} {'sched vars/rows':>16} "
        f"{'total ms':>9} {'status':>9} {'gap':>7} {'makespan':>9}"
    )
    for n in (20, 40, 80, 120, 200):
        sc = KittingScenario.build(n // 5, 5)
        states = [SubtaskState.INITIAL] * sc.n
        ap = kitting_allocation_problem(sc, states, 0.8, 0.1)
        for solver in solvers:
            try:
                dt, p = kitting_plan(sc, 0.8, 0.1, solver, opts, pool)
            except Exception as exc:  # a benchmark reports, it does not stop
                print(f"{n:4d} {solver:8} failed: {exc}")
                continue
            sm = build_schedule_model(p.schedule_problem)
            am = build_allocation_model(ap)
            r = p.schedule.result
            print(
                f"{n:4d} {r.solver:8} {am.num_vars:10d} {sm.num_vars:7d}/{sm.num_rows:<8d} "
                f"{dt * 1000:9.1f} {r.status.value:>9} {r.gap:7.4f} {p.schedule.makespan:9.1f}"
            )


def section_agents(solvers: list[str], opts: SolveOptions, pool: SolverPool) -> None:
    print("\n2b. scaling agents (40 subtasks in chains of 5; 1 human + k robots, general form)")
    print(f"{'agents':>6} {'solver':8} {'total ms':>9} {'status':>9} {'gap':>7} {'makespan':>9}")
    sc = KittingScenario.build(8, 5)
    th = [s.t_human for s in sc.subtasks]
    for n_agents in (2, 3, 4, 5, 6):
        robots = [f"robot{k}" for k in range(n_agents - 1)]
        t_robots = [[s.t_robot * (1.0 + 0.1 * k) for s in sc.subtasks] for k in range(len(robots))]
        cost = human_robot_costs(th, t_robots, 0.8, 0.1, sc.c_h, sc.c_e)
        agents = (HUMAN, *robots)
        ap = AllocationProblem(tuple(s.id for s in sc.subtasks), agents, cost)
        dur = {HUMAN: th, **{r: t_robots[k] for k, r in enumerate(robots)}}

        def make(al, dur=dur):  # type: ignore[no-untyped-def]
            tasks = tuple(
                ScheduleTask(t, a, dur[a][int(t[1:])], sc.human_min_start if a == HUMAN else 0.0)
                for t, a in al.assignment.items()
            )
            prec = tuple((f"t{a}", f"t{b}") for a, b in sc.precedence)
            return ScheduleProblem(tasks, prec)

        for solver in solvers:
            t0 = time.perf_counter()
            try:
                p = plan(ap, make, solver=solver, allocation_options=opts,  # type: ignore[arg-type]
                         schedule_options=opts, pool=pool)  # fmt: skip
            except Exception as exc:
                print(f"{n_agents:6d} {solver:8} failed: {exc}")
                continue
            dt = time.perf_counter() - t0
            r = p.schedule.result
            print(
                f"{n_agents:6d} {r.solver:8} {dt * 1000:9.1f} {r.status.value:>9} "
                f"{r.gap:7.4f} {p.schedule.makespan:9.1f}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the kitting set")
    ap.add_argument("--time-limit", type=float, default=10.0, help="per solve, seconds")
    args = ap.parse_args()
    solvers = (["gurobi"] if gurobi_available() else []) + ["highs"]
    opts = SolveOptions(time_limit=args.time_limit, mip_gap=1e-4)
    pool = SolverPool()
    print(f"solvers: {solvers}; time limit {args.time_limit:g} s; MIP gap 1e-4; 1 thread")
    section_kitting(solvers, args.reps, opts, pool)
    scale = ["auto", "highs"] if gurobi_available() else ["highs"]
    section_subtasks(scale, opts, pool)
    section_agents(scale, opts, pool)


if __name__ == "__main__":
    main()
