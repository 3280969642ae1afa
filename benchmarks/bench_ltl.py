"""LTL missions on study 2 with replicated robot types (seed 003 §VI, Fig. 7, Table I).

Two tables, no assertions:

1. Speed against goals: offline allocation (automaton, decomposition, team search,
   projection) at 3 and 30 robots and global reallocation after a critical failure at
   30, as medians of ``--runs`` runs, for three variants measured in the same run:
   ``reference`` (the construction and Dijkstra kept in tests/ltl_reference.py, and
   formula hashes recomputed on every call, as before the speed-ups), ``cold`` (this code, automaton cache off: every
   mission builds its automaton) and ``cached`` (this code, the automaton already in
   the process's cache, as for every mission of a specification after the first).
   Ratios are against ``reference`` and ``cold`` of the same run.
2. The paper's table: build, offline, local and global reallocation per team size.

Run:
    python benchmarks/bench_ltl.py [--runs 7] [--sizes 3 9 15 30] [--max-states N]
"""

from __future__ import annotations

import argparse
import contextlib
import operator
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import teamtree.planners.ltl.team as team_module  # noqa: E402
from teamtree.broker import InfeasibleError, SolverLimitError  # noqa: E402
from teamtree.planners.ltl import (  # noqa: E402
    AutomatonCache,
    Mission,
    TSState,
    reallocate_global,
    reallocate_state_change,
    replicated_team,
)
from teamtree.planners.ltl.syntax import Formula, nnf  # noqa: E402
from tests import ltl_reference as ref  # noqa: E402

PAPER = {"offline": "21 s (3 robots)", "local": "~0.02 s", "global": "~3 s"}
GOALS = {"offline 3": 0.1, "offline 30": 0.3, "global 30": 0.05}


class _ReferenceAutomata(AutomatonCache):
    """Builds the reference automaton every time (no cache)."""

    def __init__(self) -> None:
        super().__init__(size=0)

    def get(self, formula, alphabet=None, *, minimize=True):  # type: ignore[override]
        return ref.Automaton(formula, alphabet, minimize=minimize)


def _reference_dijkstra(team, max_states):
    path, expanded = ref.shortest_path(
        team.initial, team.successors, team.is_accepting, max_states=max_states
    )
    if path is None:
        raise team_module._no_path(team, expanded)
    return [(team.initial, "", 0.0), *path], expanded


