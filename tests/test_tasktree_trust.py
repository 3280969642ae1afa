"""Property tests of the peer rule where a peer's word may be forged (planners/tasktree/
peer.py, rules 7-9): done is what the world shows, a release waits for the holder's
lease, and stamps dated far ahead buy nothing. Pure: the controller alone, fed forged
and honest events in random order and timing. Hypothesis prints each falsifying
example (its ``print_blob`` reproduces it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import (
    DOUBT_LIMIT,
    ClaimReply,
    EffectConfirmed,
    EffectUndone,
    EvidenceChanged,
    Interest,
    InterestAck,
    NodeReport,
    NodeStatus,
    PeerState,
    PublishClaim,
    PublishInterest,
    Snapshot,
    StartBehaviour,
    TaskController,
    Tick,
    Transition,
    WorldShown,
    conflict_set,
    parse_tree,
    satisfied_nodes,
)
from tests.test_tasktree_property import tree_texts

HOLD_MS = 4_000
"""The lease plus margin of these runs (``LeaseTerms()``: 3 s + 1 s)."""

FORGED_OFFSETS = st.sampled_from([-500, 0, 1, 900, 4_999, 5_001, 50_000])
"""How far a forged stamp is dated from the receiver's clock (ms)."""


@settings(max_examples=200, print_blob=True, deadline=None)
@given(
    text=tree_texts(),
    declared=st.booleans(),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["transition", "snapshot", "reply", "confirm", "undone"]),
            st.integers(0, 40),
            FORGED_OFFSETS,
        ),
        max_size=40,
    ),
)
def test_done_is_what_the_world_shows_whatever_peers_say(
    text: str, declared: bool, steps: list[tuple[str, int, int]]
) -> None:
    """Forged done transitions, all-done snapshots and done replies in a member's name
    mark nothing done; the world's evidence does, and its loss opens the leaf again;
    the mission is done exactly when the world's evidence satisfies the root (an OR
    only by one of its own branches)."""
    tree = parse_tree(text)
    leaves = list(tree.leaves)
    c = TaskController(
        tree, "b", online_peers={"h"}, evidence_leaves=leaves, declared_interest=declared
    )
    shown: set[str] = set()
    t = 1_000
    for kind, index, offset in steps:
        t += 10
        now, leaf = (t, 0, "b"), leaves[index % len(leaves)]
        stamp = (t + offset, 0, "h")
        if kind == "transition":
            c.handle(Transition(leaf, "h", NodeStatus.DONE, stamp), now)
        elif kind == "snapshot":
            c.handle(Snapshot("h", stamp, tuple(leaves), ()), now)
        elif kind == "reply":
            reports = (NodeReport(leaf, PeerState.DONE),)
            c.handle(ClaimReply("x", leaf, "b", "h", reports), now)
        elif kind == "confirm":
            c.handle(EffectConfirmed(leaf), now)
            shown.add(leaf)
        else:
            c.handle(EffectUndone(leaf), now)
            shown.discard(leaf)
        assert set(c.done) == shown, f"tree={text} done={sorted(c.done)} shown={sorted(shown)}"
        assert c.mission_done == (tree.root.id in satisfied_nodes(tree, shown)), text


@settings(max_examples=200, print_blob=True, deadline=None)
@given(
    text=tree_texts(),
    steps=st.lists(
        st.tuples(st.sampled_from(["done", "snapshot", "evidence"]), st.integers(0, 40),
                  st.sets(st.integers(0, 40), max_size=6)),
        max_size=30,
    ),
)  # fmt: skip
def test_a_peers_done_counts_only_once_the_world_cannot_show_it(
    text: str, steps: list[tuple[str, int, set[int]]]
) -> None:
    """A member starts before the world's first keyframe with every leaf an evidence
    leaf; peers' dones on them are refused. A keyframe that shows some leaves' objects
    without a goal frees those: the dones peers said on them count then, and never on
    a leaf still in the set (what a robot that starts late under load meets)."""
    tree = parse_tree(text)
    leaves = list(tree.leaves)
    c = TaskController(tree, "b", online_peers={"h"}, evidence_leaves=leaves)
    evidence, said = set(leaves), set()
    t = 1_000
    for kind, index, chosen in steps:
        t += 10
        now, leaf = (t, 0, "b"), leaves[index % len(leaves)]
        if kind == "done":
            c.handle(Transition(leaf, "h", NodeStatus.DONE, (t, 0, "h")), now)
            said.add(leaf)
        elif kind == "snapshot":
            c.handle(Snapshot("h", (t, 0, "h"), tuple(leaves), ()), now)
            said.update(leaves)
        else:
            evidence -= {leaves[i % len(leaves)] for i in chosen}
            c.handle(EvidenceChanged(frozenset(evidence)), now)
        believed = said - evidence
        assert set(c.done) == believed, (
            f"tree={text} done={sorted(c.done)} said={sorted(said)} evidence={sorted(evidence)}"
        )


