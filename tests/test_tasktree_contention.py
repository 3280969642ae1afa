"""Contention avoidance (planners/tasktree/contention.py): only a member's best open
leaves' potentials are published, and that loses nothing the matching uses.

The property test draws teams and potentials (Hypothesis prints the falsifying example)
and compares the matching over peers' full potentials with the matching over what they
now publish.
"""

from __future__ import annotations

import heapq
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.treeprotocol.peer_wire import (
    PeerWireError,
    potentials_from_wire,
    potentials_to_wire,
)
from teamtree.planners.tasktree import (
    BehaviourFinished,
    PublishClaim,
    PublishReply,
    PublishTransition,
    StartBehaviour,
    TaskController,
    Tick,
    parse_tree,
)
from teamtree.planners.tasktree.contention import (
    MIN_TOP,
    ContentionAvoider,
    PeerPotentials,
    PublishPotentials,
    greedy_choice,
    top_count,
)

LEAVES = tuple(f"root/{i}" for i in range(40))


def published(values: dict[str, float], open_leaves: set[str], members: int) -> dict[str, float]:
    """What ``maybe_publish`` sends of `values`: the best ``top_count`` open leaves."""
    avoider = ContentionAvoider("q", random.Random(0), publish_every=1)
    pub = avoider.maybe_publish(values, True, lambda: open_leaves, members)
    assert pub is not None
    return dict(pub.potentials)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    n_rivals=st.integers(1, 24),
    n_open_leaves=st.integers(1, len(LEAVES)),
    seed=st.integers(0, 2**32 - 1),
    coarse=st.booleans(),
)
def test_the_matching_over_published_potentials_is_the_matching_over_all(
    n_rivals: int, n_open_leaves: int, seed: int, coarse: bool
) -> None:
    rng = random.Random(seed)
    open_leaves = set(rng.sample(LEAVES, n_open_leaves))

    def draw() -> float:  # coarse values: many ties, which the ranks must break alike
        return rng.choice([0.0, 0.25, 0.5]) if coarse else round(rng.random(), 3)

    mine = {leaf: draw() + 0.001 for leaf in open_leaves}  # it could take each of them
    full = {f"p{i}": {leaf: draw() for leaf in LEAVES} for i in range(n_rivals)}
    members = n_rivals + 1
    sent = {q: published(pots, open_leaves, members) for q, pots in full.items()}
    assert all(len(p) <= top_count(members) for p in sent.values())
    assert greedy_choice(mine, "me", sent) == greedy_choice(mine, "me", full), seed


def test_a_member_publishes_its_best_open_leaves_only() -> None:
    values = {leaf: (i + 1) / 100 for i, leaf in enumerate(LEAVES)}
    open_leaves = set(LEAVES[:30])
    sent = published(values, open_leaves, 3)
    assert len(sent) == max(MIN_TOP, 6) == top_count(3)
    assert set(sent) == set(sorted(open_leaves, key=values.__getitem__)[-len(sent) :])


def test_it_publishes_again_when_too_few_sent_leaves_are_still_open() -> None:
    values = {leaf: (i + 1) / 100 for i, leaf in enumerate(LEAVES)}
    open_leaves = set(LEAVES)
    avoider = ContentionAvoider("q", random.Random(0), publish_every=1)
    first = avoider.maybe_publish(values, True, lambda: open_leaves, 4)
    assert first is not None and len(first.potentials) == 8
    assert avoider.maybe_publish(values, True, lambda: open_leaves, 4) is None  # unchanged
    # a new set once leaves are done or taken, as LeafSelection.open_leaves hands
    open_leaves = open_leaves - set(heapq.nlargest(4, first.potentials, key=values.__getitem__))
    assert avoider.maybe_publish(values, True, lambda: open_leaves, 4) is None  # 4 still live
    open_leaves = open_leaves - set(heapq.nlargest(1, open_leaves, key=values.__getitem__))
    again = avoider.maybe_publish(values, True, lambda: open_leaves, 4)
    assert again is not None and set(again.potentials) <= open_leaves
    assert len(again.potentials) == 8


def test_potentials_go_on_the_wire_by_leaf_position() -> None:
    sent = {LEAVES[3]: 0.5, LEAVES[31]: 0.1234, "not/a/leaf": 1.0}
    body = potentials_to_wire("r1", sent, LEAVES)
    assert body == {"agent": "r1", "milli": [500, 123], "index": [3, 31]}
    back = potentials_from_wire(body, LEAVES)
    assert back.agent == "r1" and back.potentials == {LEAVES[3]: 0.5, LEAVES[31]: 0.123}
    dense = {"agent": "r2", "milli": [7 if i == 5 else 0 for i in range(len(LEAVES))]}
    assert potentials_from_wire(dense, LEAVES).potentials == {LEAVES[5]: 0.007}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"agent": "r1", "milli": [1, 2], "index": [0]}, "1 positions for 2 values"),
        ({"agent": "r1", "milli": [1], "index": [40]}, "leaf position 40 in a tree of 40"),
        ({"agent": "r1", "milli": [1], "index": [-1]}, "index"),
        ({"agent": "r1", "milli": [1, 2]}, "2 values for a tree of 40 leaves"),
    ],
)
def test_a_bad_potentials_body_is_refused_with_the_reason(body: dict, says: str) -> None:
    with pytest.raises(PeerWireError, match=says):
        potentials_from_wire(body, LEAVES)


