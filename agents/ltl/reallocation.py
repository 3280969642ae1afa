"""The planner's answers to replan requests (R2-R4): local reallocation (Alg. 1 for a
state change, Alg. 2 for a blocked corridor) and, when that fails or a robot failed
critically, global reallocation (Defs. 4-5) after synchronising every robot.

Requests are answered one at a time under one lock, so the mission's epoch, plans
and failed robots change in one place; the planner's verdict waits while one is
under way (``busy``). The new plans are the planner's, published by it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from teamtree.agents.ltl.channels import EVENT, MAP, REPLAN, SYNC
from teamtree.agents.ltl.corridors import BlockedCorridors
from teamtree.agents.ltl.ltl_wire import (
    LtlWireError,
    MapWire,
    ReplanResultWire,
    ReplanWire,
    SyncReplyWire,
    SyncWire,
    decode,
    to_wire,
)
from teamtree.agents.ltl.plan_wire import states_from_wire
from teamtree.broker import InfeasibleError, PlanningError, SpecificationError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.ltl import (
    TSState,
    reallocate_environment_change,
    reallocate_global,
    reallocate_state_change,
)

if TYPE_CHECKING:
    from teamtree.agents.ltl.planner import LtlPlannerAgent

__all__ = ["Reallocation"]


class Reallocation:
    """One planner's replan requests: each answered under the lock, in turn."""

    def __init__(self, agent: LtlPlannerAgent) -> None:
        self._agent = agent
        self._lock = asyncio.Lock()
        self.corridors = BlockedCorridors(agent.robot_ids)

    @property
    def busy(self) -> bool:
        """A reallocation is under way (the epoch or a plan may be about to change)."""
        return self._lock.locked()

    async def on_replan(self, env: Envelope, topic: Topic) -> None:
        """An ``ltl.replan`` request: answered in a task of its own (robots wait)."""
        self._agent.spawn(self._replan(env), "replan", optional=True)

    async def _replan(self, env: Envelope) -> None:
        agent = self._agent
        try:
            request = decode(env.body, ReplanWire)
        except LtlWireError as exc:  # dropped, and the robot told why (it is waiting)
            agent.drops.drop("malformed", REPLAN, env.sender, str(exc))
            refused = ReplanResultWire("error", detail=str(exc))
            await agent.reply(env, "ltl.replan_result", to_wire(refused))
            return
        robot = env.sender
        async with self._lock:
            outcome = await self._replan_locked(robot, request)
        await agent.reply(env, "ltl.replan_result", to_wire(outcome))
        await agent.maybe_finish()

    async def _publish_map(self) -> None:
        agent = self._agent
        body = to_wire(MapWire(agent.session, sorted(self.corridors.team)))
        await agent.publish(MAP, "ltl.map", body, team=True, retain=True)

    async def _announce(self, record: dict[str, Any], robots: Sequence[str], strategy: str) -> None:
        """Keep, log and publish a reallocation's record, then the new plans of ``robots``."""
        agent = self._agent
        agent.replans.append(record)
        agent.log.info("ltl.replanned", **record)
        await agent.publish(EVENT, "ltl.replanned", record)
        await agent.publish_plans(robots, strategy)

    async def _replan_locked(self, robot: str, request: ReplanWire) -> ReplanResultWire:
        agent = self._agent
        strategy = request.strategy
        if agent.mission is None or not agent.running:
            return ReplanResultWire("error", detail="no mission running")
        if robot not in agent.plans:
            return ReplanResultWire("error", detail=f"{robot!r} is not a robot of this mission")
        if strategy not in ("R2", "R3", "R4"):
            return ReplanResultWire("error", detail=f"unknown strategy {strategy!r}")
        seq, plan = agent.plans[robot]
        if (request.epoch, request.seq) != (agent.epoch, seq):
            return ReplanResultWire("stale", agent.epoch, seq)
        if strategy == "R2":
            return await self._global(robot, "R2", "critical failure", failed=[robot])
        executed = states_from_wire(request.executed or [])
        t0 = time.perf_counter()
        try:
            if strategy == "R3":
                new = reallocate_state_change(agent.mission, plan, executed)
                why = f"state change to {tuple(executed[-1])}"
            else:
                edges = list(request.edges or [])
                if not edges:
                    return ReplanResultWire("error", detail="R4 needs edges")
                private = set(request.private or [])
                change = self.corridors.block(agent.mission, robot, edges, private)
                new, _ = reallocate_environment_change(agent.mission, plan, executed, change)
                why = "blocked " + ", ".join(f"{a}-{b}" for a, b in edges)
                if set(edges) - private:
                    await self._publish_map()
        except InfeasibleError as exc:
            took = time.perf_counter() - t0
            agent.log.info(
                "ltl.local_failed",
                strategy=strategy,
                robot=robot,
                took_ms=round(took * 1000, 2),
                reason=str(exc),
            )
            return await self._global(robot, f"{strategy}->global", f"local failed: {exc}")
        except SpecificationError as exc:
            return ReplanResultWire("error", detail=str(exc))
        except PlanningError as exc:  # the trace left the plan: resynchronise globally
            return await self._global(robot, f"{strategy}->global", str(exc))
        took = time.perf_counter() - t0
        kept = new.states == plan.states[len(plan.states) - len(new.states) :]
        agent.plans[robot] = (seq + 1, new)
        record = {
            "strategy": strategy,
            "robot": robot,
            "scope": "local",
            "epoch": agent.epoch,
            "took_ms": round(took * 1000, 3),
            "kept_plan": kept,
            "why": why,
        }
        await self._announce(record, [robot], strategy)
        return ReplanResultWire("local", agent.epoch, seq + 1, took * 1000)

    async def _global(
        self, robot: str, strategy: str, why: str, *, failed: Sequence[str] = ()
    ) -> ReplanResultWire:
        """Synchronise every robot (they stop and report their traces), then search the
        synchronised team automaton. Called with the lock held."""
        agent = self._agent
        assert agent.mission is not None and agent.team_plan is not None
        t_sync = time.perf_counter()
        replies = await agent.gather(
            SYNC,
            "ltl.sync",
            to_wire(SyncWire(agent.session, agent.epoch)),
            expect=agent.robot_ids,
            timeout=agent.sync_timeout_s,
        )
        executed: dict[str, list[TSState]] = {}
        newly_failed = set(failed)
        for name in agent.robot_ids:
            env = replies.get(name)
            seg: list[TSState] = []
            if env is not None:
                try:
                    reply = decode(env.body, SyncReplyWire)
                except LtlWireError as exc:  # its step stream stands in for it
                    agent.drops.drop("malformed", SYNC, env.sender, str(exc))
                else:
                    seg = states_from_wire(reply.segment)
                    if reply.failed:
                        newly_failed.add(name)
            if not seg:
                seg = agent.stream_segment(name, agent.epoch)
                if env is None:
                    agent.log.warning("ltl.sync_missing", robot=name, using="step stream")
            executed[name] = seg
        newly_failed -= agent.failed
        t0 = time.perf_counter()
        try:
            new = reallocate_global(agent.mission, agent.team_plan, executed, failed=newly_failed)
        except (InfeasibleError, SpecificationError) as exc:
            agent.failed |= newly_failed
            agent.replans.append({"strategy": strategy, "robot": robot, "scope": "global"})
            await agent.impossible(str(exc), strategy=strategy, robot=robot)
            return ReplanResultWire("impossible", detail=str(exc))
        took = time.perf_counter() - t0
        agent.failed |= newly_failed
        agent.epoch += 1
        agent.team_plan = new
        agent.plans = {n: (0, new[n]) for n in new.plans}
        agent.starts.update({(n, agent.epoch): p.states[0] for n, p in new.plans.items()})
        for name in agent.robot_ids:  # the sync replies are the robots' finished segments
            agent.segments.setdefault(name, {})[agent.epoch - 1] = executed[name]
        record = {
            "strategy": strategy,
            "robot": robot,
            "scope": "global",
            "epoch": agent.epoch,
            "took_ms": round(took * 1000, 3),
            "sync_ms": round((t0 - t_sync) * 1000, 1),
            "failed": sorted(agent.failed),
            "why": why,
            "cost": round(new.cost, 2),
        }
        await self._announce(record, agent.robot_ids, strategy)
        return ReplanResultWire("global", agent.epoch, 0, took * 1000)
