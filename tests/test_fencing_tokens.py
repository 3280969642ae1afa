"""Fencing and leases that survive clock skew, on the pure simulated world through its
wire dispatcher (``sim_protocol.serve``), and the pure watches beside them.

The world grants each command on an object the next number of the object's counter
(``Fences``) and reads lease deadlines on its own clock from the sender's send time
(``LeaseClocks``). The property tests run a holder and a successor whose clocks are
up to two hours off the world's, with random message delays: the successor is never
refused for its clock, the holder's body has stopped before the successor's starts,
and a command held up past its lease is refused. Hypothesis prints the falsifying
example (offsets, delays and times are its arguments).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.clock_skew import SkewWatch
from teamtree.broker.hlc import CLOCK_OFFSET_ENV, clock_offset_ms
from teamtree.hardware.lease_clocks import LeaseClocks
from teamtree.hardware.sim_protocol import serve
from teamtree.hardware.sim_wire import ExecuteRequest, RenewRequest
from teamtree.hardware.world import Fences, World
from teamtree.planners.tasktree import (
    CrashSpec,
    LeaseTerms,
    NetworkModel,
    SimConfig,
    StallWatch,
    check_invariants,
    parse_tree,
    simulate,
)

LEASE = LeaseTerms()  # 3 s lease, 0.5 s renewals, 1 s margin
T0_MS = 1_800_000_000_000  # the world's wall clock at simulated time 0


def _world() -> World:
    """Bodies ``a`` and ``b`` that can both place the cup, a PLACE of about 8 s (longer
    than a holder that renews at most 4 s and then dies keeps its lease)."""
    return World.from_spec(
        {
            "cup": {
                "shape": "cylinder",
                "dims": [0.04, 0.1],
                "position": [0.5, 0.0, 0.8],
                "goal": [-0.3, 0.5, 0.8],
            }
        },
        {"a": {"profile": "pr2", "base": [0, 0, 0]}, "b": {"profile": "pr2", "base": [1, 0, 0]}},
    )


class _Holder:
    """A robot whose clock is `offset_ms` off the world's, sending commands for body
    `body` that reach the world `delay` seconds after it sent them."""

    def __init__(self, body: str, offset_ms: int) -> None:
        self.body, self.offset_ms, self.clock = body, offset_ms, f"{body}-s1"
        self.rid = 0

    def _stamp(self, sent_s: float) -> tuple[int, int]:
        sent_ms = T0_MS + round(sent_s * 1000) + self.offset_ms
        return sent_ms, LEASE.deadline_ms(sent_ms)

    def execute(self, w: World, command_id: str, sent_s: float, delay: float) -> dict:
        sent_ms, lease_ms = self._stamp(sent_s)
        self.rid += 1
        # the stamp a skewed clock gives the claim: it must not decide anything
        token = (sent_ms, 0, self.body)
        request = ExecuteRequest(
            rid=self.rid, robot=self.body, command_id=command_id, behaviour="place",
            node="n", params={"object": "cup"}, lease_ms=lease_ms, token=token,
            sent_ms=sent_ms, clock=self.clock,
        )  # fmt: skip
        return _deliver(w, request, sent_s + delay)

    def renew(self, w: World, command_id: str, sent_s: float, delay: float) -> dict:
        sent_ms, lease_ms = self._stamp(sent_s)
        self.rid += 1
        request = RenewRequest(
            rid=self.rid, robot=self.body, command_id=command_id, lease_ms=lease_ms,
            token=(sent_ms, 0, self.body), sent_ms=sent_ms, clock=self.clock,
        )  # fmt: skip
        return _deliver(w, request, sent_s + delay)


def _deliver(w: World, request: ExecuteRequest | RenewRequest, at_s: float) -> dict:
    """`request` reaches the world at real time `at_s` (its clock: no skew, factor 1)."""
    return serve(w, request, at_s, now_ms=T0_MS + round(at_s * 1000), time_factor=1.0)


HOURS2 = 2 * 3600 * 1000
offsets = st.integers(-HOURS2, HOURS2)
delays = st.floats(0.0, 0.2)


@settings(max_examples=150, deadline=None)
@given(
    ahead_ms=offsets,
    behind_ms=offsets,
    renewals=st.integers(0, 8),
    delay_a=delays,
    delay_b=delays,
    late_s=st.floats(0.0, 10.0),
)
def test_a_skewed_holder_that_dies_leaves_the_object_to_its_successor(
    ahead_ms: int, behind_ms: int, renewals: int, delay_a: float, delay_b: float, late_s: float
) -> None:
    """A works the cup with its clock `ahead_ms` off and dies after `renewals`
    renewals; B (`behind_ms` off) executes ``takeover_s`` after A's last message. B is
    never refused for its clock or A's, A's body stopped by then (no violation), and
    A's command held up `late_s` past B's start is refused."""
    w = _world()
    a, b = _Holder("a", ahead_ms), _Holder("b", behind_ms)
    first = a.execute(w, "a1", 0.0, delay_a)
    assert first["ok"], first
    last = 0.0
    for i in range(1, renewals + 1):
        last = i * LEASE.renew_s
        assert a.renew(w, "a1", last, delay_a)["ok"]
    # A dies; its Will reaches B no earlier than its last message: B waits takeover_s
    start_b = last + LEASE.takeover_s
    reply = b.execute(w, "b1", start_b, delay_b)
    assert reply["ok"], (reply, w.events_since(0))
    assert reply["fence"] == first["fence"] + 1
    assert w.violations == []
    failed = [e for e in w.events_since(0) if e["command_id"] == "a1" and e["kind"] == "failed"]
    assert failed and failed[0]["reason"] == "lease_expired", w.events_since(0)
    # A's own messages, held up in a frozen driver and delivered late: refused
    at = start_b + delay_b + late_s
    assert not a.renew(w, "a1", last, at - last)["ok"]
    assert a.execute(w, "a2", last, at - last)["reason"] in ("lease_expired", "busy")
    assert w.violations == []


@settings(max_examples=200, deadline=None)
@given(
    offset_ms=offsets,
    delays_s=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=20),
    gap_s=st.floats(0.01, 1.0),
)
def test_a_deadline_is_read_on_the_body_clock_within_the_shortest_delay(
    offset_ms: int, delays_s: list[float], gap_s: float
) -> None:
    """Whatever the holder's offset, a command sent at real time ``s`` lapses on the
    body's clock between ``s + lease`` and ``s + lease + d_min`` (``d_min``: the
    shortest delay seen so far, this command's included)."""
    clocks = LeaseClocks()
    lease_ms = 3000
    shortest = float("inf")
    for i, delay in enumerate(delays_s):
        sent_real_ms = T0_MS + round(i * gap_s * 1000)
        sent_ms = sent_real_ms + offset_ms
        now_ms = sent_real_ms + round(delay * 1000)
        shortest = min(shortest, now_ms - sent_real_ms)
        deadline = clocks.deadline_ms("a", "a-s1", sent_ms + lease_ms, sent_ms, now_ms)
        assert sent_real_ms + lease_ms <= deadline <= sent_real_ms + lease_ms + shortest


