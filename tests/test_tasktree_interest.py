"""Declared interest (planners/tasktree/interest.py): a claim asks only the peers whose
declaration meets it, and the peer rule's guarantees still hold.

Property tests run the network simulation (delay, duplicates, reordering, crashes, late
joiners; 2-6 robots, and 8-32 robots at scale) with ``declared_interest=True`` and check
the guarantees of ``test_tasktree_property.py``. A controller that claims before every
online peer acknowledged its declaration runs leaves twice in the same kind of runs,
so those tests can fail. Hypothesis prints the falsifying example; the simulation's
seed is in every assertion message.
"""

from __future__ import annotations

import collections
import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    ClaimDecided,
    Interest,
    InterestAck,
    InterestBook,
    InterestExchange,
    JoinSpec,
    NetworkModel,
    PresenceChanged,
    PublishClaim,
    PublishInterest,
    PublishInterestAck,
    PublishReply,
    SimConfig,
    StartBehaviour,
    TaskController,
    Tick,
    Want,
    check_invariants,
    parse_tree,
    peer_sim,
    simulate,
)
from tests.test_tasktree_property import (
    NETWORKS,
    _simulate_and_check,
    _team,
    sim_settings,
    tree_texts,
)
from tests.test_tasktree_scale_property import EXAMPLES, big_team, check_big_team, team_trees

ACK_HOLDS = st.sampled_from([0.0, 0.001, 0.03, 0.1])
"""Seconds acknowledgements are held before they go out together (0: at once)."""


@sim_settings(200)
@given(
    text=tree_texts(),
    n_robots=st.integers(2, 6),
    capacity=st.integers(1, 2),
    prefetch=st.integers(0, 3),
    avoid=st.booleans(),
    ack_hold=ACK_HOLDS,
    **NETWORKS,
)
def test_random_teams_with_declared_interest_keep_the_guarantees(
    text: str,
    n_robots: int,
    capacity: int,
    prefetch: int,
    avoid: bool,
    ack_hold: float,
    **net: Any,
) -> None:
    """With acknowledgements sent at once or held and sent together (``ack_hold``,
    as the agents batch them)."""
    cfg = _team(n_robots, capacity, 1, **net)
    cfg = replace(
        cfg,
        declared_interest=True,
        interest_prefetch=prefetch,
        avoid_contention=avoid,
        ack_hold=ack_hold,
    )
    _simulate_and_check(text, cfg)


@sim_settings(EXAMPLES)
@given(
    text=team_trees(),
    n_robots=st.sampled_from([8, 16, 24, 32]),
    avoid=st.booleans(),
    crashes=st.integers(0, 3),
    max_delay=st.sampled_from([0.002, 0.02, 0.1]),
    duplicate_p=st.sampled_from([0.0, 0.2]),
    reorder=st.booleans(),
    join=st.booleans(),
    ack_hold=ACK_HOLDS,
    seed=st.integers(0, 2**32 - 1),
)
def test_big_teams_with_declared_interest_keep_the_guarantees(
    text: str,
    n_robots: int,
    avoid: bool,
    crashes: int,
    max_delay: float,
    duplicate_p: float,
    reorder: bool,
    join: bool,
    ack_hold: float,
    seed: int,
) -> None:
    cfg = big_team(n_robots, seed, crashes, max_delay, duplicate_p, reorder)
    cfg = replace(
        cfg,
        joins=(JoinSpec("late", at=0.3),) if join else (),
        avoid_contention=avoid,
        declared_interest=True,
        ack_hold=ack_hold,
    )
    check_big_team(parse_tree(text), text, cfg)


