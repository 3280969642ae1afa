"""The inbound queue: observations coalesce (newest wins), every other message is kept
in order; and aiomqtt's pending-publish bookkeeping without scans (FastClient)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents import Agent
from teamtree.broker import Endpoint, Envelope, Topic
from teamtree.broker.fast_client import FastClient
from teamtree.broker.inbound import (
    CRITICAL,
    NORMAL,
    URGENT_GATE_MAX_S,
    CoalescingQueue,
    UrgentGate,
    give_way_to_critical,
    urgent_gate,
)
from teamtree.broker.inbound import URGENT as URGENT_LANE

LATEST = frozenset({"obs/a", "obs/b"})


@dataclass
class _Message:
    topic: str
    n: int


def _drive(
    latest: frozenset[str], ops: list[tuple[str, str]]
) -> tuple[list[_Message], list[_Message]]:
    """Put and get as `ops` say, then drain; (what was put, what came out). Checks
    what holds for every queue: every message on another topic comes out, in order;
    on a latest-only topic never an older one after a newer one, always the newest;
    each message put either comes out or is counted coalesced."""
    q = CoalescingQueue(latest=latest)
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
    others = [m for m in put if m.topic not in latest]
    assert [m for m in got if m.topic not in latest] == others  # none shed, in order
    for topic in latest:
        sent = [m.n for m in put if m.topic == topic]
        seen = [m.n for m in got if m.topic == topic]
        assert seen == sorted(set(seen))  # never an older one after a newer one
        if sent:
            assert seen[-1] == sent[-1]  # the newest is always delivered
    assert len(got) + q.coalesced == len(put)
    return put, got


def _puts_and_gets(topics: list[str]) -> st.SearchStrategy[list[tuple[str, str]]]:
    """Up to 200 steps: put a message on one of `topics`, or get one."""
    return st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.sampled_from(topics)),
            st.tuples(st.just("get"), st.just("")),
        ),
        max_size=200,
    )


@given(_puts_and_gets(["obs/a", "obs/b", "claims", "state"]))
@settings(max_examples=300, deadline=None)
def test_queue_keeps_every_other_message_in_order_and_the_newest_observation(ops) -> None:
    put, got = _drive(LATEST, ops)
    # an observation never overtakes a message that arrived before it
    order = {id(m): i for i, m in enumerate(put)}
    assert [order[id(m)] for m in got] == sorted(order[id(m)] for m in got)


AGENT_TOPICS = ["teamtree/v1/t/d1/observation", "teamtree/v1/t/d1/progress",
                "teamtree/v1/t/d2/observation", "teamtree/v1/t/d2/snapshot",
                "teamtree/v1/t/d2/state", "teamtree/v1/t/_/mission"]  # fmt: skip
AGENT_LATEST = frozenset(AGENT_TOPICS[i] for i in (0, 2, 3))


def _sender(topic: str) -> str | None:
    agent = topic.split("/")[3]
    return None if agent == "_" else agent


@given(_puts_and_gets(AGENT_TOPICS))
@settings(max_examples=300, deadline=None)
def test_a_newer_observation_overtakes_only_other_senders_messages(ops) -> None:
    _put, got = _drive(AGENT_LATEST, ops)
    # nothing is handled before a message of the same sender (or of a team channel,
    # which may be anyone's) that was queued before it
    for i, early in enumerate(got):
        for late in got[i + 1 :]:
            a, b = _sender(early.topic), _sender(late.topic)
            if a is None or b is None or a == b:
                assert early.n < late.n, (early, late)


def test_a_steady_stream_of_other_senders_messages_does_not_starve_an_observation() -> None:
    """A busy agent always has other peers' messages ahead of the newest observation;
    each newer observation keeps the place of the one it replaces, so it reaches the
    front within one pass of what was queued before the first."""
    obs, other = "teamtree/v1/t/drv/observation", "teamtree/v1/t/p{}/snapshot"
    q = CoalescingQueue(latest=frozenset({obs}))
    for n in range(5):
        q.put_nowait(_Message(other.format(n), n))
    handled: list[str] = []
    for n in range(5, 40):
        q.put_nowait(_Message(obs, n))  # the driver's next observation
        q.put_nowait(_Message(other.format(n), n))  # another peer's message behind it
        handled.append(q.get_nowait().topic)
    assert obs in handled[:6], handled
    assert handled.count(obs) >= 3  # and again on later passes, not once


def test_an_observation_after_its_senders_other_message_goes_behind_it() -> None:
    """The driver's "behaviour finished" queued after an observation: the next
    observation may not take the older one's place (it would overtake the report)."""
    obs, progress = "teamtree/v1/t/drv/observation", "teamtree/v1/t/drv/progress"
    q = CoalescingQueue(latest=frozenset({obs}))
    q.put_nowait(_Message(obs, 0))
    q.put_nowait(_Message(progress, 1))
    q.put_nowait(_Message(obs, 2))
    assert [q.get_nowait().n for _ in range(2)] == [1, 2]
    assert q.empty() and q.coalesced == 1