def test_each_clock_of_a_body_is_learned_apart_and_an_unstamped_deadline_is_taken_as_is() -> None:
    clocks = LeaseClocks()
    # a restarted robot (new clock id) an hour off is not read with the old estimate
    assert clocks.deadline_ms("a", "a-s1", 5_000, 2_000, 2_010) == 5_010
    assert clocks.deadline_ms("a", "a-s2", 3_605_000, 3_602_000, 2_020) == 5_020
    assert clocks.deadline_ms("a", "a-s1", 6_000, 3_000, 3_500) == 6_010  # held up: late
    assert clocks.deadline_ms("a", None, 7_000, None, 99_999) == 7_000
    small = LeaseClocks(keep=1)
    small.offset_ms("a", "x", 0, 10)
    small.offset_ms("b", "y", 0, 20)
    assert small.offset_ms("a", "x", 0, 50) == 50  # forgotten, learned anew


def test_the_world_grants_its_own_numbers_whatever_tokens_say() -> None:
    fences = Fences()
    assert fences.newest("cup") == 0 and fences.current("cup", None)
    assert [fences.grant("cup"), fences.grant("cup"), fences.grant("sugar")] == [1, 2, 1]
    assert fences.current("cup", 2) and not fences.current("cup", 1)
    w = _world()
    # a token from an hour ahead, then an honest one: both commands run in turn
    assert w.execute("a", "c1", "n", "place", {"object": "cup"}, 0.0, lease=9.0,
                     token=(T0_MS + 3_600_000, 0, "a"))["ok"]  # fmt: skip
    w.cancel("a", "c1", 0.1)
    later = w.execute("b", "c2", "n", "place", {"object": "cup"}, 0.2, lease=9.0,
                      token=(T0_MS, 0, "b"))  # fmt: skip
    assert later["ok"] and later["fence"] == 2, later


def test_a_renewal_pause_or_resume_of_another_command_leaves_the_running_one_alone() -> None:
    """A robot's renewal of a command the world refused must not move the lease of the
    command the body runs (someone else's), nor pause or resume it."""
    w = _world()
    assert w.execute("a", "stuck", "n", "place", {"object": "cup"}, 0.0)["ok"]
    for op in (
        lambda: w.renew("a", "other", 50.0, 0.1),
        lambda: w.pause("a", "other", 0.1),
        lambda: w.resume("a", "other", 0.1),
    ):
        answer = op()
        assert answer["ok"] is False and answer["reason"] == "not_running", answer
    job = w.robots["a"].job
    assert job is not None and job.lease is None and job.paused_at is None