def _mutant_runs(monkeypatch: pytest.MonkeyPatch) -> int:
    """Runs of 2-6 robots (seeds 0-99, configurations drawn from the seed) in which a
    controller that does not wait for its declaration's acknowledgements breaks a
    guarantee."""
    monkeypatch.setattr(InterestBook, "ready", lambda self, online: self.mine is not None)
    texts = [
        "AND(l0, l1, l2, l3)",
        "OR(l0, THEN(l1, l2))",
        "AND(THEN(l0, l1), OR(l2, l3), l4)",
        "THEN(AND(l0, l1, l2), OR(l3, AND(l4, l5)))",
    ]
    broken = 0
    for seed in range(100):
        rng = random.Random(seed)
        tree = parse_tree(rng.choice(texts))
        cfg = SimConfig(
            robots=tuple(f"r{i}" for i in range(rng.randint(2, 6))),
            seed=seed,
            network=NetworkModel(
                max_delay=rng.choice([0.001, 0.02, 0.1, 0.3]),
                duplicate_p=rng.choice([0.0, 0.2]),
                reorder=rng.random() < 0.5,
            ),
            joins=(JoinSpec("late", at=0.4),) if rng.random() < 0.5 else (),
            declared_interest=True,
            interest_prefetch=rng.choice([0, 1, 2]),
            avoid_contention=rng.random() < 0.5,
            time_limit=600.0,
        )
        broken += bool(check_invariants(tree, simulate(tree, cfg)))
    return broken


def test_claiming_before_the_acknowledgements_runs_leaves_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without I1's wait the property above fails: the test can tell."""
    broken = _mutant_runs(monkeypatch)
    print(f"a controller that skips the wait broke a guarantee in {broken} of 100 runs")
    assert broken > 0