def _dataclass_like(cls: type) -> tuple[Callable, Callable]:
    """The ``__hash__`` and ``__eq__`` a frozen dataclass generates for ``cls``: both
    walk the subtree on every call."""
    names = cls.__match_args__  # type: ignore[attr-defined]
    get = operator.attrgetter(*names)
    fields = (lambda self: (get(self),)) if len(names) == 1 else get

    def __hash__(self) -> int:
        return hash(fields(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return fields(self) == fields(other)
        return NotImplemented

    return __hash__, __eq__


@contextlib.contextmanager
def _variant(name: str) -> Iterator[AutomatonCache]:
    """The automata to give Mission, and the team search and formula hashing in place,
    for one variant. ``reference`` also puts back the hash and equality that frozen
    dataclasses generate on the formula nodes."""
    if name == "reference":
        saved = team_module._dijkstra
        team_module._dijkstra = _reference_dijkstra
        nodes = Formula.__subclasses__()
        for cls in nodes:
            cls.__hash__, cls.__eq__ = _dataclass_like(cls)  # type: ignore[method-assign]
        nnf.cache_clear()  # its keys were hashed the other way
        try:
            yield _ReferenceAutomata()
        finally:
            team_module._dijkstra = saved
            for cls in nodes:
                del cls.__hash__, cls.__eq__
            nnf.cache_clear()
    elif name == "cold":
        yield AutomatonCache(size=0)
    else:
        warm = AutomatonCache()
        formula, robots = replicated_team(3)
        Mission(formula, robots, automata=warm)  # every team size has the same labels
        yield warm


def _disturbed(plan):
    """A delivering robot half way through its delivery, and the step it is at."""

    def carrying(s: TSState) -> bool:
        return s.mode == "loaded" and s.region != "s1"

    return next(
        (r, next(i for i, s in enumerate(p.states) if carrying(s)))
        for r, p in plan.plans.items()
        if any(carrying(s) for s in p.states)
    )


Times = tuple[float, float]
"""(wall seconds, this process's CPU seconds) of one measured call."""


def _timed(fn: Callable[[], object]) -> Times:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def _offline(n: int, automata: AutomatonCache) -> Times:
    formula, robots = replicated_team(n)
    return _timed(lambda: Mission(formula, robots, automata=automata).allocate())


def _global(n: int, automata: AutomatonCache) -> Times:
    formula, robots = replicated_team(n)
    mission = Mission(formula, robots, automata=automata)
    plan = mission.allocate()
    name, k = _disturbed(plan)
    executed = {r: list(p.states[: k + 1]) for r, p in plan.plans.items()}
    return _timed(lambda: reallocate_global(mission, plan, executed, failed=[name]))


MEASURES: dict[str, Callable[[AutomatonCache], Times]] = {
    "offline 3": lambda a: _offline(3, a),
    "offline 30": lambda a: _offline(30, a),
    "global 30": lambda a: _global(30, a),
}
VARIANTS = ("reference", "cold", "cached")


def speed_table(runs: int) -> None:
    """Medians per measure and variant, in wall and in CPU seconds of this process (on a
    shared machine the CPU figure is the steadier); runs interleave the variants so
    that the machine's load falls on all of them alike."""
    times: dict[tuple[str, str], list[Times]] = {}
    for _ in range(runs):
        for variant in VARIANTS:
            for measure, fn in MEASURES.items():
                with _variant(variant) as automata:
                    times.setdefault((measure, variant), []).append(fn(automata))
    for clock, col in (("wall", 0), ("CPU", 1)):
        print(f"{clock} seconds, median of {runs} runs (min-max); ratios of the medians")
        head = f"{'measure':<11} {'goal':>6}  " + "  ".join(f"{v:>22}" for v in VARIANTS)
        print(head + f"  {'ref/cached':>10} {'cold/cached':>11} {'ref/cold':>8}")
        for measure in MEASURES:
            ts = {v: [t[col] for t in times[measure, v]] for v in VARIANTS}
            med = {v: statistics.median(ts[v]) for v in VARIANTS}
            cells = [
                f"{med[v]:.4f} ({min(ts[v]):.3f}-{max(ts[v]):.3f})".rjust(22) for v in VARIANTS
            ]
            print(
                f"{measure:<11} {GOALS[measure]:>6.3f}  "
                + "  ".join(cells)
                + f"  {med['reference'] / med['cached']:>10.1f}"
                + f" {med['cold'] / med['cached']:>11.2f} {med['reference'] / med['cold']:>8.1f}"
            )
        print()


def bench(n: int, max_states: int | None) -> dict[str, str]:
    formula, robots = replicated_team(n)
    t0 = time.perf_counter()
    mission = Mission(formula, robots, max_states=max_states, automata=AutomatonCache(size=0))
    t_build = time.perf_counter() - t0
    try:
        plan = mission.allocate()
    except SolverLimitError as exc:
        return {"n": str(n), "offline": f"bounded: {exc}"}
    t_offline = time.perf_counter() - t0

    # local: a delivering robot loses its cargo half way (Alg. 1)
    name, k = _disturbed(plan)
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


def paper_table(sizes: list[int], max_states: int | None) -> None:
    cols = ["n", "automaton", "team", "build", "offline", "local", "global", "note"]
    rows = [bench(n, max_states) for n in sizes]
    widths = {c: max(len(c), *(len(r.get(c, "")) for r in rows)) for c in cols}
    print("seconds, one run, cache off; 'build' = automaton + decomposition, 'offline' includes it")
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(r.get(c, "").ljust(widths[c]) for c in cols))
    print(
        f"paper (Zhou et al., ROS/Python, Table I and Fig. 7): offline {PAPER['offline']}, "
        f"local {PAPER['local']}, global {PAPER['global']}; linear growth with robots"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per median (0: skip table 1)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[3, 9, 15, 30])
    ap.add_argument("--max-states", type=int, default=2_000_000)
    args = ap.parse_args()
    if args.runs:
        speed_table(args.runs)
    paper_table(args.sizes, args.max_states)


if __name__ == "__main__":
    main()
