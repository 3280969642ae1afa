"""The inbound queue: observations coalesce (newest wins), every other message is kept
in order; and aiomqtt's pending-publish bookkeeping without scans (FastClient)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents import Agent
from teamtree.broker import Endpoint, Envelope, Topic
from teamtree.broker.fast_client import FastClient
from teamtree.broker.inbound import CoalescingQueue

LATEST = frozenset({"obs/a", "obs/b"})


@dataclass
class _Message:
    topic: str
    n: int


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.sampled_from(["obs/a", "obs/b", "claims", "state"])),
            st.tuples(st.just("get"), st.just("")),
        ),
        max_size=200,
    )
)
@settings(max_examples=300, deadline=None)
def test_queue_keeps_every_other_message_in_order_and_the_newest_observation(ops) -> None:
    q = CoalescingQueue(latest=LATEST)
    put: list[_Message] = []
    got: list[_Message] = []
    for n, (op, topic) in enumerate(ops):
        if op == "put":
            m = _Message(topic, n)
            q.put_nowait(m)
            put.append(m)
        elif not q.empty():
            got.append(q.get_nowait())
    while not q.empty():
        got.append(q.get_nowait())
    others = [m for m in put if m.topic not in LATEST]
    assert [m for m in got if m.topic not in LATEST] == others  # none shed, in order
    for topic in LATEST:
        sent = [m.n for m in put if m.topic == topic]
        seen = [m.n for m in got if m.topic == topic]
        assert seen == sorted(set(seen))  # never an older one after a newer one
        if sent:
            assert seen[-1] == sent[-1]  # the newest is always delivered
        assert q.coalesced >= 0
    assert len(got) + q.coalesced == len(put)
    # an observation never overtakes a message that arrived before it
    order = {id(m): i for i, m in enumerate(put)}
    assert [order[id(m)] for m in got] == sorted(order[id(m)] for m in got)


URGENT = frozenset({"claims", "claim_reply"})
T = "teamtree/v1/t"
TOPICS = [f"{T}/a/observation", f"{T}/_/claims", f"{T}/a/claim_reply/b", f"{T}/a/snapshot",
          f"{T}/a/claims/b", f"{T}/a/state"]  # fmt: skip


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.sampled_from(TOPICS)),
            st.tuples(st.just("get"), st.just("")),
        ),
        max_size=200,
    )
)
@settings(max_examples=300, deadline=None)
def test_urgent_channels_are_served_first_and_each_lane_keeps_its_order(ops) -> None:
    q = CoalescingQueue(latest=frozenset({TOPICS[0]}), urgent=URGENT)
    put: list[_Message] = []
    got: list[_Message] = []
    waiting: list[_Message] = []  # urgent messages put and not yet taken

    def urgent(m: _Message) -> bool:
        return m.topic.split("/")[4] in URGENT

    for n, (op, topic) in enumerate(ops):
        if op == "put":
            m = _Message(topic, n)
            q.put_nowait(m)
            put.append(m)
            if urgent(m):
                waiting.append(m)
        elif not q.empty():
            m = q.get_nowait()
            if waiting:  # an urgent message waits: it is the one taken, the oldest first
                assert m is waiting.pop(0), (m, waiting)
            got.append(m)
        assert q.qsize() == len(put) - len(got) - q.coalesced
    while not q.empty():
        got.append(q.get_nowait())
    assert q.qsize() == 0
    assert [m for m in got if urgent(m)] == [m for m in put if urgent(m)]  # all, in order
    plain = [m for m in put if not urgent(m) and m.topic != TOPICS[0]]
    assert [m for m in got if not urgent(m) and m.topic != TOPICS[0]] == plain
    assert len(got) + q.coalesced == len(put)


async def test_a_busy_agent_answers_urgent_claims_before_its_backlog(mosquitto, team) -> None:
    """A robot busy on a backlog of snapshots takes a claim that arrives behind them
    next, not after them (the peer rule marks claims and replies urgent)."""
    endpoint = mosquitto.endpoint
    sender = Agent("peer", team=team, endpoint=endpoint)
    receiver = Agent("rob", team=team, endpoint=endpoint)
    order: list[str] = []

    async def on_snapshot(env: Envelope, topic: Topic) -> None:
        order.append("snapshot")
        time.sleep(0.01)  # busy: later messages pile up in the queue meanwhile

    async def on_claim(env: Envelope, topic: Topic) -> None:
        order.append("claim")

    receiver.on_agents("snapshot", on_snapshot, kind="node.snapshot")
    receiver.on_team("claims", on_claim, kind="node.claim")
    receiver.urgent("claims")
    async with sender, receiver:
        await sender.wait_connected(10)
        await receiver.wait_connected(10)
        await asyncio.sleep(0.3)  # subscriptions are in place
        for n in range(40):
            await sender.publish("snapshot", "node.snapshot", {"n": n})
        await sender.publish("claims", "node.claim", {"n": 0}, team=True)
        deadline = time.monotonic() + 15
        while len(order) < 41 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    assert order.count("snapshot") == 40 and order.count("claim") == 1, order
    # the claim came last at the broker; it is taken while most snapshots still wait
    assert order.index("claim") < 20, order


async def test_a_busy_agent_skips_stale_observations_but_no_claim(mosquitto, team) -> None:
    endpoint = mosquitto.endpoint
    sender = Agent("drv", team=team, endpoint=endpoint)
    receiver = Agent("rob", team=team, endpoint=endpoint)
    observations: list[int] = []
    claims: list[int] = []

    async def on_observation(env: Envelope, topic: Topic) -> None:
        observations.append(env.body["n"])
        time.sleep(0.02)  # a busy robot: the loop is blocked while it works

    async def on_claim(env: Envelope, topic: Topic) -> None:
        claims.append(env.body["n"])

    receiver.on_agent("drv", "observation", on_observation, kind="observation", latest=True)
    receiver.on_team("claims", on_claim, kind="node.claim")
    async with sender, receiver:
        await sender.wait_connected(10)
        await receiver.wait_connected(10)
        await asyncio.sleep(0.3)  # subscriptions are in place
        for n in range(60):
            await sender.publish("observation", "observation", {"n": n}, qos=0)
            await sender.publish("claims", "node.claim", {"n": n}, team=True)
        deadline = time.monotonic() + 15
        while (len(claims) < 60 or observations[-1:] != [59]) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    assert claims == list(range(60)), "every claim, in order"
    assert observations[-1] == 59, "the newest observation is handled"
    assert observations == sorted(set(observations))
    assert len(observations) < 60, "stale observations were skipped"
    assert receiver.connection.coalesced == 60 - len(observations)


async def test_fast_client_acknowledges_a_burst_and_keeps_no_pending(mosquitto) -> None:
    endpoint: Endpoint = mosquitto.endpoint
    async with FastClient(
        endpoint.host, endpoint.port, max_inflight_messages=200, timeout=120
    ) as client:
        await asyncio.gather(*(client.publish("burst/t", b"x", qos=1) for _ in range(1000)))
        assert client._pending_publishes == {}