class _CountingSim(peer_sim._Sim):
    """The simulation, counting messages per kind as the broker delivers them."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.kinds: collections.Counter[str] = collections.Counter()

    def at_broker(self, sender: str, msg: Any, to: str | None) -> None:
        copies = 1 if to is not None else len(self.broker_online - {sender})
        self.kinds[type(msg).__name__] += copies
        super().at_broker(sender, msg, to)


def _avoiding_team(robots: int, seed: int, network: NetworkModel, declared: bool) -> SimConfig:
    """`robots` robots with contention avoidance, declaring interest (prefetch 4) or not."""
    return SimConfig(
        robots=tuple(f"r{i}" for i in range(robots)),
        seed=seed,
        network=network,
        avoid_contention=True,
        declared_interest=declared,
        interest_prefetch=4,
        time_limit=600.0,
    )


def test_a_claim_asks_a_few_peers_not_the_whole_team() -> None:
    """32 robots, 25 THEN pairs, contention avoidance: with declared interest a claim
    gets a handful of replies (31 without); every run keeps the guarantees."""
    tree = parse_tree("AND(" + ", ".join(f"THEN(l{2 * i}, l{2 * i + 1})" for i in range(25)) + ")")
    replies = {}
    for declared in (False, True):
        cfg = _avoiding_team(32, 1, NetworkModel(max_delay=0.02, reorder=True), declared)
        sim = _CountingSim(tree, cfg)
        res = sim.run()
        assert check_invariants(tree, res) == [], res.summary()
        replies[declared] = sim.kinds["ClaimReply"] / res.claims
        print(f"declared={declared}: {res.summary()} messages={dict(sim.kinds)}")
    assert replies[False] > 25, replies
    assert replies[True] < 8, replies


def _pair(**options: Any) -> tuple[Any, TaskController, TaskController]:
    tree = parse_tree("AND(a, b, c)")
    a, b, c = (tree.find(x) for x in "abc")
    r1 = TaskController(
        tree, "r1", online_peers={"r2"}, potentials={a: 3.0, b: 1.0, c: 0.5},
        declared_interest=True, interest_prefetch=0, **options,
    )  # fmt: skip
    r2 = TaskController(
        tree, "r2", online_peers={"r1"}, potentials={b: 3.0, a: 1.0, c: 0.5},
        declared_interest=True, interest_prefetch=0, **options,
    )  # fmt: skip
    return tree, r1, r2


def test_a_member_declares_first_and_claims_once_acknowledged() -> None:
    tree, r1, r2 = _pair()
    a = tree.find("a")
    (declared,) = r1.handle(Tick(), (10, 0, "r1"))
    assert isinstance(declared, PublishInterest) and declared.interest.leaves == (a,)
    assert r1.handle(Tick(), (11, 0, "r1")) == []  # no claim before r2's acknowledgement
    (acked,) = r2.handle(declared.interest, (12, 0, "r2"))
    assert isinstance(acked, PublishInterestAck) and acked.ack.declarer == "r1"
    assert r1.handle(acked.ack, (13, 0, "r2")) == []
    # r2 declared nothing that meets a: the claim is decided with no reply at all
    out = r1.handle(Tick(), (14, 0, "r1"))
    assert not [x for x in out if isinstance(x, PublishClaim)], out
    assert [x.node for x in out if isinstance(x, StartBehaviour)] == [a]
    assert [x.won for x in out if isinstance(x, ClaimDecided)] == [True]


def test_a_claim_asks_the_peer_whose_declaration_meets_it() -> None:
    tree, r1, r2 = _pair()
    a = tree.find("a")
    mine = Interest("r1", (10, 0, "r1"), (a,))
    r1.interest.declare([a], (10, 0, "r1"))  # type: ignore[union-attr]
    r1.handle(
        InterestAck("r2", "r1", mine.stamp, Interest("r2", (9, 0, "r2"), (a,))), (11, 0, "r1")
    )
    out = r1.handle(Tick(), (12, 0, "r1"))
    (claim,) = [x for x in out if isinstance(x, PublishClaim)]
    assert (claim.claim.node, claim.to) == (a, "r2")
    assert r1.pending_claim is not None  # waits for r2's reply
    # r2's declaration again (a resend): r2 was asked already, it is not asked twice
    again = r1.handle(Interest("r2", (9, 0, "r2"), (a,)), (12, 5, "r1"))
    assert not [x for x in again if isinstance(x, PublishClaim)], again
    (reply,) = r2.handle(claim.claim, (13, 0, "r2"))
    assert isinstance(reply, PublishReply)
    out = r1.handle(reply.reply, (14, 0, "r1"))
    assert [x.won for x in out if isinstance(x, ClaimDecided)] == [True]


def test_a_peer_that_comes_online_must_acknowledge_before_a_decision() -> None:
    tree, r1, _r2 = _pair()
    a = tree.find("a")
    r1.interest.declare([a], (10, 0, "r1"))  # type: ignore[union-attr]
    r1.handle(InterestAck("r2", "r1", (10, 0, "r1")), (11, 0, "r1"))
    out = r1.handle(PresenceChanged("r3", True), (12, 0, "r1"))
    assert [(x.interest.leaves, x.to) for x in out if isinstance(x, PublishInterest)] == [
        ((a,), "r3")
    ]
    out = r1.handle(Tick(), (13, 0, "r1"))
    assert not [x for x in out if isinstance(x, StartBehaviour)], "r3 has not acknowledged"
    out = r1.handle(InterestAck("r3", "r1", (10, 0, "r1")), (14, 0, "r1"))
    out += r1.handle(Tick(), (15, 0, "r1"))
    assert [x.node for x in out if isinstance(x, StartBehaviour)] == [a]


def test_a_want_for_an_undeclared_leaf_declares_it_and_says_so() -> None:
    tree, r1, _r2 = _pair(auto_select=False)
    b = tree.find("b")
    out = r1.handle(Want(b), (10, 0, "r1"))
    assert [x.interest.leaves for x in out if isinstance(x, PublishInterest)] == [(b,)]
    (lost,) = [x for x in out if isinstance(x, ClaimDecided)]
    assert not lost.won and "declaration" in lost.reason


def test_declarations_only_grow_and_stamps_never_repeat() -> None:
    book = InterestBook("r1")
    first = book.declare(["x"], (5, 0, "r1"))
    second = book.declare(["y"], (5, 0, "r1"))  # the same HLC reading
    assert second.stamp > first.stamp
    assert second.leaves == ("x", "y")
    assert book.ack_for(Interest("r2", (4, 0, "r2"), ("z",))).own == second
    # declarations only grow (I4), so whatever the order, a peer's leaves are the union
    assert book.record(Interest("r2", (3, 0, "r2"), ("w",))) is True
    assert book.record(Interest("r2", (2, 0, "r2"), ("w",))) is False  # nothing new
    assert book.of("r2") == {"z", "w"}


def test_a_declaration_that_would_shrink_a_peers_interest_changes_nothing() -> None:
    """A forged empty declaration in a holder's name, dated far ahead, neither hides
    the holder from a claim nor stops its later genuine declarations from counting."""
    book = InterestBook("r1")
    book.record(Interest("r2", (10, 0, "r2"), ("cup",)))
    assert book.record(Interest("r2", (60_010, 0, "r2"), ())) is False
    assert book.interested("r2", {"cup"})
    assert book.record(Interest("r2", (20, 0, "r2"), ("cup", "tea"))) is True
    assert book.interested("r2", {"tea"})


def test_an_acknowledgement_of_a_stamp_never_declared_counts_for_none() -> None:
    """An ack of a forged declaration in my name, dated ahead, must not stand for the
    acknowledgement of my later genuine declarations (I1)."""
    book = InterestBook("r1")
    book.declare(["x"], (5, 0, "r1"))
    book.acknowledged(InterestAck("r2", "r1", (60_005, 0, "r1")))
    assert not book.ready({"r2"})
    book.acknowledged(InterestAck("r2", "r1", book.mine.stamp))
    assert book.ready({"r2"})


# -- mixed teams: some members without declared interest ------------------------------


@sim_settings(200)
@given(
    text=tree_texts(),
    n_robots=st.integers(2, 6),
    undeclared=st.sets(st.integers(0, 5), min_size=1),
    late_undeclared=st.booleans(),
    avoid=st.booleans(),
    **NETWORKS,
)
def test_mixed_teams_keep_the_guarantees_and_complete(
    text: str,
    n_robots: int,
    undeclared: set[int],
    late_undeclared: bool,
    avoid: bool,
    **net: Any,
) -> None:
    """A team where some robots declare their interest and the others do not (a robot
    attached with its own settings): no leaf twice, and the mission completes."""
    cfg = _team(n_robots, 1, 1, **net)
    names = tuple(f"r{i}" for i in sorted(undeclared) if i < n_robots)
    names += ("late",) if late_undeclared else ()
    cfg = replace(cfg, declared_interest=True, undeclared=names, avoid_contention=avoid)
    _simulate_and_check(text, cfg)


@sim_settings(EXAMPLES)
@given(
    text=team_trees(),
    n_robots=st.sampled_from([8, 16, 32]),
    crashes=st.integers(0, 2),
    max_delay=st.sampled_from([0.002, 0.02, 0.1]),
    reorder=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_big_mixed_teams_keep_the_guarantees(
    text: str, n_robots: int, crashes: int, max_delay: float, reorder: bool, seed: int
) -> None:
    cfg = big_team(n_robots, seed, crashes, max_delay, 0.2, reorder)
    odd = tuple(r for i, r in enumerate(cfg.robots) if i % 2)
    cfg = replace(cfg, declared_interest=True, undeclared=odd, avoid_contention=True)
    check_big_team(parse_tree(text), text, cfg)


def test_a_member_without_declared_interest_acknowledges_as_interested_in_every_leaf() -> None:
    tree = parse_tree("AND(l0, l1, l2)")
    base = TaskController(tree, "b", online_peers={"a"})
    stamp = (1000, 0, "a")
    out = base.handle(Interest("a", stamp, (tree.leaves[0],)), (1001, 0, "b"))
    acks = [a.ack for a in out if isinstance(a, PublishInterestAck)]
    assert len(acks) == 1
    ack = acks[0]
    assert (ack.agent, ack.declarer, ack.stamp) == ("b", "a", stamp)
    assert ack.own is not None and ack.own.agent == "b"
    assert set(ack.own.leaves) == set(tree.leaves)
    # and the declarer then asks it for every claim (I2)
    a = TaskController(tree, "a", online_peers={"b"}, declared_interest=True)
    first, *others = tree.leaves
    a.interest.declare([first], stamp)  # type: ignore[union-attr]
    a.handle(ack, (1002, 0, "a"))
    assert all(a.interest.interested("b", {leaf}) for leaf in others)  # type: ignore[union-attr]


def _mixed_runs(seeds: range) -> tuple[int, int, int]:
    """Over mixed teams (seeds `seeds`, configurations drawn from the seed): runs that
    broke a guarantee, runs that did not complete, and runs in which a declaring
    member ran a behaviour."""
    texts = ["AND(l0, l1, l2, l3)", "AND(THEN(l0, l1), OR(l2, l3), l4)", "AND(l0, l1, l2)"]
    broken = stuck = declarers_worked = 0
    for seed in seeds:
        rng = random.Random(seed)
        tree = parse_tree(rng.choice(texts))
        robots = tuple(f"r{i}" for i in range(rng.randint(2, 5)))
        cfg = SimConfig(
            robots=robots,
            seed=seed,
            network=NetworkModel(max_delay=rng.choice([0.001, 0.02, 0.1]), reorder=True),
            declared_interest=True,
            undeclared=robots[1::2],
            time_limit=120.0,
        )
        res = simulate(tree, cfg)
        broken += bool(check_invariants(tree, res))
        stuck += not res.completed
        declarers_worked += any(e.robot not in cfg.undeclared for e in res.executions)
    return broken, stuck, declarers_worked


def test_declaring_members_of_a_mixed_team_work_only_because_the_others_acknowledge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before, a member without declared interest ignored declarations, so its declaring
    peers waited for an acknowledgement that never came and never claimed: the others
    did the whole mission."""
    broken, stuck, worked = _mixed_runs(range(20))
    assert (broken, stuck) == (0, 0) and worked >= 15, (broken, stuck, worked)
    original = InterestExchange.on_interest

    def ignore_when_undeclared(self: InterestExchange, ev: Interest, now: Any, out: list) -> None:
        if self._c.interest is not None:
            original(self, ev, now, out)

    monkeypatch.setattr(InterestExchange, "on_interest", ignore_when_undeclared)
    assert _mixed_runs(range(20)) == (0, 0, 0)