def test_the_clock_offset_knob_reads_seconds_and_names_itself_when_wrong() -> None:
    assert clock_offset_ms("") == 0
    assert clock_offset_ms("3600") == 3_600_000
    assert clock_offset_ms("-0.25") == -250
    for bad in ("an hour", "nan", "inf"):
        with pytest.raises(ValueError, match=CLOCK_OFFSET_ENV):
            clock_offset_ms(bad)


def test_a_peer_ahead_is_named_at_once_and_once_per_interval() -> None:
    watch = SkewWatch(5.0, interval_s=60.0)
    assert watch.observe("p", 10_000, 1_000, 0.0) == 9_000
    assert watch.observe("p", 10_000, 1_000, 30.0) is None  # named this minute already
    assert watch.observe("p", 10_000, 1_000, 61.0) == 9_000
    assert watch.observe("q", 1_000, 1_000, 0.0) is None  # in step
    assert SkewWatch(0).observe("p", 10**9, 0, 0.0) is None  # 0: never


def test_a_peer_behind_is_named_by_its_least_delayed_message_of_a_window() -> None:
    watch = SkewWatch(5.0, window_s=3.0)
    # a burst held up 8 s, then fresh heartbeats: not skew
    for i in range(5):
        assert watch.observe("p", 0, 8_000, i * 0.1) is None
    assert watch.observe("p", 2_000, 2_050, 2.0) is None
    assert watch.observe("p", 3_000, 3_050, 3.1) is None
    # an hour behind: named once a window has passed
    assert watch.observe("r", 0, 3_600_000, 0.0) is None
    assert watch.observe("r", 1_000, 3_601_000, 1.0) is None
    assert watch.observe("r", 3_000, 3_603_010, 3.0) == -3_600_000
    watch.forget("r")
    assert watch.observe("r", 0, 3_600_000, 4.0) is None


@settings(max_examples=200, deadline=None)
@given(
    offset_ms=st.integers(-HOURS2, HOURS2),
    delays_ms=st.lists(st.integers(0, 4000), min_size=1, max_size=30),
)
def test_skew_within_the_bound_is_never_named_whatever_the_delays(
    offset_ms: int, delays_ms: list[int]
) -> None:
    """A peer within the bound is never named ahead (delays only make it look behind);
    one ahead by more is named at its first message."""
    watch = SkewWatch(5.0)
    named = []
    for i, delay in enumerate(delays_ms):
        now = 1_000_000 + i * 500
        sent = now - delay + offset_ms
        named.append(watch.observe("p", sent, now, i * 0.5))
    if abs(offset_ms) <= 5_000 and max(delays_ms) < 1_000:
        assert all(n is None for n in named), named
    if offset_ms - delays_ms[0] > 5_000:
        assert named[0] == offset_ms - delays_ms[0]
    assert all(n is None or n > 0 for n in named) or offset_ms < 1_000


