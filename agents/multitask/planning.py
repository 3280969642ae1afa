"""The round policy a multitask robot follows: each round what the allocator grants
(``greedy`` and ``sequential``), or the replay of a plan a search planner made
(``lookahead``, ``optimal``).

Its own module because choosing and making the plan is done once, before the first
round, and reads only the planner's name, the allocator and the search budget; the
robot's rounds only call the policy it returns.
"""

from __future__ import annotations

import asyncio
from typing import Any

from teamtree.broker import PlanningError
from teamtree.planners.multitask import (
    MultitaskAllocator,
    RoundPolicy,
    exhaustive_plan,
    lookahead_plan,
    plan_policy,
)

__all__ = ["greedy_policy", "planned_policy"]


def greedy_policy() -> RoundPolicy:
    """Each round, the requests the allocator grants (the paper's method, §III.C)."""
    return lambda alloc, state: alloc.allocate(state).granted


async def planned_policy(
    planner: str, allocator: MultitaskAllocator, max_expansions: int, log: Any
) -> RoundPolicy:
    """The round policy of ``planner``; search planners plan here, in a worker
    thread so presence, heartbeats and claim replies keep flowing. Raises
    PlanningError when the plan does not end the tree."""
    if planner in ("greedy", "sequential"):
        return greedy_policy()
    if planner == "lookahead":
        plan = await asyncio.to_thread(lookahead_plan, allocator, max_expansions=max_expansions)
    else:
        plan = await asyncio.to_thread(exhaustive_plan, allocator)
    if not plan.completed:
        raise PlanningError(f"the {planner} planner found no ordering that ends the tree")
    log.info(
        "plan.ready",
        method=plan.method,
        steps=plan.steps,
        sim_s=round(plan.time_s, 1),
        optimal=plan.optimal,
        expansions=plan.expansions,
    )
    return plan_policy(plan)