URGENT = frozenset({"claims", "claim_reply", "state"})
CRITICAL_CHANNELS = frozenset({"claims", "claim_reply"})  # urgent too: critical wins
T = "teamtree/v1/t"
TOPICS = [f"{T}/a/observation", f"{T}/_/claims", f"{T}/a/claim_reply/b", f"{T}/a/snapshot",
          f"{T}/a/claims/b", f"{T}/a/state", f"{T}/b/state"]  # fmt: skip


@given(_puts_and_gets(TOPICS))
@settings(max_examples=300, deadline=None)
def test_critical_then_urgent_channels_are_served_first_and_each_lane_keeps_its_order(
    ops,
) -> None:
    q = CoalescingQueue(latest=frozenset({TOPICS[0]}), urgent=URGENT, critical=CRITICAL_CHANNELS)
    put: list[_Message] = []
    got: list[_Message] = []
    waiting: dict[int, list[_Message]] = {CRITICAL: [], URGENT_LANE: []}  # not yet taken

    def lane(m: _Message) -> int:
        channel = m.topic.split("/")[4]
        if channel in CRITICAL_CHANNELS:
            return CRITICAL
        return URGENT_LANE if channel in URGENT else NORMAL

    for n, (op, topic) in enumerate(ops):
        if op == "put":
            m = _Message(topic, n)
            q.put_nowait(m)
            put.append(m)
            assert q.lane_of(topic) == lane(m)
            if lane(m) != NORMAL:
                waiting[lane(m)].append(m)
        elif not q.empty():
            m = q.get_nowait()
            assert q.taken_lane == lane(m)
            # the oldest critical message if one waits, else the oldest urgent one
            for each in (CRITICAL, URGENT_LANE):
                if waiting[each]:
                    assert m is waiting[each].pop(0), (m, waiting)
                    break
            got.append(m)
        assert q.urgent_waiting() == bool(waiting[CRITICAL] or waiting[URGENT_LANE])
        assert q.urgent_waiting(above=URGENT_LANE) == bool(waiting[CRITICAL])
        assert not q.urgent_waiting(above=CRITICAL)
        assert q.qsize() == len(put) - len(got) - q.coalesced
    while not q.empty():
        got.append(q.get_nowait())
    assert q.qsize() == 0
    for each in (CRITICAL, URGENT_LANE):  # all, in order
        assert [m for m in got if lane(m) == each] == [m for m in put if lane(m) == each]
    plain = [m for m in put if lane(m) == NORMAL and m.topic != TOPICS[0]]
    assert [m for m in got if lane(m) == NORMAL and m.topic != TOPICS[0]] == plain
    assert len(got) + q.coalesced == len(put)


