"""Presence across agent processes: ONLINE, Last Will on SIGKILL, ONLINE again on restart."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from teamtree.agents import Agent, Presence, RuntimeSettings
from tests.conftest import AgentProcs, eventually, scaled, write_config

pytestmark = pytest.mark.integration

AGENTS = "\n".join(f'[[agents]]\nid = "{a}"\nkind = "echo"\n' for a in ("a1", "a2", "a3"))
KEEPALIVE = 1


def presence_events(log: str) -> list[tuple[str, str]]:
    events = []
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == "peer.presence":
            events.append((record["peer"], record["state"]))
    return events


async def test_presence_kill_and_restart(broker, team, tmp_path, agent_procs) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS, keepalive=KEEPALIVE)
    procs = AgentProcs(config, broker.url, team, tmp_path)
    agent_procs.append(procs)
    observer = Agent(
        "observer",
        team=team,
        endpoint=broker.endpoint,
        runtime=RuntimeSettings(keepalive_s=KEEPALIVE),
    )
    async with asyncio.timeout(scaled(90)), observer:
        for agent_id in ("a1", "a2", "a3"):
            procs.start(agent_id)
        await eventually(
            lambda: {"a1", "a2", "a3"} <= observer.team_view.online(), 30, what="3 agents ONLINE"
        )
        for me in ("a1", "a2", "a3"):
            others = {"a1", "a2", "a3"} - {me}
            await eventually(
                lambda me=me, others=others: {p for p, s in presence_events(procs.log(me)) if s == "ONLINE"} >= others,
                15, what=f"{me} to see its peers ONLINE",
            )  # fmt: skip

        killed_at = time.monotonic()
        procs.kill("a2")
        bound = 1.5 * KEEPALIVE + 2.0  # keepalive bound plus scheduling slack
        await eventually(
            lambda: observer.team_view.get("a2").presence is Presence.CONNECTION_BROKEN,
            bound, what="a2 CONNECTION_BROKEN at the observer",
        )  # fmt: skip
        for me in ("a1", "a3"):
            await eventually(
                lambda me=me: ("a2", "CONNECTION_BROKEN") in presence_events(procs.log(me)),
                bound, what=f"{me} to see a2 CONNECTION_BROKEN",
            )  # fmt: skip
        detected_s = time.monotonic() - killed_at
        print(f"[{broker.kind}] CONNECTION_BROKEN seen {detected_s:.2f} s after SIGKILL")

        procs.start("a2")
        await eventually(lambda: observer.team_view.get("a2").online, 30, what="a2 ONLINE again")
        for me in ("a1", "a3"):
            await eventually(
                lambda me=me: presence_events(procs.log(me))[-1:] == [("a2", "ONLINE")]
                or presence_events(procs.log(me)).count(("a2", "ONLINE")) >= 2,
                15, what=f"{me} to see a2 ONLINE again",
            )  # fmt: skip
        reply = await observer.request("echo", "echo.ping", {"x": 1}, to="a2", timeout=scaled(5))
        assert reply.body == {"x": 1} and reply.sender == "a2"