def full_matching(
    mine: dict[str, float], me: str, rivals: dict[str, dict[str, float]]
) -> str | None:
    """The greedy matching as ``greedy_choice`` documents it, over every pair: best
    value first, ties by member id, then leaf id."""
    pairs = [(-v, me, leaf) for leaf, v in mine.items()]
    for q, pots in rivals.items():
        pairs += [(-pots.get(leaf, 0.0), q, leaf) for leaf in mine if pots.get(leaf, 0.0) > 0.0]
    members: set[str] = set()
    leaves: set[str] = set()
    for _v, member, leaf in sorted(pairs):
        if member in members or leaf in leaves:
            continue
        if member == me:
            return leaf
        members.add(member)
        leaves.add(leaf)
    return None


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    n_rivals=st.integers(0, 12),
    n_leaves=st.integers(1, len(LEAVES)),
    seed=st.integers(0, 2**32 - 1),
    levels=st.sampled_from([2, 3, 1000]),
)
def test_the_matching_ranks_only_the_best_leaves_and_loses_nothing(
    n_rivals: int, n_leaves: int, seed: int, levels: int
) -> None:
    """``greedy_choice`` ranks each member's best ``members`` leaves only; with ties
    (few distinct values) that cut must keep the leaves the full sort would reach
    first, the lower leaf ids, or the member is matched to another leaf."""
    rng = random.Random(seed)
    leaves = rng.sample(LEAVES, n_leaves)

    def draw() -> float:
        return rng.randrange(levels + 1) / levels

    mine = {leaf: draw() + 0.001 for leaf in leaves}
    rivals = {f"p{i}": {leaf: draw() for leaf in LEAVES} for i in range(n_rivals)}
    assert greedy_choice(mine, "me", rivals) == full_matching(mine, "me", rivals), seed


def _failing_teammate_run(seed: int, ticks: int = 400) -> tuple[list[str], int]:
    """Two robots of equal potential for the one leaf of a tree, with contention
    avoidance; every message is delivered at once. Robot ``a`` (first by id, so the
    matching's tie goes to it) fails the leaf each time it starts it, as an AGV that
    rejects the order does; ``b`` would finish it. Returns who started it, in order,
    and the tick at which ``b`` did (-1: never)."""
    tree = parse_tree("THEN(place)")
    leaf = tree.find("place")
    ids = ("a", "b")
    ctl = {
        r: TaskController(
            tree,
            r,
            online_peers=set(ids) - {r},
            potentials={leaf: 0.5},
            avoid_contention=True,
            seed=f"{seed}:{r}",
        )
        for r in ids
    }
    clock = itertools.count(100)
    started: list[str] = []
    queue: list[tuple[str, object]] = []

    def feed(r: str, event: object) -> None:
        for action in ctl[r].handle(event, (next(clock), 0, r)):  # type: ignore[arg-type]
            other = "b" if r == "a" else "a"
            match action:
                case PublishClaim(claim=c):
                    queue.append((other, c))
                case PublishReply(reply=rep):
                    queue.append((rep.claimant, rep))
                case PublishTransition(transition=t):
                    queue.append((other, t))
                case PublishPotentials(agent=agent, potentials=pots):
                    queue.append((other, PeerPotentials(agent, pots)))
                case StartBehaviour(node=node):
                    started.append(r)
                    queue.append((r, BehaviourFinished(node, r == "b")))

    for tick in range(ticks):
        for r in ids:
            feed(r, Tick())
            while queue:
                to, message = queue.pop(0)
                feed(to, message)
        if "b" in started:
            return started, tick
    return started, -1


@pytest.mark.parametrize("seed", range(8))
def test_a_teammate_takes_a_leaf_that_a_robot_fails_again_and_again(seed: int) -> None:
    """A robot holds a leaf back for a while after its behaviour failed there, and its
    published potentials say so: the teammate takes it after the first failure. While
    the failing robot published the leaf at its full value, the teammate's matching
    gave the leaf to it (equal potentials, and its id first), so the teammate waited its
    patience out, and got the leaf only when that ended within the failing robot's
    hold: after two or three failures for five of these eight seeds, and at the end of
    the hold for the others, since the news of the hold went out only once
    ``publish_every`` ticks had passed since the robot last published."""
    started, tick = _failing_teammate_run(seed)
    assert tick >= 0, f"seed {seed}: b never started the leaf; starts: {started}"
    assert started == ["a", "b"], f"seed {seed}: b took the leaf only after {started}"
    # well within a's hold of 10 ticks (a fails at its first tick): the news of the
    # hold goes out at a's next tick, not once 10 ticks passed since a last published
    assert tick <= 5, f"seed {seed}: b started at tick {tick}, at the end of a's hold"