async def test_a_busy_agent_answers_critical_claims_before_its_backlog(mosquitto, team) -> None:
    """A robot busy on a backlog of snapshots and transitions takes the transitions
    that arrive behind the snapshots before them, and a claim that arrives behind both
    before either (the peer rule marks claims and replies critical, transitions
    urgent)."""
    endpoint = mosquitto.endpoint
    sender = Agent("peer", team=team, endpoint=endpoint)
    receiver = Agent("rob", team=team, endpoint=endpoint)
    order: list[str] = []

    def busy(kind: str):
        async def handler(env: Envelope, topic: Topic) -> None:
            order.append(kind)
            time.sleep(0.01)  # busy: later messages pile up in the queue meanwhile

        return handler

    receiver.on_agents("snapshot", busy("snapshot"), kind="node.snapshot")
    receiver.on_agents("state", busy("transition"), kind="node.transition")
    receiver.on_team("claims", busy("claim"), kind="node.claim")
    receiver.urgent("claims", critical=True)
    receiver.urgent("state")
    async with sender, receiver:
        await sender.wait_connected(10)
        await receiver.wait_connected(10)
        await asyncio.sleep(0.3)  # subscriptions are in place
        for n in range(30):
            await sender.publish("snapshot", "node.snapshot", {"n": n})
        for n in range(20):
            await sender.publish("state", "node.transition", {"n": n})
        await sender.publish("claims", "node.claim", {"n": 0}, team=True)
        deadline = time.monotonic() + 15
        while len(order) < 51 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    assert (order.count("snapshot"), order.count("transition"), order.count("claim")) == (
        30,
        20,
        1,
    ), order
    # the claim came last at the broker; it is taken while most transitions still wait,
    # and every transition before the snapshots that were still queued
    assert order.index("claim") < 15, order
    last_transition = len(order) - 1 - order[::-1].index("transition")
    assert order[last_transition + 1 :] == ["snapshot"] * (len(order) - last_transition - 1)
    assert order.count("snapshot") - order[: last_transition + 1].count("snapshot") > 10, order


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


# -- the process-wide urgent gate ------------------------------------------------------

URGENT = frozenset({"claims"})
CLAIM = "teamtree/v1/t/pr2/claims"
OBSERVATION = "teamtree/v1/t/pr2/observation"


def test_a_non_urgent_message_gives_way_until_another_agents_claim_is_taken() -> None:
    async def scenario() -> list[str]:
        mine = CoalescingQueue(urgent=URGENT)
        theirs = CoalescingQueue(urgent=URGENT)
        order: list[str] = []
        theirs.put_nowait(_Message(CLAIM, 1))
        mine.put_nowait(_Message(OBSERVATION, 2))

        async def me() -> None:
            message = mine.get_nowait()
            await mine.give_way()
            order.append(f"me handles {message.n}")

        async def them() -> None:
            await asyncio.sleep(0)  # they come second in the loop
            await asyncio.sleep(0)
            order.append(f"they take {theirs.get_nowait().n}")

        await asyncio.gather(me(), them())
        return order

    assert asyncio.run(scenario()) == ["they take 1", "me handles 2"]


def test_the_gate_lets_an_agent_serve_its_own_claims_and_is_bounded() -> None:
    async def scenario() -> dict[str, float]:
        mine = CoalescingQueue(urgent=URGENT)
        stuck = CoalescingQueue(urgent=URGENT)
        stuck.put_nowait(_Message(CLAIM, 1))  # never taken: its agent is stuck
        stuck_since = time.monotonic()
        mine.put_nowait(_Message(CLAIM, 2))
        seen: dict[str, float] = {}
        gate = urgent_gate()
        # our own claim is queued: we must serve it (they may wait on our reply)
        await asyncio.wait_for(mine.give_way(), 1.0)
        seen["waits with own claim queued"] = gate.waits
        mine.get_nowait()
        # nothing of ours is urgent, theirs is: we wait, at most the bound
        waits = gate.waits
        await asyncio.wait_for(mine.give_way(), 5.0)
        seen["waits with theirs queued"] = gate.waits - waits
        seen["held after theirs came"] = time.monotonic() - stuck_since
        # held past the bound, it holds nobody back any more
        waits = gate.waits
        await mine.give_way()
        seen["waits once theirs is stale"] = gate.waits - waits
        # a fresh claim elsewhere holds us until its session ends (released)
        fresh = CoalescingQueue(urgent=URGENT)
        fresh.put_nowait(_Message(CLAIM, 3))
        order: list[str] = []

        async def end_session() -> None:
            await asyncio.sleep(0)
            order.append("released")
            fresh.release()

        async def me() -> None:
            await mine.give_way()
            order.append("me")

        await asyncio.gather(me(), end_session())
        seen["me after release"] = float(order == ["released", "me"])
        return seen

    seen = asyncio.run(scenario())
    assert seen["waits with own claim queued"] == 0, seen
    assert seen["waits with theirs queued"] == 1, seen
    assert seen["held after theirs came"] >= URGENT_GATE_MAX_S * 0.9, seen
    assert seen["waits once theirs is stale"] == 0, seen
    assert seen["me after release"] == 1.0, seen