class _Holder:
    """An honest holder ``h`` of leaf ``node`` until ``until`` (ms): it acknowledges
    ``b``'s declarations and answers ``b``'s claims with what it does."""

    def __init__(self, node: str, since: int, until: int) -> None:
        self.node, self.since, self.until = node, since, until

    def answer(self, action: object, t: int) -> list[object]:
        if isinstance(action, PublishInterest) and action.to in (None, "h"):
            own = Interest("h", (self.since - 1, 0, "h"), (self.node,))
            return [InterestAck("h", "b", action.interest.stamp, own)]
        if isinstance(action, PublishClaim) and action.to in (None, "h"):
            claim = action.claim
            working = NodeReport(self.node, PeerState.WORKING, "h", (self.since, 0, "h"))
            reports = [NodeReport(claim.node, PeerState.NONE)]
            if t < self.until:
                reports = [working] if claim.node == self.node else [*reports, working]
            return [ClaimReply(claim.claim_id, claim.node, "b", "h", tuple(reports), claim.round)]
        return []


@settings(max_examples=200, print_blob=True, deadline=None)
@given(
    text=st.sampled_from(["AND(n, m)", "OR(n, m)", "THEN(n, m)", "AND(n, OR(m, k))"]),
    declared=st.booleans(),
    forged=st.sets(st.sampled_from(["inactive", "snapshot", "interest", "done"]), min_size=1),
    offset=FORGED_OFFSETS,
    forged_at=st.integers(100, 6_000),
    works_for=st.integers(200, 14_000),
)
def test_a_forged_release_never_hands_a_running_leaf_over(
    text: str,
    declared: bool,
    forged: set[str],
    offset: int,
    forged_at: int,
    works_for: int,
) -> None:
    """``h`` works on the first leaf; forged messages in its name say it let go (an
    ``inactive`` or ``done`` transition, an empty snapshot, an empty declaration, any
    of them dated ahead). ``b`` keeps the leaf taken until the holder's lease must have
    lapsed, and never starts it or an OR alternative while ``h`` still works on it."""
    tree = parse_tree(text)
    node = tree.leaves[0]
    conflicts = conflict_set(tree, node)
    start = 1_000
    holder = _Holder(node, start, start + works_for)
    c = TaskController(
        tree,
        "b",
        online_peers={"h"},
        takeover_ms=HOLD_MS,
        release_hold_ms=HOLD_MS,
        declared_interest=declared,
        evidence_leaves=tree.leaves,
        resend_ticks=5,
        inhibit_ticks=3,
        potentials={leaf: 1.0 for leaf in tree.leaves},
    )
    inbox: list[object] = []
    if declared:
        inbox.append(Interest("h", (start - 1, 0, "h"), (node,)))
    inbox.append(Transition(node, "h", NodeStatus.WORKING, (start, 0, "h")))
    t, forged_sent = start, False
    while t < start + 16_000:
        t += 50
        now = (t, 0, "b")
        if not forged_sent and t >= start + forged_at:
            forged_sent = True
            stamp = (t + offset, 0, "h")
            if "inactive" in forged:
                inbox.append(Transition(node, "h", NodeStatus.INACTIVE, stamp))
            if "done" in forged:
                inbox.append(Transition(node, "h", NodeStatus.DONE, stamp))
            if "snapshot" in forged:
                inbox.append(Snapshot("h", stamp, (), ()))
            if "interest" in forged:
                inbox.append(Interest("h", stamp, ()))
        if t == start + works_for // 50 * 50 + 50:
            inbox.append(EffectConfirmed(node))  # h placed it: the world shows it done
        events, inbox = [*inbox, Tick()], []
        for event in events:
            for action in c.handle(event, now):
                if isinstance(action, StartBehaviour) and action.node in conflicts:
                    why = f"tree={text} t={t - start} forged={sorted(forged)}@{forged_at}"
                    assert t >= holder.until, f"started {action.node} while h works: {why}"
                    assert t >= start + forged_at + HOLD_MS, f"before the lease: {why}"
                inbox += holder.answer(action, t)
        if forged_sent and t < start + forged_at + HOLD_MS and t < holder.until:
            assert not c.allowed(node), f"tree={text} t={t - start}: released before the lease"


