"""Restarting mosquitto under a live team: everyone reconnects, re-announces, and no
QoS 1 message published during the outage is lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict

import pytest

from teamtree.agents import Agent, RuntimeSettings
from tests.conftest import AgentProcs, eventually, scaled, write_config

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
    async with asyncio.timeout(scaled(120)), observer:
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


async def test_pipelined_burst_across_a_restart_keeps_every_message_in_order(
    mosquitto, team
) -> None:
    """One agent publishes as fast as it can (publishes do not wait for PUBACK) while
    mosquitto stops and starts: every number arrives, and first arrivals are in order
    (re-sent messages may arrive twice; receivers de-duplicate)."""
    total = 5000
    first_seen: list[int] = []
    seen: set[int] = set()
    runtime = RuntimeSettings(keepalive_s=2)
    observer = Agent("observer", team=team, endpoint=mosquitto.endpoint, runtime=runtime)
    burst = Agent("burst", team=team, endpoint=mosquitto.endpoint, runtime=runtime)

    async def on_n(env, topic) -> None:
        n = env.body["n"]
        if n not in seen:
            seen.add(n)
            first_seen.append(n)

    observer.on_agent("burst", "burst", on_n, kind="n")
    async with asyncio.timeout(scaled(120)), observer, burst:  # minutes when loaded
        await observer.wait_connected(10)
        await burst.wait_connected(10)
        await asyncio.sleep(0.3)

        published = 0

        async def publish_all() -> None:
            nonlocal published
            for n in range(1, total + 1):
                await burst.publish("burst", "n", {"n": n})
                published = n
                if n % 50 == 0:
                    await asyncio.sleep(0.01)  # >= 1 s of publishing: the restart lands in it

        publisher = asyncio.ensure_future(publish_all())
        await eventually(lambda: published >= 1000, 30, what="the burst under way", interval=0.001)
        await mosquitto.stop()
        at_stop = published
        await asyncio.sleep(1.0)
        await mosquitto.start()
        await publisher
        await eventually(lambda: len(seen) == total, 60, what=f"all {total} messages")
    assert first_seen == sorted(first_seen), "messages overtook each other"
    assert at_stop < total, "the burst was over before the broker stopped"
    assert burst.connection.connects >= 2


async def test_a_backlog_received_before_a_drop_is_handled_after_it(mosquitto, team) -> None:
    """A receiver busy with one message while more arrive (each QoS 1 message is
    acknowledged to the broker on receipt) loses its broker meanwhile: the messages it
    had received but not yet handled are handled after the drop, in order, none lost
    (the broker will not send them again)."""
    total = 400
    handled: list[int] = []
    busy, resume = asyncio.Event(), asyncio.Event()
    runtime = RuntimeSettings(keepalive_s=2)
    observer = Agent("observer", team=team, endpoint=mosquitto.endpoint, runtime=runtime)
    sender = Agent("sender", team=team, endpoint=mosquitto.endpoint, runtime=runtime)

    async def on_n(env, topic) -> None:
        n = env.body["n"]
        if n == 1:  # busy with the first while the rest arrive and are acknowledged
            busy.set()
            await resume.wait()
        handled.append(n)

    observer.on_agent("sender", "numbers", on_n, kind="n")
    async with asyncio.timeout(scaled(120)), observer, sender:
        await observer.wait_connected(10)
        await sender.wait_connected(10)
        await asyncio.sleep(0.3)  # the subscription is spawned on enter
        for n in range(1, total + 1):
            await sender.publish("numbers", "n", {"n": n})
        await busy.wait()
        out = sender.connection
        await eventually(lambda: out.outbox_size + out.inflight == 0, 30, what="every PUBACK")
        await asyncio.sleep(0.5)  # the observer's socket read whatever was still in flight
        await mosquitto.stop()
        # the observer's loop is held in its handler; its socket, read apart from it,
        # is closed as the sender's is
        await eventually(lambda: not sender.connection.connected.is_set(), 30, what="the drop")
        await asyncio.sleep(0.5)
        resume.set()
        await mosquitto.start()
        await eventually(lambda: len(handled) >= total, 30, what=f"all {total} handled")
    missing = sorted(set(range(1, total + 1)) - set(handled))
    assert not missing, f"lost {len(missing)}: {missing[:10]}"
    assert handled == sorted(handled), "handled out of order"
    assert observer.connection.handed_after_drop > 0