TRANSITION = "teamtree/v1/t/pr2/state"


def test_a_transition_gives_way_only_to_another_agents_claim_and_a_claim_to_none() -> None:
    """Lanes across agents: an urgent message (a transition) waits while another agent
    holds a critical one (a claim or reply), not while it holds an urgent one; a
    critical message never waits."""

    async def scenario() -> dict[str, int]:
        mine = CoalescingQueue(urgent=frozenset({"state", "claims"}), critical=URGENT)
        theirs = CoalescingQueue(urgent=frozenset({"state", "claims"}), critical=URGENT)
        gate, seen = urgent_gate(), {}
        theirs.put_nowait(_Message(TRANSITION, 1))
        waits = gate.waits
        await asyncio.wait_for(mine.give_way(URGENT_LANE), 1.0)  # theirs is only urgent
        seen["transition behind their transition"] = gate.waits - waits
        theirs.put_nowait(_Message(CLAIM, 2))
        waits = gate.waits
        await asyncio.wait_for(mine.give_way(CRITICAL), 1.0)
        seen["claim behind their claim"] = gate.waits - waits
        order: list[str] = []

        async def me() -> None:
            await mine.give_way(URGENT_LANE)
            order.append("my transition")

        async def them() -> None:
            await asyncio.sleep(0)
            order.append(f"their {theirs.get_nowait().n}")  # the claim, critical first
            await asyncio.sleep(0)
            order.append(f"their {theirs.get_nowait().n}")

        await asyncio.gather(me(), them())
        seen["my transition after their claim"] = int(
            order.index("my transition") > order.index("their 2")
        )
        return seen

    seen = asyncio.run(scenario())
    assert seen == {
        "transition behind their transition": 0,
        "claim behind their claim": 0,
        "my transition after their claim": 1,
    }, seen


def test_ticks_and_polls_give_way_to_a_claim_not_to_a_transition() -> None:
    """Work outside the handlers (``give_way_to_critical``: ticks, a driver's polls)
    waits while an agent of the loop has a claim or reply queued, not for transitions."""

    async def scenario() -> dict[str, int]:
        q = CoalescingQueue(urgent=frozenset({"state", "claims"}), critical=URGENT)
        gate, seen = urgent_gate(), {}
        q.put_nowait(_Message(TRANSITION, 1))
        waits = gate.waits
        await asyncio.wait_for(give_way_to_critical(), 1.0)
        seen["waits behind a transition"] = gate.waits - waits
        q.put_nowait(_Message(CLAIM, 2))
        order: list[str] = []

        async def tick() -> None:
            await give_way_to_critical()
            order.append("tick")

        async def reader() -> None:
            await asyncio.sleep(0)
            order.append(f"claim {q.get_nowait().n}")

        await asyncio.gather(tick(), reader())
        seen["tick after the claim"] = int(order == ["claim 2", "tick"])
        return seen

    assert asyncio.run(scenario()) == {"waits behind a transition": 0, "tick after the claim": 1}


