"""Agents started together do not tick together (issue 19): each agent's ticks fall at
its own point of the tick period, drawn from its id, so a team's idle robots do not
all claim in the same millisecond and wait behind each other's replies."""

from __future__ import annotations

import asyncio

import pytest

from teamtree.agents import Agent, RuntimeSettings
from tests.conftest import scaled

pytestmark = pytest.mark.integration

TICK_HZ = 4.0


class Ticking(Agent):
    """Records when it ticks."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ticks: list[float] = []

    async def on_tick(self) -> None:
        self.ticks.append(asyncio.get_running_loop().time())


async def test_agents_started_together_tick_at_their_own_points_of_the_period(
    mosquitto, team
) -> None:
    period = 1.0 / TICK_HZ
    runtime = RuntimeSettings(tick_hz=TICK_HZ)
    agents = [
        Ticking(f"t{k}", team=team, endpoint=mosquitto.endpoint, runtime=runtime) for k in range(6)
    ]
    async with asyncio.timeout(scaled(30)):
        for agent in agents:
            await agent.__aenter__()
        try:
            while any(len(a.ticks) < 3 for a in agents):
                await asyncio.sleep(0.05)
        finally:
            for agent in agents:
                await agent.__aexit__(None, None, None)
    first = [a.ticks[0] for a in agents]
    # the six ids' phases spread over more than half the period; ticking from the
    # moment each started, they all fell within the few ms it took to start them
    assert max(first) - min(first) > 0.3 * period, [round(t - min(first), 3) for t in first]