@settings(max_examples=200, deadline=None)
@given(
    attempts=st.integers(1, 40),
    attempt_s=st.floats(0.05, 2.0),
)
def test_a_team_cycling_on_short_attempts_stalls_but_a_long_behaviour_does_not(
    attempts: int, attempt_s: float
) -> None:
    """Claims that each hold their node for less than the timeout, none ending done,
    are no progress: the watch fires once ``timeout`` passed since the last leaf done.
    One claim holding its node throughout is progress."""
    timeout = 5.0
    watch = StallWatch(timeout)
    assert watch.observe({"x"}, [], 0.0) is None
    fired_at = None
    t = 0.0
    for i in range(attempts * 4):
        t += attempt_s / 2
        holds = [("leaf", "r", i // 2)]  # a new claim every attempt
        idle = watch.observe({"x"}, holds, t)
        if idle is not None and fired_at is None:
            fired_at = t
    if t >= timeout + attempt_s:
        assert fired_at is not None and timeout <= fired_at <= timeout + attempt_s, fired_at
    # one claim held through the timeout: never a stall, and a leaf done resets it
    long = StallWatch(timeout)
    for k in range(40):
        assert long.observe({"x"}, [("leaf", "r", 0)], k * 0.5) is None
    assert long.observe({"x", "y"}, [], 30.0) is None
    assert long.observe({"x", "y"}, [], 34.0) is None
    assert long.observe({"x", "y"}, [], 35.0) == 5.0
    long.reset()
    assert long.observe({"x", "y"}, [], 99.0) is None
    assert StallWatch(0).observe(set(), [], 0.0) is None


@settings(max_examples=60, deadline=None)
@given(
    text=st.sampled_from(["AND(l0, l1, l2)", "THEN(l0, AND(l1, l2))", "AND(OR(l0, l1), l2)"]),
    n_robots=st.integers(2, 3),
    seed=st.integers(0, 2**32 - 1),
    fraction=st.floats(0.05, 0.95),
    skew_ms=st.sampled_from([2_000, 30_000]),
)
def test_a_frozen_holder_with_a_skewed_clock_stops_before_its_peers_take_over(
    text: str, n_robots: int, seed: int, fraction: float, skew_ms: int
) -> None:
    """The pure team simulation (``peer_sim``) with robots' clocks up to `skew_ms`
    off and a 0.1 s margin: bodies that read the lease on their own clock stop in
    time, so no leaf runs on two bodies and the mission completes. The seed is in
    every assertion message."""
    tree = parse_tree(text)
    cfg = SimConfig(
        robots=tuple(f"r{i}" for i in range(n_robots)),
        seed=seed,
        network=NetworkModel(max_delay=0.02),
        freezes=(CrashSpec("r0", on_start=1, fraction=fraction),),
        duration=(0.5, 2.0),
        lease=0.5,
        lease_margin=0.1,
        clock_skew_ms=skew_ms,
        time_limit=600.0,
    )
    res = simulate(tree, cfg)
    assert check_invariants(tree, res) == [], f"{res.summary()} seed={seed} {cfg}"


def test_read_as_utc_a_skewed_holder_s_lease_lets_two_bodies_run() -> None:
    """The same team with deadlines read as UTC (``lease_clock="utc"``): a holder
    whose clock runs ahead keeps its frozen body running past its peers' takeover in
    some of 30 seeded runs; read on the body's clock, in none."""
    tree = parse_tree("AND(l0, l1, l2)")

    def broken(seed: int, mode: str) -> bool:
        cfg = SimConfig(
            robots=("r0", "r1", "r2"), seed=seed, network=NetworkModel(max_delay=0.02),
            freezes=(CrashSpec("r0", on_start=1, fraction=0.5),), duration=(0.5, 2.0),
            lease=0.5, lease_margin=0.1, clock_skew_ms=30_000, time_limit=600.0,
            lease_clock=mode,
        )  # fmt: skip
        return bool(check_invariants(tree, simulate(tree, cfg)))

    broken = {m: [s for s in range(30) if broken(s, m)] for m in ("body", "utc")}
    assert broken["body"] == [] and broken["utc"], broken
    with pytest.raises(ValueError, match="lease_clock"):
        SimConfig(robots=("r0",), lease_clock="gps")


@pytest.mark.parametrize("on_monotonic", [True, False])
def test_a_stamp_from_a_clock_ahead_does_not_cut_a_takeover_wait_short(on_monotonic: bool) -> None:
    """A Will starts the holder's takeover wait; then a message from a peer 30 s ahead
    drags the hybrid clock forward (within its 60 s merge bound). Measured on the
    monotonic clock the wait still lasts ``takeover_ms``; measured on the stamps it
    ends at once, while the holder's body may still run."""
    from teamtree.planners.tasktree import (
        NodeStatus,
        PresenceChanged,
        TaskController,
        Tick,
        Transition,
    )

    tree = parse_tree("AND(l0, l1)")
    leaf = tree.leaves[0]
    mono = [0]
    controller = TaskController(
        tree, "b", online_peers={"a"}, takeover_ms=4000,
        wait_clock=(lambda: mono[0]) if on_monotonic else None,
    )  # fmt: skip
    controller.handle(Transition(leaf, "a", NodeStatus.WORKING, (1000, 0, "a")), (1000, 1, "b"))
    controller.handle(PresenceChanged("a", online=False), (1100, 0, "b"))

    def held_by_a() -> bool:
        return controller.working.get(leaf, ("",))[0] == "a"

    assert held_by_a()
    mono[0] = 200
    controller.handle(Tick(), (31_100, 0, "b"))  # the hybrid clock jumped 30 s
    assert held_by_a() is on_monotonic
    mono[0] = 4_000
    controller.handle(Tick(), (31_150, 0, "b"))
    assert not held_by_a()


def test_the_skew_watch_keeps_a_bounded_number_of_peers() -> None:
    from teamtree.agents.runtime.clock_skew import KEEP

    watch = SkewWatch(5.0)
    for i in range(KEEP + 10):
        watch.observe(f"p{i}", 0, 0, 0.0)
    assert len(watch._peers) == KEEP and "p0" not in watch._peers
