"""The Agent's public connection hooks against a real mosquitto that stops and starts:
``on_connection_lost`` runs once per drop, ``on_connection_regained`` once per
reconnect (never on the first connect), after ``on_connected``."""

from __future__ import annotations

import asyncio

import pytest

from teamtree.agents import Agent, RuntimeSettings
from tests.conftest import eventually, scaled

pytestmark = pytest.mark.integration


class Recording(Agent):
    """Writes down each hook call in order."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []

    async def on_connected(self) -> None:
        self.calls.append("connected")

    async def on_connection_lost(self) -> None:
        self.calls.append("lost")

    async def on_connection_regained(self) -> None:
        self.calls.append("regained")


async def test_hooks_follow_the_broker_going_and_coming_back(mosquitto, team) -> None:
    agent = Recording(
        "hooked", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )
    async with asyncio.timeout(scaled(90)), agent:
        await agent.wait_connected(10)
        await eventually(lambda: agent.calls == ["connected"], 5, what="first connect")
        for outage in (1, 2):
            await mosquitto.stop()
            await eventually(lambda n=outage: agent.calls.count("lost") == n, 20, what="lost")
            await mosquitto.start()
            await eventually(
                lambda n=outage: agent.calls.count("regained") == n, 40, what="regained"
            )
        assert agent.calls == ["connected", *["lost", "connected", "regained"] * 2]
    assert agent.calls.count("lost") == 2  # a graceful stop is not a lost connection
