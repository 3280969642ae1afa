"""The mission's progress as an observer tracks it (agents.observers.mission): what
`teamtree record --until-done` (compose's mission outcome) ends on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.mission import MissionProgress
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import HlcStamp
from teamtree.planners.tasktree import parse_tree
from tests.test_wire import bodies

TREE = parse_tree("THEN(AND(burger, cup), AND(tea_pot, sugar))")
LEAVES = list(TREE.leaves)


def env(kind: str, sender: str, body: object) -> Envelope:
    return Envelope(kind=kind, sender=sender, hid=1, ts=1, hlc=HlcStamp(1, 0, sender), body=body)


def mission(tree=TREE) -> Envelope:
    return env(
        "mission.tree",
        "pr2",
        {"kind": "tasktree", "tree": tree.to_dict(), "text": tree.to_string()},
    )


def done(node: str, agent: str = "pr2", status: str = "done") -> Envelope:
    return env("node.transition", agent, {"node": node, "agent": agent, "status": status})


def snapshot(agent: str, nodes: list[str]) -> Envelope:
    return env("node.snapshot", agent, {"agent": agent, "done": nodes})


def test_every_leaf_done_live_completes_the_mission() -> None:
    progress = MissionProgress()
    assert not progress.complete and progress.missing() == []
    progress.feed(mission(), retained=True)  # the tree may come retained
    assert progress.missing() == [TREE[n].label for n in LEAVES]
    for leaf in LEAVES[:-1]:
        progress.feed(done(leaf), retained=False)
        assert not progress.complete
    progress.feed(done(LEAVES[-1], "baxter", "skipped"), retained=False)
    assert progress.complete and progress.missing() == []
    assert progress.done[LEAVES[-1]] == "baxter"


def test_an_earlier_missions_retained_state_does_not_count() -> None:
    progress = MissionProgress()
    progress.feed(mission(), retained=True)
    progress.feed(snapshot("pr2", LEAVES), retained=True)
    for leaf in LEAVES:
        progress.feed(done(leaf), retained=True)
    assert not progress.complete
    # a live snapshot lists what the robots saw done now (e.g. by the human's hand)
    progress.feed(snapshot("baxter", LEAVES), retained=False)
    assert progress.complete and set(progress.done.values()) == {"baxter"}


def test_a_new_tree_keeps_only_its_own_leaves() -> None:
    progress = MissionProgress()
    progress.feed(mission(), retained=False)
    progress.feed(done(LEAVES[0]), retained=False)
    other = parse_tree("AND(apple, orange)")
    progress.feed(mission(other), retained=False)
    assert progress.leaves == list(other.leaves)
    assert not set(progress.done) - set(other.leaves)


kinds = st.sampled_from(["mission.tree", "node.transition", "node.snapshot", "presence", "x"])


@settings(max_examples=300, deadline=None)
@given(
    noise=st.lists(st.tuples(kinds, bodies, st.booleans()), max_size=20),
    order=st.permutations(LEAVES),
    retained_dones=st.lists(st.sampled_from(LEAVES), max_size=6),
)
def test_hostile_messages_never_raise_nor_finish_the_mission(noise, order, retained_dones):
    """Whatever else arrives, the mission completes exactly when its last leaf is
    reported done live, and bad bodies are ignored."""
    progress = MissionProgress()
    progress.feed(mission(), retained=True)
    for kind, body, retained in noise:
        if kind == "mission.tree":
            continue  # another tree would be another mission
        if kind in ("node.transition", "node.snapshot") and not retained:
            continue  # live progress of unknown shape: covered by the cases above
        progress.feed(env(kind, "x", body), retained=retained)
    for leaf in retained_dones:
        progress.feed(done(leaf), retained=True)
    assert not progress.complete
    for i, leaf in enumerate(order):
        progress.feed(done(leaf), retained=False)
        assert progress.complete == (i == len(order) - 1)


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(st.tuples(kinds, bodies, st.booleans()), max_size=30))
def test_any_message_is_taken_without_raising(messages):
    progress = MissionProgress()
    for kind, body, retained in messages:
        progress.feed(env(kind, "x", body), retained=retained)
    assert isinstance(progress.missing(), list)
    assert progress.complete == (bool(progress.leaves) and not progress.missing())


def test_an_or_needs_one_branch_and_the_other_is_never_waited_for() -> None:
    """tea_party_s3's shape: once the apple is placed, the orange is not needed."""
    tree = parse_tree("THEN(AND(burger, cup), OR(apple, orange))")
    burger, cup, apple, orange = tree.leaves
    progress = MissionProgress()
    progress.feed(mission(tree), retained=False)
    progress.feed(done(burger), retained=False)
    progress.feed(done(cup, "baxter"), retained=False)
    assert not progress.complete
    assert progress.missing() == [tree[apple].label, tree[orange].label]
    progress.feed(done(apple, "baxter"), retained=False)
    assert progress.complete and progress.missing() == []
    assert orange not in progress.done
