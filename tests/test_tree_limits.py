"""How big a task tree may be: the bound on its messages holds for every message the
robots really encode, a tree within the limits fits the wire, and the parsers refuse
anything deeper or bigger with a SpecificationError naming the limit, never a
RecursionError, whatever the input."""

from __future__ import annotations

import math

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.config import parse_mission
from teamtree.agents.treeprotocol.mission_wire import mission_tree_body, tree_from_body
from teamtree.agents.treeprotocol.peer_wire import reply_to_wire, snapshot_to_wire
from teamtree.broker import ConfigError, Envelope, HlcStamp, SpecificationError, encode
from teamtree.broker.envelope import MAX_PAYLOAD
from teamtree.planners.tasktree import (
    ClaimReply,
    NodeReport,
    PeerState,
    Snapshot,
    TaskTree,
    conflict_set,
    parse_tree,
    tree_from_dict,
    tree_wire_bytes,
)
from teamtree.planners.tasktree.limits import (
    HEADER_BYTES,
    MAX_TREE_DEPTH,
    MAX_TREE_NODES,
    PAYLOAD_CAP,
    TREE_WIRE_BUDGET,
)

LONGEST_ID = "x" * 64
BIG = 2**63 - 1


def _envelope(body: object) -> bytes:
    """`body` in an envelope whose every header is at its longest."""
    long = "y" * 128
    return encode(
        Envelope("k" * 64, LONGEST_ID, BIG, BIG, HlcStamp(BIG, BIG, LONGEST_ID), body,
                 long, long, BIG, long, long, long)
    )  # fmt: skip


def test_the_planners_copy_of_the_wire_cap_and_header_is_true() -> None:
    assert PAYLOAD_CAP == MAX_PAYLOAD
    assert len(_envelope(None)) - 1 <= HEADER_BYTES  # less the nil body


@st.composite
def trees(draw: st.DrawFn) -> str:
    """Random trees of random ids' lengths and parameters (compact form)."""
    counter = iter(range(10_000))
    name = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=40)

    def node(depth: int) -> str:
        if depth >= 4 or draw(st.integers(0, 9)) < 4:
            obj = draw(name) + str(next(counter))
            if draw(st.booleans()):
                return obj
            value = draw(st.one_of(st.integers(-(10**9), 10**9), st.floats(-1e9, 1e9), name))
            value = f'"{value}"' if isinstance(value, str) else repr(value)
            return f"MOVE({obj}, speed={value})"
        kind = draw(st.sampled_from(["THEN", "AND", "OR"]))
        return f"{kind}({', '.join(node(depth + 1) for _ in range(draw(st.integers(1, 5))))})"

    return node(0)


def _largest_messages(tree: TaskTree) -> list[object]:
    """The bodies the robots encode for `tree`, each at its largest."""
    stamp = (BIG, BIG, LONGEST_ID)
    bodies: list[object] = [{**mission_tree_body(tree, "multitask"), "mission": LONGEST_ID}]
    for leaf in tree.leaves:  # every conflict set reported working, with the longest ids
        reports = tuple(
            NodeReport(n, PeerState.WORKING, LONGEST_ID, stamp, 0.5)
            for n in [leaf, *sorted(conflict_set(tree, leaf) - {leaf})]
        )
        reply = ClaimReply("c" * 128, leaf, LONGEST_ID, LONGEST_ID, reports, BIG)
        bodies.append(reply_to_wire(reply))
    bodies.append(snapshot_to_wire(Snapshot(LONGEST_ID, stamp, tuple(tree.leaves), ())))
    return bodies


@settings(max_examples=100, deadline=None)
@given(text=trees())
def test_the_bound_covers_every_message_a_tree_makes(text: str) -> None:
    tree = parse_tree(text)
    bound = tree_wire_bytes(tree)
    for body in _largest_messages(tree):
        size = len(msgspec.msgpack.encode(body))
        assert size <= bound, f"{size} > {bound} for {type(body).__name__} of {text}"
        assert len(_envelope(body)) <= size + HEADER_BYTES


def _bench_tree(pairs: int, name: str = "o") -> str:
    return "AND(" + ", ".join(f"THEN({name}{2 * i}, {name}{2 * i + 1})" for i in range(pairs)) + ")"


