"""The LTL robot's strategies (seed 003 §V-B): R1, a recovery stand it makes alone,
and R2-R4, asking the planner to reallocate and waiting for the plan it publishes.

Each is a coroutine the behaviour tree runs when its check fails; they share the
count of strategies run (logged when the robot finishes) and nothing of how plans
are taken, which stays with the robot.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING

from teamtree.agents.ltl.channels import EVENT, REPLAN
from teamtree.agents.ltl.ltl_wire import (
    LtlWireError,
    ReplanResultWire,
    ReplanWire,
    decode,
    to_wire,
)
from teamtree.broker import RequestError, TeamtreeError

if TYPE_CHECKING:
    from teamtree.agents.ltl.robot import LtlRobotAgent

__all__ = ["Strategies"]


class Strategies:
    """One robot's strategies R1-R4 and how often it ran each."""

    def __init__(self, robot: LtlRobotAgent) -> None:
        self._robot = robot
        self.counts: Counter[str] = Counter()
        """Strategy name -> times run."""

    async def recover(self) -> bool:
        """R1: recovery stand, without the planner (legged robots only)."""
        robot = self._robot
        self.counts["R1"] += 1
        robot.log.info(
            "ltl.strategy", strategy="R1", action="recovery stand", at=list(robot.current)
        )
        await robot.publish(EVENT, "ltl.strategy", {"run": robot.run, "strategy": "R1"})
        await asyncio.sleep(robot.recovery_s / robot.time_factor)
        robot.fallen = False
        robot.log.info("ltl.recovered", strategy="R1", took_sim_s=robot.recovery_s)
        return True

    async def request(self, strategy: str) -> bool:
        """R2-R4: ask the planner to reallocate; wait for the plan it publishes."""
        robot = self._robot
        if robot.plan is None or robot.run is None:
            return False
        asked = robot.version
        edges = sorted(robot.unreported)
        private = [e for e in edges if e in robot.private_edges]
        request = ReplanWire(
            robot.run,
            strategy,
            *asked,
            executed=list(robot.plan_trace) if strategy in ("R3", "R4") else None,
            edges=edges if strategy == "R4" else None,
            private=private if strategy == "R4" and private else None,
        )
        body = to_wire(request)
        self.counts[strategy] += 1
        robot.log.info(
            "ltl.strategy",
            strategy=strategy,
            at=list(robot.current),
            epoch=asked[0],
            seq=asked[1],
            edges=[list(e) for e in edges] or None,
        )
        await robot.publish(EVENT, "ltl.strategy", {"run": robot.run, **body})
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            reply = await robot.request(
                REPLAN, "ltl.replan", body, to=robot.planner, timeout=robot.replan_timeout_s
            )
        except (RequestError, TeamtreeError) as exc:
            robot.log.warning("ltl.replan_unanswered", strategy=strategy, error=str(exc))
            return False
        try:
            result = decode(reply.body, ReplanResultWire)
        except LtlWireError as exc:
            robot.drops.drop("malformed", REPLAN, reply.sender, str(exc))
            return False
        outcome = result.outcome
        if strategy == "R4" and outcome != "stale":
            robot.unreported -= set(edges)
        if outcome in ("local", "global", "stale"):
            epoch = asked[0] if result.epoch is None else result.epoch
            want = (epoch, asked[1] if result.seq is None else result.seq)
            if outcome == "stale":
                want = max(want, asked)
            while robot.version < want or (outcome == "stale" and robot.version == asked):
                if loop.time() - t0 > robot.replan_timeout_s:
                    robot.log.warning("ltl.replan_plan_missing", strategy=strategy, want=want)
                    return False
                await asyncio.sleep(0.01)
            robot.log.info(
                "ltl.replan_done",
                strategy=strategy,
                outcome=outcome,
                planner_ms=round(result.took_ms or 0.0, 3),
                round_trip_ms=round((loop.time() - t0) * 1000, 1),
            )
            return True
        if outcome == "impossible":
            robot.log.error("ltl.mission_impossible", strategy=strategy, detail=result.detail)
            while robot.verdict is None:
                await asyncio.sleep(0.05)
            return False
        robot.log.warning("ltl.replan_refused", strategy=strategy, detail=result.detail)
        await asyncio.sleep(0.2)
        return False
