"""Restarting mosquitto under a live team: everyone reconnects, re-announces, and no
QoS 1 message published during the outage is lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict

import pytest

from teamtree.agents import Agent, RuntimeSettings
from tests.conftest import AgentProcs, eventually, write_config

pytestmark = pytest.mark.integration

AGENTS = "\n".join(
    f'[[agents]]\nid = "{a}"\nkind = "echo"\ncount_hz = 20\n' for a in ("c1", "c2", "c3")
)


def connects(log: str) -> int:
    count = 0
    for line in log.splitlines():
        with contextlib.suppress(ValueError):
            count += json.loads(line).get("event") == "agent.online"
    return count


async def test_restart_mosquitto_loses_nothing(mosquitto, team, tmp_path, agent_procs) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS, keepalive=2)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    seen: dict[str, set[int]] = defaultdict(set)
    observer = Agent(
        "observer", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )

    async def on_counter(env, topic) -> None:
        seen[env.sender].add(env.body["n"])

    observer.on_agents("counter", on_counter, kind="counter")
    async with asyncio.timeout(120), observer:
        await observer.wait_connected(10)
        await asyncio.sleep(0.3)  # the counter subscription is spawned on enter
        for agent_id in ("c1", "c2", "c3"):
            procs.start(agent_id)
        await eventually(
            lambda: all(len(seen[a]) >= 10 for a in ("c1", "c2", "c3")), 30, what="counters"
        )

        await mosquitto.stop()  # SIGTERM: mosquitto saves sessions and queued messages
        at_stop = {a: max(seen[a]) for a in ("c1", "c2", "c3")}
        await asyncio.sleep(2.0)  # ~40 counter messages per agent published into the outage
        await mosquitto.start()

        await eventually(
            lambda: all(max(seen[a]) >= at_stop[a] + 60 for a in at_stop),
            40,
            what="counters after restart",
        )
        for agent_id in ("c1", "c2", "c3"):
            await eventually(
                lambda a=agent_id: connects(procs.log(a)) >= 2, 20, what=f"{agent_id} re-announced"
            )
            assert observer.team_view.get(agent_id).online
        for agent_id, numbers in seen.items():
            top = max(numbers)
            missing = sorted(set(range(1, top + 1)) - numbers)
            assert not missing, f"{agent_id} lost QoS 1 messages {missing[:20]} (of {top})"
        assert observer.connection.connects >= 2
