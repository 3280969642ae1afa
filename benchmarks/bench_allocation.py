"""Benchmark: allocation + schedule solve times for seed 001's kitting, Gurobi vs HiGHS.

Prints figures only (no assertions):
1. the 20-subtask kitting plan (allocation + schedule) at several belief points, p50/p95;
2. scaling 20 → 200 subtasks (1 human + 1 robot) and 2 → 6 agents (1 human + robots);
3. mid-episode schedules: every schedule the cobot solved in simulated episodes, solved
   again with the formulation before the sequence-load cuts and the re-sequenced warm
   start (big-M rows only, the previous plan's start times as a partial MIP start) and
   with the current one, at the paper's limits (4 s, gap 0.004); once with assignments
   costing the robot 2 s (``assign_robot_time=2``, the kitting model before it followed
   §IV.B, whose schedules were the hard ones) and once with the default (0 s).

Run: python benchmarks/bench_allocation.py [--reps N] [--time-limit S] [--episodes N]
     [--only 3] [--highs]
"""

from __future__ import annotations

import argparse
import copy
import time

from teamtree.planners.allocation import (
    HUMAN,
    AllocationProblem,
    CobotConfig,
    KittingScenario,
    Plan,
    Schedule,
    ScheduleProblem,
    ScheduleTask,
    SimulatedHuman,
    SolveOptions,
    SolverPool,
    SubtaskState,
    build_allocation_model,
    build_schedule_model,
    gurobi_available,
    human_robot_costs,
    kitting_allocation_problem,
    kitting_schedule_problem,
    list_schedule,
    plan,
    simulate_episode,
    solve_model,
    solve_schedule,
)
from teamtree.planners.allocation.scheduling import schedule_values

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


MID_EPISODE_CELLS = [(0.9, 0.4), (0.6, 0.4), (0.3, 0.4), (0.3, 0.8), (0.6, 0.8)]


def collect_mid_episode(
    episodes: int, pool: SolverPool, sc: KittingScenario
) -> list[tuple[ScheduleProblem, Schedule | None]]:
    """Every schedule problem the cobot solved in seeded episodes, with the schedule of the
    plan before it (what the cobot warm-starts from)."""
    out: list[tuple[ScheduleProblem, Schedule | None]] = []
    for pf, pe in MID_EPISODE_CELLS:
        for seed in range(episodes):
            previous: list[Schedule | None] = [None]

            def record(p: Plan, previous: list[Schedule | None] = previous) -> None:
                out.append((p.schedule_problem, previous[0]))
                previous[0] = p.schedule

            simulate_episode(sc, SimulatedHuman(pf, pe), CobotConfig(), seed=seed, pool=pool,
                             on_plan=record)  # fmt: skip
    return out


def solve_before(sp: ScheduleProblem, warm: Schedule | None, solver: str, opts, pool):  # type: ignore[no-untyped-def]
    """The formulation before the sequence-load cuts: big-M rows only, and as MIP start
    the previous plan's start times (complete only if it had the same tasks), else the
    list schedule."""
    heur = list_schedule(sp)
    model = copy.copy(build_schedule_model(sp, None if heur is None else heur.makespan))
    model.rows = [r for r in model.rows if not r.name.startswith("load_")]
    if warm is not None and all(t.id in warm.start for t in sp.tasks):
        start = schedule_values(sp, warm)
    elif warm is not None:
        start = {f"s[{t}]": v for t, v in warm.start.items()}
    else:
        start = None if heur is None else schedule_values(sp, heur)
    if start is not None:
        start = {k: v for k, v in start.items() if model.has_var(k)}
    return solve_model(model, solver=solver, options=opts, warm_start=start, pool=pool)  # type: ignore[arg-type]


def section_mid_episode(solvers: list[str], episodes: int, pool: SolverPool) -> None:
    opts = SolveOptions(time_limit=4.0, mip_gap=0.004)
    print(
        f"\n3. mid-episode kitting schedules ({episodes} episode(s) per cell "
        f"{MID_EPISODE_CELLS}), limits 4 s / gap 0.004, solver seconds"
    )
    for r2 in (2.0, 0.0):
        sc = KittingScenario.default(assign_robot_time=r2)
        t0 = time.perf_counter()
        problems = collect_mid_episode(episodes, pool, sc)
        print(
            f"   R2 takes the robot {r2:g} s: {len(problems)} schedules collected in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        compare_formulations(solvers, problems, opts, pool)


def compare_formulations(solvers, problems, opts, pool) -> None:  # type: ignore[no-untyped-def]
    """Solve every problem before and after; print one line per solver and formulation."""
    print(
        f"{'solver':8} {'formulation':12} {'p50':>8} {'p95':>8} {'max':>8} {'sum':>8} "
        f"{'not proved':>10}  makespan diff"
    )
    for solver in solvers:
        rows = {}
        for name in ("before", "after"):
            times, unproved, mks = [], 0, []
            for sp, warm in problems:
                if name == "before":
                    r = solve_before(sp, warm, solver, opts, pool)
                    mks.append(r.objective)
                else:
                    s = solve_schedule(sp, solver=solver, options=opts, warm_start=warm,  # type: ignore[arg-type]
                                       pool=pool)  # fmt: skip
                    r = s.result
                    mks.append(s.makespan)
                times.append(r.solve_time)
                unproved += r.status.value != "optimal"
            rows[name] = mks
            diff = ""
            if name == "after":
                rel = [(a - b) / b for a, b in zip(mks, rows["before"], strict=True) if b > 0]
                diff = f"after/before - 1: min {min(rel):+.4f}, max {max(rel):+.4f}"
            print(
                f"{solver:8} {name:12} {pct(times, 0.5):8.4f} {pct(times, 0.95):8.3f} "
                f"{max(times):8.3f} {sum(times):8.2f} {unproved:10d}  {diff}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the kitting set")
    ap.add_argument("--time-limit", type=float, default=10.0, help="per solve, seconds")
    ap.add_argument("--episodes", type=int, default=2, help="episodes per cell in section 3")
    ap.add_argument("--only", type=int, choices=(1, 2, 3), help="run one section")
    ap.add_argument("--highs", action="store_true", help="section 3 with HiGHS too (slow)")
    args = ap.parse_args()
    solvers = (["gurobi"] if gurobi_available() else []) + ["highs"]
    opts = SolveOptions(time_limit=args.time_limit, mip_gap=1e-4)
    pool = SolverPool()
    print(f"solvers: {solvers}; time limit {args.time_limit:g} s; MIP gap 1e-4; 1 thread")
    if args.only in (None, 1):
        section_kitting(solvers, args.reps, opts, pool)
    scale = ["auto", "highs"] if gurobi_available() else ["highs"]
    if args.only in (None, 2):
        section_subtasks(scale, opts, pool)
        section_agents(scale, opts, pool)
    if args.only in (None, 3):
        mid = (["gurobi"] if gurobi_available() else []) + (["highs"] if args.highs else [])
        section_mid_episode(mid or ["highs"], args.episodes, pool)


if __name__ == "__main__":
    main()