def test_a_tick_waits_for_claims_at_most_the_bound_however_many_come() -> None:
    """A stream of fresh claims, each in a queue of its own and never served, does not
    hold a tick (a lease's renewal) back past ``URGENT_GATE_MAX_S`` in all."""

    async def scenario() -> list[str]:
        order: list[str] = []
        keep: list[CoalescingQueue] = []

        async def stream() -> None:
            for n in range(40):  # a new claim every 25 ms for a second
                q = CoalescingQueue(critical=URGENT)
                q.put_nowait(_Message(CLAIM, n))
                keep.append(q)
                await asyncio.sleep(0.025)
            order.append("stream over")

        async def tick() -> None:
            await asyncio.sleep(0.1)  # claims are coming
            await give_way_to_critical()
            order.append("tick")

        await asyncio.gather(stream(), tick())
        return order

    assert asyncio.run(scenario()) == ["tick", "stream over"]


def test_each_event_loop_has_its_own_gate() -> None:
    async def gate() -> UrgentGate:
        return urgent_gate()

    first, second = asyncio.run(gate()), asyncio.run(gate())
    assert first is not second
    assert not second.busy  # what one loop left queued does not hold the next back


GATE_OPS = st.tuples(
    st.integers(0, 2),
    st.sampled_from(["put claim", "put transition", "put observation", "get", "release"]),
)
"""One step of the gate's property tests: what happens to which of three queues."""


def _gate_queue() -> CoalescingQueue:
    return CoalescingQueue(urgent=frozenset({"state", "claims"}), critical=URGENT)


def _apply(queues: list[CoalescingQueue], i: int, op: str, n: int) -> None:
    """Carry out step `n` (`op` on queue `i`); a session's end puts a new queue there."""
    q = queues[i]
    if op in ("put claim", "put transition"):
        q.put_nowait(_Message(CLAIM if op == "put claim" else TRANSITION, n))
    elif op == "put observation":
        q.put_nowait(_Message(OBSERVATION, n))
    elif op == "get" and not q.empty():
        q.get_nowait()
    elif op == "release":
        q.release()
        queues[i] = _gate_queue()


@given(st.lists(GATE_OPS, max_size=120))
@settings(max_examples=300, deadline=None)
def test_the_gate_holds_a_lane_back_exactly_while_another_live_queue_holds_a_higher_one(
    ops,
) -> None:
    """Against a model: the gate is busy while a live queue (its session not over)
    holds an urgent or critical message, and a queue's message of lane L is held back
    exactly while another live queue holds one of a higher lane and it holds none itself
    (the bound in time set out of reach here). A session's end releases its queue; the
    next session reads into a new one."""
    import teamtree.broker.inbound as inbound

    async def scenario() -> None:
        queues = [_gate_queue() for _ in range(3)]
        gate = urgent_gate()
        for n, (i, op) in enumerate(ops):
            _apply(queues, i, op, n)
            holds = [[q.urgent_waiting(above=lane) for lane in range(3)] for q in queues]
            assert gate.busy == any(h[NORMAL] for h in holds), ops[: n + 1]
            background = gate._held_until(None, URGENT_LANE) is not None  # ticks, polls
            assert background == any(h[URGENT_LANE] for h in holds), ops[: n + 1]
            for j in range(3):
                for lane in (NORMAL, URGENT_LANE, CRITICAL):
                    held = not holds[j][lane] and any(holds[k][lane] for k in range(3) if k != j)
                    got = gate._held_until(queues[j], lane) is not None
                    assert got == held, (ops[: n + 1], j, lane)

    bound, inbound.URGENT_GATE_MAX_S = inbound.URGENT_GATE_MAX_S, 3600.0
    try:
        asyncio.run(scenario())
    finally:
        inbound.URGENT_GATE_MAX_S = bound


