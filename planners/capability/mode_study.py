"""Seed 002's working-mode study (§VII.C, Figs. 16 and 17) in-process: jobs 1-4 done
in each working mode by robots placed at random, and which jobs a method without
assembly can do at all. Pure and seeded: run ``k`` of a job and mode draws from
``random.Random(f"{seed}/{job}/{mode}/{k}")``, whatever else runs.

Choices where the paper is silent (the timings are in ``mode_timing``):

- the robots are Table II's twelve, placed uniformly on the floor in every run;
  a robot's neighbours are the robots within ``comm_range_m`` (10 m), one hop.
- the mode is the experiment's condition, as in the paper ("each combination is
  tested 10 times"). Member selection is method 1's (§IV, the strength-based
  matcher of ``modes``), with the offers the condition leaves: solo, no idle
  neighbour (every other robot is busy, so Fig. 3 ends in solo); partnership, every
  robot idle; subcontract, only the grants of robots that can do the job alone;
  assembly, only the grants that fill the agent's gap C^req. The selection must
  come out in that mode. Method 1 is the method of the paper's Fig. 14 (jobs 2 and
  3); jobs 3(c) and 5 need three robots and so method 2 (``docs/favors.md``).
- a mode is infeasible for a job when no agent of the twelve gets a team in that
  mode with every robot idle and in range (Job 1: only an assemblable robot with the
  heat camera's O1; Job 4: one S2, so no partnership).
- the agent of a run is drawn uniformly from the robots that get a team in the mode
  within range on that placement ("the 'Job' is assigned randomly to the agent");
  a placement where none does is drawn again (``ModeRun.placements`` counts them).
- Fig. 17's state-of-the-art method (the strength-based allocation of Table I's
  [10]) sees "the binary existence of a given skill" and no assembly: a job is
  within its reach only if one robot can do it alone, in solo, partnership or
  subcontract.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from teamtree.broker import InfeasibleError, NoCapableAgentError
from teamtree.hardware import RobotProfile, factory_robots, strength_capability
from teamtree.planners.capability.jobs import JOBS, JobSpec
from teamtree.planners.capability.mode_timing import FloorModel, Point, job_time
from teamtree.planners.capability.modes import (
    Method,
    Offer,
    PassiveMatcher,
    Selection,
    WorkingMode,
    decide_mode,
)
from teamtree.planners.capability.verification import verify_strength

STUDY_MODES: tuple[WorkingMode, ...] = (
    WorkingMode.SOLO,
    WorkingMode.PARTNERSHIP,
    WorkingMode.SUBCONTRACT,
    WorkingMode.ASSEMBLY,
)
"""The four working modes in the order of the table and the figure."""

FIG16_JOBS: tuple[str, ...] = ("job1", "job2", "job3a", "job4")
"""Fig. 16's jobs: 1, 2, 3 (the 4-unit 3(a), the job 3 where "all working modes are
potential solutions", §VII.A) and 4."""

FIG17_JOBS: tuple[str, ...] = ("job1", "job2", "job3a", "job3b", "job3c", "job4", "job5")
"""Every job of ``jobs.py``, for the reach table (Fig. 17)."""

PAPER_RUNS = 10
"""Runs per job and mode: "each combination is tested 10 times" (§VII.C)."""

MAX_PLACEMENTS = 500
"""Placements drawn per run before giving up on finding a team within range."""


def select_in_mode(
    agent: RobotProfile,
    job: JobSpec,
    neighbours: Sequence[RobotProfile],
    mode: WorkingMode,
    matcher: PassiveMatcher | None = None,
) -> Selection | None:
    """Method 1's selection for ``agent`` when ``mode`` is the condition (see the module
    docstring), over its idle ``neighbours``; None when it does not end in ``mode``."""
    matcher = matcher or PassiveMatcher()
    query = matcher.query(agent, job)
    offers: list[Offer] = []
    if mode != WorkingMode.SOLO:
        for nb in neighbours:
            if nb.robot_id == agent.robot_id:
                continue
            offer = matcher.answer(query, nb)
            if offer is None:
                continue
            if mode == WorkingMode.SUBCONTRACT and offer.fits_job:
                offers.append(Offer(offer.profile, fits_job=True))
            elif mode == WorkingMode.ASSEMBLY and offer.fits_req:
                offers.append(Offer(offer.profile, fits_req=True))
            elif mode == WorkingMode.PARTNERSHIP:
                offers.append(offer)
    try:
        selection = matcher.select(agent, job, offers)
    except NoCapableAgentError:
        return None
    return selection if selection.mode == mode else None


def feasible_agents(
    job: JobSpec, mode: WorkingMode, robots: Sequence[RobotProfile]
) -> tuple[str, ...]:
    """The robots that get a team in ``mode`` for ``job`` with every robot idle and in
    range; empty when the mode cannot do the job."""
    return tuple(a.robot_id for a in robots if select_in_mode(a, job, robots, mode) is not None)


@dataclass(frozen=True)
class ModeRun:
    """One run of a job in a mode: who did it, and where the time went (seconds)."""

    job: str
    mode: str
    run: int
    seed: int
    agent: str
    helpers: str
    tower: str
    placements: int
    decision_s: float
    gather_s: float
    to_table_s: float
    boxes_s: float
    total_s: float
    efficiency: float
    """Boxes placed per minute from the assignment."""


def _place(
    rng: random.Random, robots: Sequence[RobotProfile], model: FloorModel
) -> dict[str, Point]:
    return {
        r.robot_id: (rng.uniform(0, model.width_m), rng.uniform(0, model.depth_m)) for r in robots
    }


