"""An agent's receive path: hostile input is dropped, counted and logged; never raised."""

from __future__ import annotations

import asyncio

import msgpack
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamtree.agents import Agent, Presence
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build

TEAM = "t1"


def make_agent() -> Agent:
    return Agent("obs", team=TEAM, endpoint=Endpoint("127.0.0.1", 1))


def envelope(sender: str, kind: str = "presence", body: object = None, hid: int = 1) -> bytes:
    return encode(Envelope(kind, sender, hid, 1, HlcStamp(1, 0, sender), body))


topics = st.sampled_from(
    [
        build(TEAM, "bob", "connection"),
        build(TEAM, "bob", "factsheet"),
        build(TEAM, None, "hello"),
        build(TEAM, "bob", "reply", "obs"),
        "teamtree/v1/other/bob/connection",
        "teamtree/v1/t1/bad id/connection",
        "random/topic",
    ]
)
payloads = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda d: msgpack.packb(d, use_bin_type=True), st.dictionaries(st.text(max_size=6), st.integers(-(2**31), 2**31) | st.text(max_size=6), max_size=6)),
    st.builds(lambda b: envelope("bob", "presence", b), st.none() | st.integers(-(2**31), 2**31) | st.dictionaries(st.text(max_size=6), st.text(max_size=6))),
    st.just(b"\x00" * 300_000),
)  # fmt: skip


@given(st.lists(st.tuples(topics, payloads, st.booleans()), max_size=20))
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_hostile_messages_never_raise_and_are_counted(messages: list) -> None:
    agent = make_agent()

    async def feed() -> None:
        for topic, payload, retain in messages:
            await agent.receiver.receive(Incoming(topic, payload, retain, 1))

    asyncio.run(feed())
    assert agent.stats["received"] == len(messages)
    assert agent.stats["handler_errors"] == 0


def test_drops_are_logged_with_the_sender() -> None:
    agent = make_agent()
    with structlog.testing.capture_logs() as logs:
        asyncio.run(
            agent.receiver.receive(
                Incoming(build(TEAM, "bob", "connection"), b"\xc1junk", False, 1)
            )
        )
    assert agent.stats["dropped.malformed"] == 1
    assert logs[0]["event"] == "message.dropped" and logs[0]["sender"] == "bob"


def test_sender_must_equal_topic_agent() -> None:
    agent = make_agent()
    forged = envelope("mallory", body={"state": "ONLINE"})
    asyncio.run(agent.receiver.receive(Incoming(build(TEAM, "bob", "connection"), forged, True, 1)))
    assert agent.stats["dropped.sender_mismatch"] == 1
    assert agent.team_view.get("bob") is None and agent.team_view.get("mallory") is None
    honest = envelope("bob", body={"state": "ONLINE"})
    asyncio.run(agent.receiver.receive(Incoming(build(TEAM, "bob", "connection"), honest, True, 1)))
    assert agent.team_view.get("bob").presence is Presence.ONLINE


def test_duplicates_are_dropped_and_handlers_survive_errors() -> None:
    agent = make_agent()
    calls: list[int] = []

    async def handler(env, topic) -> None:
        calls.append(env.hid)
        raise RuntimeError("handler bug")

    agent.routes.handlers[("team", "hello")] = [(None, handler)]
    topic = build(TEAM, None, "hello")

    async def feed() -> None:
        for hid in (1, 1, 2):
            await agent.receiver.receive(
                Incoming(topic, envelope("bob", "hello.ping", hid=hid), False, 1)
            )

    asyncio.run(feed())
    assert calls == [1, 2]
    assert agent.stats["duplicates"] == 1 and agent.stats["handler_errors"] == 2