def _started(actions: list) -> bool:
    return any(isinstance(a, StartBehaviour) for a in actions)


def test_a_peers_done_holds_its_leaf_back_until_the_next_keyframe_and_no_longer() -> None:
    """A peer reports a leaf done that this member's world does not show yet: it does
    not claim the leaf (the claim would lose to the report) until its next keyframe;
    a keyframe that does not show it done frees it, and after ``DOUBT_LIMIT`` such
    keyframes the reports hold it back no more (a forged done cannot freeze it)."""
    tree = parse_tree("cup")
    (leaf,) = tree.leaves
    c = TaskController(tree, "b", evidence_leaves=[leaf], default_potential=1.0)
    t = 1_000

    def handle(event) -> list:
        nonlocal t
        t += 10
        return c.handle(event, (t, 0, "b"))

    handle(WorldShown())
    for _ in range(DOUBT_LIMIT):
        handle(Transition(leaf, "h", NodeStatus.DONE, (t, 0, "h")))
        assert not _started(handle(Tick())), "held back until the next keyframe"
        handle(WorldShown())
    handle(Transition(leaf, "h", NodeStatus.DONE, (t, 0, "h")))
    assert _started(handle(Tick())), "past the limit, a report holds nothing back"
    assert leaf not in c.done


def test_without_keyframes_a_peers_done_holds_nothing_back() -> None:
    """A controller whose world sends no keyframes (no ``WorldShown``) has nothing to
    free a doubted leaf: it doubts none."""
    tree = parse_tree("cup")
    (leaf,) = tree.leaves
    c = TaskController(tree, "b", evidence_leaves=[leaf], default_potential=1.0)
    c.handle(Transition(leaf, "h", NodeStatus.DONE, (1_000, 0, "h")), (1_000, 0, "b"))
    assert _started(c.handle(Tick(), (1_010, 0, "b")))


@settings(max_examples=300, print_blob=True, deadline=None)
@given(
    steps=st.lists(
        st.sampled_from(["transition", "snapshot", "reply", "keyframe", "tick", "confirm"]),
        max_size=60,
    )
)
def test_peers_dones_hold_a_leaf_back_through_few_keyframes_and_only_after_a_report(
    steps: list[str],
) -> None:
    """Whatever peers report and whenever keyframes come: a free leaf is held back
    (a tick starts nothing) only after a keyframe and a report since it, through at
    most ``DOUBT_LIMIT`` keyframes that did not show it done; a keyframe that shows it
    done (``EffectConfirmed``) makes it done."""
    tree = parse_tree("cup")
    (leaf,) = tree.leaves
    c = TaskController(tree, "b", evidence_leaves=[leaf], default_potential=1.0)
    t, keyframes, reported = 1_000, 0, False
    held_at: set[int] = set()
    for kind in steps:
        t += 10
        now, stamp = (t, 0, "b"), (t, 0, "h")
        if kind == "transition":
            c.handle(Transition(leaf, "h", NodeStatus.DONE, stamp), now)
        elif kind == "snapshot":
            c.handle(Snapshot("h", stamp, (leaf,), ()), now)
        elif kind == "reply":
            reports = (NodeReport(leaf, PeerState.DONE),)
            c.handle(ClaimReply("x", leaf, "b", "h", reports), now)
        elif kind == "confirm":
            c.handle(EffectConfirmed(leaf), now)
            assert leaf in c.done
            return
        elif kind == "keyframe":
            c.handle(WorldShown(), now)
            keyframes, reported = keyframes + 1, False
        else:
            if _started(c.handle(Tick(), now)):
                return
            assert keyframes and reported, "held back without a keyframe and a report"
            held_at.add(keyframes)
        if kind in ("transition", "snapshot", "reply"):
            reported = True
            assert leaf not in c.done  # rule 7 still: a report is not the world
    assert len(held_at) <= DOUBT_LIMIT, held_at
