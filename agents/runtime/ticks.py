"""The tick loop: ``Agent.on_tick`` ``runtime.tick_hz`` times a second, at a phase
drawn from the agent's id. A tick's error is logged; the loop goes on."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

from teamtree.broker import TeamtreeError
from teamtree.broker.inbound import give_way_to_critical

if TYPE_CHECKING:
    from teamtree.agents.runtime.agent import Agent


def tick_phase(agent_id: str) -> float:
    """Where in the tick period an agent's ticks fall (0 to 1), drawn from its id.

    Agents started together with the same ``tick_hz`` ticked at the same instants
    for good: every idle robot of a team claimed in the same millisecond, so every
    claim waited behind the others' replies in the broker and in processes that
    host several agents. Spread over the period, the claims interleave."""
    return random.Random(f"tick:{agent_id}").random()


async def tick_loop(agent: Agent) -> None:
    """Run `agent`'s ticks until cancelled."""
    period = 1.0 / agent.runtime.tick_hz
    loop = asyncio.get_running_loop()
    next_at = loop.time() + tick_phase(agent.id) * period
    await asyncio.sleep(max(0.0, next_at - loop.time()))
    while True:
        next_at += period
        await give_way_to_critical()  # another agent's claim or reply goes first
        try:
            await agent.on_tick()
        except TeamtreeError as exc:
            agent.log.warning("tick.failed", error=str(exc))
        except Exception as exc:
            agent.stats["tick_errors"] += 1
            agent.log.error("tick.failed", error=repr(exc), exc_info=True)
        await asyncio.sleep(max(0.0, next_at - loop.time()))
        next_at = max(next_at, loop.time() - period)