def test_the_biggest_tree_allowed_of_the_benchmarks_shape_fits_the_wire() -> None:
    pairs = (MAX_TREE_NODES - 1) // 3  # an AND of THENs of two leaves
    tree = parse_tree(_bench_tree(pairs))
    assert len(tree) <= MAX_TREE_NODES
    assert tree_wire_bytes(tree) <= TREE_WIRE_BUDGET // 2  # room for longer names
    assert tree_wire_bytes(parse_tree(_bench_tree(pairs, "object_"))) <= TREE_WIRE_BUDGET
    for body in _largest_messages(tree)[:1]:  # the mission body (the replies are small)
        assert len(_envelope(body)) <= MAX_PAYLOAD


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("THEN(" * 3000 + "cup" + ")" * 3000, f"more than {MAX_TREE_DEPTH} levels"),
        ("THEN(" * MAX_TREE_DEPTH + "cup" + ")" * MAX_TREE_DEPTH, f"more than {MAX_TREE_DEPTH}"),
        ("AND(" + ", ".join(f"o{i}" for i in range(20_000)) + ")", f"{MAX_TREE_NODES} nodes"),
        ("AND(" + ", ".join(f"o{i}" for i in range(MAX_TREE_NODES)) + ")", "nodes"),
        ("OR(" + ", ".join(f"{'o' * 200}{i}" for i in range(1500)) + ")", "bytes"),
        ("MOVE(cup, x=1e999)", "finite"),
    ],
    ids=["3000-deep", "one-too-deep", "20000-leaves", "one-too-many", "long-names", "inf"],
)
def test_a_tree_beyond_the_limits_is_refused_naming_the_limit(text: str, words: str) -> None:
    with pytest.raises(SpecificationError, match=words) as caught:
        parse_tree(text)
    assert len(str(caught.value)) < 1000, "the message quotes the whole tree"
    with pytest.raises(SpecificationError, match=words):
        tree_from_dict({"type": "and", "children": [text]}, where="mission.tree")


def test_the_deepest_and_biggest_trees_allowed_parse() -> None:
    depth = MAX_TREE_DEPTH - 1  # goals above one leaf
    assert len(parse_tree("THEN(" * depth + "cup" + ")" * depth)) == MAX_TREE_DEPTH
    wide = parse_tree("AND(" + ", ".join(f"o{i}" for i in range(MAX_TREE_NODES - 1)) + ")")
    assert len(wide) == MAX_TREE_NODES


def _nested(depth: int, form: str) -> object:
    """A tree of `depth` goals above one leaf, in `form`."""
    if form == "text":
        return "THEN(" * depth + "cup" + ")" * depth
    node: dict = {"id": "leaf", "behavior": "PLACE", "params": {"object": "cup"}}
    for i in range(depth):
        if form == "shorthand":
            node = {"then": [node]}
        else:
            node = {"id": f"n{i}", "type": "then", "children": [node]}
    return node


@given(
    depth=st.one_of(st.integers(1, 2 * MAX_TREE_DEPTH), st.integers(1, 3000)),
    form=st.sampled_from(["text", "dict", "shorthand", "wire"]),
)
@settings(max_examples=60, deadline=None)
def test_any_depth_parses_or_is_refused_never_a_recursion_error(depth: int, form: str) -> None:
    node = _nested(depth, form)
    try:
        if form == "wire":  # a mission.tree body as a robot's peer or an observer reads it
            tree_from_body({"kind": "tasktree", "tree": node, "text": ""})
        elif isinstance(node, str):
            parse_tree(node)
        else:
            tree_from_dict(node, where="mission.tree")  # type: ignore[arg-type]
    except (SpecificationError, ValueError) as exc:  # MissionWireError is a ValueError
        assert depth + 1 > MAX_TREE_DEPTH, f"{depth} {form}: {exc}"
        assert "levels deep" in str(exc), str(exc)
    else:
        assert depth + 1 <= MAX_TREE_DEPTH


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"kind": "tasktree", "timeout_s": math.nan}, "mission.timeout_s"),
        ({"kind": "tasktree", "timeout_s": math.inf}, "mission.timeout_s"),
        ({"kind": "tasktree", "timeout_s": -1}, "mission.timeout_s"),
        ({"kind": "ltl", "time_factor": math.nan}, "mission.time_factor"),
        ({"kind": "factory", "window_s": -0.5}, "mission.window_s"),
        ({"kind": "tasktree", "tree": {"object": "cup", "params": {"x": -math.inf}}},
         "mission.tree.params.x"),
    ],
)  # fmt: skip
def test_a_number_no_mission_may_hold_is_refused_naming_the_key(table: dict, key: str) -> None:
    from pathlib import Path

    with pytest.raises(ConfigError) as caught:
        parse_mission(table, Path("<submitted>"))
    assert caught.value.key == key, str(caught.value)