@given(st.lists(GATE_OPS, max_size=80))
@settings(max_examples=200, deadline=None)
def test_a_waiting_handler_goes_on_within_a_loop_turn_of_its_wait_ending_and_not_before(
    ops,
) -> None:
    """Handlers of each queue and lane (and work outside any queue) wait at the gate
    through random puts, takes and session ends: after every step, a wait has ended
    exactly when the gate no longer holds it back, and each ended within a few loop
    turns of that (it was woken, not left to its timer: the bound is out of reach
    here). A queue whose session ended takes its waiting handlers with it."""
    import teamtree.broker.inbound as inbound

    async def scenario() -> None:
        queues = [_gate_queue() for _ in range(3)]
        gate = urgent_gate()
        waits: dict[tuple[int, int], asyncio.Future[None]] = {}
        for n, (i, op) in enumerate(ops):
            _apply(queues, i, op, n)
            if op == "release":
                for lane in (NORMAL, URGENT_LANE):
                    waiting = waits.pop((i, lane), None)
                    if waiting is not None:
                        waiting.cancel()
            for j in (0, 1, 2, 3):  # 3: work outside any queue (ticks, polls)
                for lane in (NORMAL, URGENT_LANE):
                    if (j, lane) not in waits and (j < 3 or lane == URGENT_LANE):
                        own = queues[j] if j < 3 else None
                        waits[(j, lane)] = asyncio.ensure_future(gate.wait_clear(own, lane))
            for _ in range(4):
                await asyncio.sleep(0)
            for (j, lane), waiting in list(waits.items()):
                held = gate._held_until(queues[j] if j < 3 else None, lane) is not None
                assert waiting.done() == (not held), (ops[: n + 1], j, lane)
                if waiting.done():
                    del waits[(j, lane)]
        for waiting in waits.values():
            waiting.cancel()
        assert gate.rewaits == 0  # nobody was woken while still held back

    bound, inbound.URGENT_GATE_MAX_S = inbound.URGENT_GATE_MAX_S, 3600.0
    try:
        asyncio.run(scenario())
    finally:
        inbound.URGENT_GATE_MAX_S = bound


def test_waiting_handlers_are_not_woken_by_other_agents_lanes_filling_and_emptying(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten agents' handlers wait behind one agent's claim while other agents' queues
    fill and empty their urgent lanes a hundred times: none of the ten is woken until
    the claim is taken, and then all are, at once (waking them on every change put
    a task wake-up per waiting agent on the loop's ready queue each time, ahead of the
    reader that held the claim). The bound in time is set out of reach: on a busy
    machine the hundred rounds can outlast it, and its timer would wake them."""
    import teamtree.broker.inbound as inbound

    monkeypatch.setattr(inbound, "URGENT_GATE_MAX_S", 3600.0)

    async def scenario() -> tuple[int, int, int]:
        gate = urgent_gate()
        holder = CoalescingQueue(critical=URGENT)
        holder.put_nowait(_Message(CLAIM, 0))
        mine = [CoalescingQueue(critical=URGENT) for _ in range(10)]
        waiting = [asyncio.ensure_future(q.give_way()) for q in mine]
        busy = CoalescingQueue(urgent=frozenset({"state"}), critical=URGENT)
        for n in range(100):
            busy.put_nowait(_Message(TRANSITION, n))
            await asyncio.sleep(0)
            busy.get_nowait()
            await asyncio.sleep(0)
        early = sum(w.done() for w in waiting)
        holder.get_nowait()
        for _ in range(3):
            await asyncio.sleep(0)
        return early, sum(w.done() for w in waiting), gate.rewaits

    early, after, rewaits = asyncio.run(scenario())
    assert (early, after, rewaits) == (0, 10, 0)


def test_a_queue_dropped_without_its_release_holds_no_one_back() -> None:
    """The gate holds the queues weakly: one that is garbage while it still holds a
    claim (its session never released it) stops holding the others at once."""
    import gc

    async def scenario() -> None:
        gate = urgent_gate()
        other = _gate_queue()
        dropped = _gate_queue()
        dropped.put_nowait(_Message(CLAIM, 0))
        assert gate.busy and gate._held_until(other, NORMAL) is not None
        del dropped
        gc.collect()
        assert not gate.busy and gate._held_until(other, NORMAL) is None

    asyncio.run(scenario())