def _in_range(
    agent: RobotProfile,
    robots: Sequence[RobotProfile],
    positions: Mapping[str, Point],
    model: FloorModel,
) -> list[RobotProfile]:
    ax, ay = positions[agent.robot_id]
    reach = model.comm_range_m**2
    return [
        r
        for r in robots
        if r.robot_id != agent.robot_id
        and (positions[r.robot_id][0] - ax) ** 2 + (positions[r.robot_id][1] - ay) ** 2 <= reach
    ]


def run_mode(
    job: str,
    mode: WorkingMode,
    run: int,
    seed: int,
    model: FloorModel | None = None,
    robots: Sequence[RobotProfile] | None = None,
) -> ModeRun:
    """Run ``run`` of ``job`` in ``mode``. Raises InfeasibleError when no placement of
    ``MAX_PLACEMENTS`` puts a team for it within range (an infeasible mode, or a
    communication range too short for the floor)."""
    model = model or FloorModel()
    robots = list(robots or factory_robots())
    by_id = {r.robot_id: r for r in robots}
    spec = JOBS[job]
    rng = random.Random(f"{seed}/{job}/{mode.value}/{run}")
    for placements in range(1, MAX_PLACEMENTS + 1):
        positions = _place(rng, robots, model)
        found: list[tuple[RobotProfile, Selection]] = []
        for agent in robots:
            sel = select_in_mode(agent, spec, _in_range(agent, robots, positions, model), mode)
            if sel is not None:
                found.append((agent, sel))
        if not found:
            continue
        agent, sel = rng.choice(found)
        t = job_time(sel, by_id, positions, model)
        return ModeRun(
            job=job,
            mode=mode.value,
            run=run,
            seed=seed,
            agent=agent.robot_id,
            helpers=" ".join(sel.helpers),
            tower=" ".join(sel.team.ids) if sel.team is not None else "",
            placements=placements,
            decision_s=round(t.decision_s, 3),
            gather_s=round(t.gather_s, 3),
            to_table_s=round(t.to_table_s, 3),
            boxes_s=round(t.boxes_s, 3),
            total_s=round(t.total_s, 3),
            efficiency=round(t.efficiency, 4),
        )
    raise InfeasibleError(
        f"{job} in {mode.value}: no team within {model.comm_range_m:g} m in "
        f"{MAX_PLACEMENTS} placements"
    )


@dataclass(frozen=True)
class ModeSummary:
    """A job in a mode over its runs: efficiency (boxes/min) mean, min and max, or
    infeasible (``runs`` 0, no figures)."""

    job: str
    mode: str
    feasible: bool
    runs: int
    mean: float | None
    low: float | None
    high: float | None
    agents: str
    """The robots that can do the job in this mode (every robot idle and in range)."""


def study_runs(
    jobs: Sequence[str] = FIG16_JOBS,
    runs: int = PAPER_RUNS,
    seed: int = 0,
    model: FloorModel | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[ModeRun], list[ModeSummary]]:
    """Every feasible (job, mode) ``runs`` times; the runs and a summary per job and
    mode (infeasible ones included). ``progress(done, total)`` after each run."""
    model = model or FloorModel()
    robots = factory_robots()
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        raise ValueError(f"unknown job(s) {unknown}; known: {sorted(JOBS)}")
    cells = [(j, m, feasible_agents(JOBS[j], m, robots)) for j in jobs for m in STUDY_MODES]
    total = runs * sum(1 for _, _, agents in cells if agents)
    out: list[ModeRun] = []
    summaries: list[ModeSummary] = []
    for job, mode, agents in cells:
        mine = []
        if agents:
            for k in range(runs):
                mine.append(run_mode(job, mode, k, seed, model, robots))
                out.append(mine[-1])
                if progress is not None:
                    progress(len(out), total)
        eff = [r.efficiency for r in mine]
        summaries.append(
            ModeSummary(
                job=job,
                mode=mode.value,
                feasible=bool(agents),
                runs=len(mine),
                mean=round(statistics.fmean(eff), 4) if eff else None,
                low=min(eff) if eff else None,
                high=max(eff) if eff else None,
                agents=" ".join(agents),
            )
        )
    return out, summaries


@dataclass(frozen=True)
class ReachRow:
    """Fig. 17 as a table: how many of the twelve agents get a team for a job, with the
    state-of-the-art method (no assembly) and with ours (methods 1 and 2)."""

    job: str
    description: str
    state_of_the_art: int
    method_1: int
    method_2: int
    example: str
    """A team ours forms where the state of the art forms none (else empty)."""


def _sota_capable(job: JobSpec, robots: Sequence[RobotProfile]) -> bool:
    c_job = job.strength()
    return any(verify_strength(c_job, strength_capability(r)).capable for r in robots)


def reach_rows(
    jobs: Sequence[str] = FIG17_JOBS, robots: Sequence[RobotProfile] | None = None
) -> list[ReachRow]:
    """For each job, the agents of ``robots`` (Table II's twelve) that get a team with
    every other robot idle and in range, per method."""
    robots = list(robots or factory_robots())
    rows = []
    for name in jobs:
        spec = JOBS[name]
        counts: dict[Method, int] = {}
        example = ""
        for method in (Method.PASSIVE, Method.ACTIVE):
            n = 0
            for agent in robots:
                try:
                    sel = decide_mode(agent, spec, robots, method)
                except NoCapableAgentError:
                    continue
                n += 1
                if not example and sel.team is not None:
                    example = f"{agent.robot_id}: {' + '.join(sel.team.ids)} (method {int(method)})"
            counts[method] = n
        sota = len(robots) if _sota_capable(spec, robots) else 0
        rows.append(
            ReachRow(
                job=name,
                description=spec.description,
                state_of_the_art=sota,
                method_1=counts[Method.PASSIVE],
                method_2=counts[Method.ACTIVE],
                example=example if sota == 0 else "",
            )
        )
    return rows