@sim_settings(2)
@given(
    seed=st.integers(0, 2**32 - 1),
    ack_hold=st.sampled_from([0.0, 0.03]),
    reorder=st.booleans(),
)
def test_sixty_four_robots_share_five_hundred_behaviours(
    seed: int, ack_hold: float, reorder: bool
) -> None:
    """The benchmark's largest team in the simulation: 64 declaring robots on an AND of
    250 THEN pairs (500 leaves), two of them crashing mid-behaviour; no node worked
    twice or by two robots at once, every THEN in order, the mission complete."""
    text = f"AND({', '.join(f'THEN(a{i}, b{i})' for i in range(250))})"
    cfg = replace(
        big_team(64, seed, 2, 0.02, 0.0, reorder),
        declared_interest=True,
        ack_hold=ack_hold,
        duration=(0.05, 0.2),
    )
    check_big_team(parse_tree(text), text, cfg)


def test_messages_per_behaviour_grow_at_most_linearly_with_the_team() -> None:
    """Declared interest's traffic: from 4 to 8 to 16 robots on 30 behaviours, the
    messages published per behaviour grow no faster than the team (each doubling at
    most doubles them, with a tenth to spare), and every message is counted under its
    type. Deterministic for the seed (simulated time)."""
    tree = parse_tree("AND(" + ", ".join(f"THEN(a{i}, b{i})" for i in range(15)) + ")")
    per_behaviour = {}
    for robots in (4, 8, 16):
        network = NetworkModel(max_delay=0.002, reorder=False)
        cfg = replace(_avoiding_team(robots, 3, network, True), ack_hold=0.1)
        res = simulate(tree, cfg)
        assert check_invariants(tree, res) == [] and res.completed, res.summary()
        assert sum(res.kinds.values()) == res.published, (res.kinds, res.published)
        assert res.kinds["InterestAck"] > 0 and res.kinds["Claim"] > 0, res.kinds
        per_behaviour[robots] = res.published / len(tree.leaves)
        print(f"{robots} robots: {per_behaviour[robots]:.1f} per behaviour {res.kinds}")
    assert per_behaviour[8] <= 2.2 * per_behaviour[4], per_behaviour
    assert per_behaviour[16] <= 2.2 * per_behaviour[8], per_behaviour
