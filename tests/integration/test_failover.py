"""Broker lists and the re-sync against real mosquittos (no RabbitMQ needed).

Two separate mosquittos stand for two nodes: an agent given both moves to the second
when the first stops, and re-announces there. The re-sync is forced on
(``cluster = true``) on one mosquitto, where it must answer a joiner with the
teammates' retained state byte for byte (receivers drop what they already hold).
"""

from __future__ import annotations

import asyncio

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.runtime.resync import ROUNDS
from teamtree.broker import MosquittoBroker, find_mosquitto
from teamtree.broker.endpoint import parse_endpoint
from tests.conftest import eventually, scaled

pytestmark = pytest.mark.integration


class Keeper(Agent):
    """Publishes one retained state message after connecting."""

    kind = "keeper"

    async def on_connected(self) -> None:
        await self.publish("state", "keeper.state", {"n": 1}, retain=True)


class Reader(Agent):
    """Keeps the teammates' state messages."""

    kind = "reader"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.states: list[tuple[str, dict]] = []

    async def setup(self) -> None:
        self.on_agents("state", self._on_state)

    async def _on_state(self, env, topic) -> None:
        self.states.append((env.sender, env.body))


async def test_an_agent_moves_to_the_next_broker_of_its_list(team) -> None:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed (apt-get install -y mosquitto)")
    first, second = MosquittoBroker(), MosquittoBroker()
    await first.start()
    await second.start()
    try:
        endpoint = parse_endpoint([first.endpoint.url, second.endpoint.url])
        agent = Agent("mover", team=team, endpoint=endpoint, runtime=RuntimeSettings(keepalive_s=1))
        agent.connection.nodes.index = 0  # start on the first, whatever the hash says
        agent.connection.endpoint = agent.connection.nodes.current
        watcher = Reader("watcher", team=team, endpoint=second.endpoint)
        async with asyncio.timeout(scaled(60)), watcher, agent:
            await agent.wait_connected(10)
            assert agent.connection.endpoint.url == first.endpoint.url
            assert agent.clustered  # a list means cluster mode unless told otherwise
            await first.stop()
            await eventually(lambda: agent.connection.connects == 2, 20, what="moved")
            assert agent.connection.endpoint.url == second.endpoint.url
            await eventually(lambda: "mover" in watcher.team_view.online(), 10, what="online")
            assert agent.connection.nodes.moves >= 1
    finally:
        await first.close()
        await second.close()


async def test_resync_answers_a_joiner_with_the_teams_retained_state(mosquitto, team) -> None:
    forced = RuntimeSettings(cluster=True, resync_wait_s=1.0)
    keeper = Keeper("keeper", team=team, endpoint=mosquitto.endpoint, runtime=forced)
    reader = Reader("reader", team=team, endpoint=mosquitto.endpoint, runtime=forced)
    async with asyncio.timeout(scaled(60)), keeper:
        await keeper.wait_synced(10)
        await eventually(lambda: "state" in str(keeper.connection.retained), 5, what="kept")
        async with reader:
            await reader.wait_synced(10)
            assert reader.resync.last_heard == {"keeper"}
            assert ("keeper", {"n": 1}) in [(s, {"n": b["n"]}) for s, b in reader.states]
            assert reader.team_view.get("keeper").online
        assert keeper.resync.answered == ROUNDS and keeper.resync.republished >= 3
        # the reader got the state once: the retained copy from mosquitto and the
        # re-published one are the same bytes, so the second is dropped as a duplicate
        assert len(reader.states) == 1, reader.states
        assert reader.stats["duplicates"] >= 1
