"""A multitask robot's account of its finished run: one log event per figure, the
comparison with one behaviour at a time (and, in a team, with this robot alone), and
one ``multitask.summary`` event message.

Its own module because it runs once, after the tree is done, and only reads: the
run's result, the units this robot and its peers finished, and its claim counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamtree.agents.multitask.channels import EVENTS
from teamtree.planners.multitask import RunResult, simulate

if TYPE_CHECKING:
    from teamtree.agents.multitask.robot import MultitaskRobot

__all__ = ["summarise"]


async def summarise(robot: MultitaskRobot, run: RunResult, wall_s: float) -> None:
    """One log event per figure, the one-at-a-time comparison, and one event message."""
    base = simulate(robot.problem, "sequential", check=False)
    skipped = sorted(run.final.skipped)
    groups = [sorted(g) for g in run.together()]
    mine = sorted(u for u, who in robot.units_done.items() if who == robot.id)
    by_peers = sorted(u for u, who in robot.units_done.items() if who != robot.id)
    robot.log.info("summary.steps", planner=robot.planner, steps=run.n_steps)
    robot.log.info("summary.skipped", count=len(skipped), nodes=skipped)
    robot.log.info("summary.parallel", count=run.parallel, groups=groups)
    robot.log.info(
        "summary.time",
        sim_s=round(run.time_s, 1),
        wall_s=round(wall_s, 2),
        distance_m=round(run.distance_m, 2),
    )
    team = bool(by_peers or robot.expect_peers or robot.peer_rule_peers())
    if team:
        alone = "sequential" if robot.planner == "sequential" else "greedy"
        solo = simulate(robot.problem, alone)
        robot.log.info(
            "summary.team",
            units_mine=mine,
            units_by_peers=by_peers,
            claims_won=robot.claims["won"],
            claims_lost=robot.claims["lost"],
        )
        robot.log.info(
            "summary.alone",
            planner=solo.planner,
            steps=solo.n_steps,
            sim_s=round(solo.time_s, 1),
            saved_s=round(solo.time_s - run.time_s, 1),
        )
    robot.log.info(
        "summary.one_at_a_time",
        steps=base.n_steps,
        sim_s=round(base.time_s, 1),
        skipped=len(base.final.skipped),
        parallel=base.parallel,
        saved_steps=base.n_steps - run.n_steps,
        saved_s=round(base.time_s - run.time_s, 1),
    )
    await robot.publish(
        EVENTS,
        "multitask.summary",
        {
            "planner": robot.planner,
            "steps": run.n_steps,
            "skipped": skipped,
            "parallel": run.parallel,
            "together": groups,
            "sim_s": round(run.time_s, 3),
            "wall_s": round(wall_s, 3),
            "one_at_a_time": {"steps": base.n_steps, "sim_s": round(base.time_s, 3)},
            "rounds": [list(s.behaviours) for s in run.steps],
            "units_mine": mine,
            "units_by_peers": by_peers,
            "claims": dict(robot.claims),
        },
    )
