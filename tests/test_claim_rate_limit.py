"""The claim buckets: what a token bucket lets through in any window, that a table of
them stays bounded whoever floods it, and that honest members never hit theirs (the
peer rule's own traffic, from the network simulation, passes the bucket the robots
use: ``claim_limits``). Hypothesis prints the falsifying example; the simulation's
seed is in every assertion message."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.rate_limit import SenderBuckets, TokenBucket
from teamtree.agents.treeprotocol.peer_member import claim_limits
from teamtree.planners.tasktree import Claim, Interest, NetworkModel, SimConfig, parse_tree
from teamtree.planners.tasktree.peer_sim import _Sim
from tests.test_tasktree_property import tree_texts, wide_tree_texts

gaps = st.lists(st.floats(0.0, 2.0, allow_nan=False), min_size=1, max_size=150)


def _times(steps: list[float]) -> list[float]:
    return list(itertools.accumulate(steps))


@given(rate=st.floats(0.5, 100.0), burst=st.integers(1, 50), steps=gaps)
def test_a_bucket_lets_through_at_most_burst_plus_rate_times_any_window(
    rate: float, burst: int, steps: list[float]
) -> None:
    times = _times([s / rate for s in steps])  # gaps on the bucket's own time scale
    bucket = TokenBucket(rate, burst, times[0])
    passed = [t for t in times if bucket.take(t)]
    for i, start in enumerate(passed):
        for j in range(i, len(passed)):
            inside = j - i + 1
            assert inside <= burst + rate * (passed[j] - start) + 1e-9, (i, j, passed)


@given(rate=st.floats(0.5, 100.0), burst=st.integers(1, 50), steps=gaps)
def test_a_sender_within_its_rate_is_never_refused(
    rate: float, burst: int, steps: list[float]
) -> None:
    times = _times([1.0 / rate + s for s in steps])  # at least 1/rate apart
    bucket = TokenBucket(rate, burst, 0.0)
    assert all(bucket.take(t) for t in times)


def test_a_full_bucket_takes_a_burst_at_once_then_refuses() -> None:
    bucket = TokenBucket(10.0, 5, 100.0)
    assert [bucket.take(100.0) for _ in range(6)] == [True] * 5 + [False]
    assert [bucket.take(100.25) for _ in range(3)] == [True, True, False]
    assert not bucket.take(50.0), "a clock that went back adds no token"


@given(
    senders=st.lists(st.integers(0, 5000), min_size=1, max_size=400),
    max_senders=st.integers(1, 64),
)
def test_a_table_of_buckets_stays_bounded_whoever_sends(
    senders: list[int], max_senders: int
) -> None:
    table = SenderBuckets(5.0, 3, max_senders)
    for i, sender in enumerate(senders):
        table.allow(f"s{sender}", i * 0.001)
        assert len(table) <= max_senders


@given(
    flood=st.lists(st.integers(0, 3), min_size=1, max_size=600),
    honest_gap=st.floats(0.0, 1.0),
)
def test_an_honest_sender_is_never_refused_while_others_flood(
    flood: list[int], honest_gap: float
) -> None:
    rate, burst = 20.0, 8
    table = SenderBuckets(rate, burst, max_senders=8)  # room for every sender here
    now, next_honest = 0.0, 0.0
    for sender in flood:
        now += 0.0005
        table.allow(f"flood{sender}", now)
        if now >= next_honest:
            assert table.allow("honest", now), f"refused at {now}"
            next_honest = now + 1.0 / rate + honest_gap


@st.composite
def big_tree_texts(draw: st.DrawFn) -> str:
    """An AND of 5-30 small goals: many leaves, many claims."""
    counter = itertools.count()
    parts = []
    for _ in range(draw(st.integers(5, 30))):
        kind = draw(st.sampled_from(["THEN", "AND", "OR"]))
        leaves = ", ".join(f"l{next(counter)}" for _ in range(draw(st.integers(1, 4))))
        parts.append(f"{kind}({leaves})")
    return f"AND({', '.join(parts)})"


def _sim_settings(examples: int) -> Any:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=True,
    )


class _Recording(_Sim):
    """The simulation, keeping each claim and declaration as it reaches a peer (each
    copy once: a duplicate is dropped before the bucket, by the receiver's dedup)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.arrivals: list[tuple[float, str, str, Any]] = []  # time, sender, receiver, msg
        self._seen: set[tuple[str, int]] = set()

    def push(self, t: float, kind: str, payload: Any) -> None:
        if kind == "deliver":
            q, msg, sender = payload
            key = (q, id(msg))
            if isinstance(msg, Claim | Interest) and key not in self._seen:
                self._seen.add(key)
                self.arrivals.append((t, sender, q, msg))
        super().push(t, kind, payload)


@_sim_settings(120)
@given(
    text=st.one_of(tree_texts(), wide_tree_texts(), big_tree_texts()),
    n_robots=st.integers(2, 8),
    capacity=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    max_delay=st.sampled_from([0.001, 0.02, 0.1, 0.3]),
    duplicate_p=st.sampled_from([0.0, 0.3]),
    reorder=st.booleans(),
    avoid_contention=st.booleans(),
    declared_interest=st.booleans(),
    tick=st.sampled_from([0.01, 0.05, 0.1]),
)
def test_the_peer_rule_sends_a_peer_half_the_claim_buckets_rate_at_most(
    text: str,
    n_robots: int,
    capacity: int,
    seed: int,
    max_delay: float,
    duplicate_p: float,
    reorder: bool,
    avoid_contention: bool,
    declared_interest: bool,
    tick: float,
) -> None:
    tree = parse_tree(text)
    cfg = SimConfig(
        robots=tuple(f"r{i}" for i in range(n_robots)),
        seed=seed,
        network=NetworkModel(max_delay=max_delay, duplicate_p=duplicate_p, reorder=reorder),
        tick=tick,
        capacity=capacity,
        avoid_contention=avoid_contention,
        declared_interest=declared_interest,
        time_limit=600.0,
        duration=(0.05, 0.5),
    )
    sim = _Recording(tree, cfg)
    result = sim.run()
    rate, burst = claim_limits(1.0 / tick, len(tree.leaves))
    rate, burst = rate / 2, burst / 4  # with room to spare: the derivation's 2 a tick
    buckets: dict[tuple[str, str, str], TokenBucket] = {}
    for t, sender, receiver, msg in sim.arrivals:
        what = type(msg).__name__
        bucket = buckets.setdefault((sender, receiver, what), TokenBucket(rate, burst, t))
        assert bucket.take(t), (
            f"{receiver} would refuse {sender}'s {what} at t={t:.3f}s (half the bucket's rate "
            f"{rate}/s, a quarter of its burst "
            f"{burst}): {result.summary()} tree={text} config={cfg}"
        )
