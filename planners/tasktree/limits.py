"""How big and how deep a task tree may be, and why those numbers.

Every message that grows with the tree must fit the wire's payload cap
(``broker.envelope.MAX_PAYLOAD``, ``PAYLOAD_CAP`` here), or the robot that publishes it fails with
TooLargeError in the middle of a mission. Those messages are, per leaf:

- the ``mission.tree`` body (the tree's dict form and its compact text: every node's
  id, behaviour and parameters), published retained by every robot;
- a claim reply, which reports on every leaf of the claimed leaf's conflict set (the
  leaves of the other branches of each OR above it) that the replier knows done or
  worked on: at worst, each such report names a working agent and its stamp;
- a snapshot's ``done`` list and an interest declaration: leaf ids.

``tree_wire_bytes`` bounds the largest of them from the tree itself (the mission body
is encoded; the reply and the lists are summed from the worst case of each report),
and ``check_tree_limits`` refuses a tree whose bound does not fit
``TREE_WIRE_BUDGET``: the cap less the largest envelope header, the mission stamp and
``KIND_KEYS_BYTES`` of room for a kind's own keys in its mission body.

``MAX_TREE_NODES`` bounds the work a tree makes per message (conflict sets,
activation spreading): 2,048 nodes is 2.7 times the largest tree the benchmarks run
(``bench_tasktree.py --behaviours 500``: 751 nodes), and such a tree of path ids and
``PLACE(object=...)`` leaves encodes to about half the budget. ``MAX_TREE_DEPTH``
(32 levels; the configs' trees are 2-5 deep) keeps every recursive walk of a tree far
from Python's recursion limit. The parsers check depth before they recurse.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from teamtree.broker import SpecificationError
from teamtree.planners.tasktree.node_kind import NodeKind

if TYPE_CHECKING:
    from teamtree.planners.tasktree.tree import TaskNode, TaskTree

__all__ = [
    "HEADER_BYTES",
    "KIND_KEYS_BYTES",
    "MAX_TREE_DEPTH",
    "MAX_TREE_NODES",
    "PAYLOAD_CAP",
    "TREE_WIRE_BUDGET",
    "check_tree_limits",
    "check_tree_shape",
    "tree_depth",
    "tree_wire_bytes",
]

MAX_TREE_DEPTH = 32
"""Levels from the root to the deepest leaf, both counted (a bare leaf is 1 deep)."""
MAX_TREE_NODES = 2048
"""Goal nodes and leaves together."""
KIND_KEYS_BYTES = 16 * 1024
"""Room kept in a ``mission.tree`` body for a mission kind's own keys (the multitask
robot adds its start and its objects)."""

_MAX_ID = "x" * 64  # the longest agent id (broker.topics.ID_PATTERN)
_MAX_INT = 2**63 - 1


PAYLOAD_CAP = 256 * 1024
"""The wire's payload cap, ``broker.envelope.MAX_PAYLOAD`` (planners do not import the
wire; ``tests/test_tree_limits.py`` checks the two agree)."""
HEADER_BYTES = 960
"""The largest envelope around a body: every header field at its longest (kind 64
characters, ids 64, the optional strings 128, integers 9 bytes). Computed by
``tests/test_tree_limits.py``, which encodes such an envelope and checks this is no
less."""

_MISSION_STAMP_BYTES = len(msgspec.msgpack.encode({"mission": _MAX_ID})) - 1
TREE_WIRE_BUDGET = PAYLOAD_CAP - HEADER_BYTES - _MISSION_STAMP_BYTES - KIND_KEYS_BYTES
"""Bytes a tree's largest message body may take (``tree_wire_bytes``)."""


def _str_bytes(text: str) -> int:
    """A string's msgpack size: its UTF-8 bytes and the header."""
    n = len(text.encode("utf-8", "surrogatepass"))
    return n + (1 if n < 32 else 2 if n < 256 else 3 if n < 65536 else 5)


_STAMP = [_MAX_INT, _MAX_INT, _MAX_ID]
_REPORT_BYTES = len(
    msgspec.msgpack.encode(
        {"node": "", "state": "claimed", "agent": _MAX_ID, "stamp": _STAMP, "potential": 0.5}
    )
) - _str_bytes("")
"""One claim reply report, but its node id: at its largest (a working or claimed
report names an agent and a stamp)."""
_REPLY_BYTES = len(
    msgspec.msgpack.encode(
        {"claim_id": "x" * 128, "node": "", "claimant": _MAX_ID, "replier": _MAX_ID,
         "round": _MAX_INT, "reports": []}
    )
) - _str_bytes("") + 5  # fmt: skip
"""A claim reply but its claimed node's id and its reports (an array header of 5)."""
_LIST_BYTES = (
    len(msgspec.msgpack.encode({"agent": _MAX_ID, "stamp": _STAMP, "done": [], "working": None}))
    + 5
    + 64 * (_str_bytes(_MAX_ID) + 1)
)
"""A snapshot or a declaration but its leaf list (an array header of 5), with room
for a member working 64 leaves at once."""


def tree_depth(root: TaskNode) -> int:
    """Levels from `root` to its deepest leaf, both counted; not recursive."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((c, depth + 1) for c in node.children)
    return deepest


def _post_order(root: TaskNode) -> Iterator[TaskNode]:
    stack: list[tuple[TaskNode, bool]] = [(root, False)]
    while stack:
        node, seen = stack.pop()
        if seen or not node.children:
            yield node
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in node.children)


def _reply_bytes(tree: TaskTree) -> int:
    """The largest claim reply `tree` allows: over its leaves, every leaf of the
    conflict set reported at its largest."""
    under: dict[str, int] = {}  # node id -> its leaves' report bytes
    for node in _post_order(tree.root):
        if node.is_leaf:
            under[node.id] = _REPORT_BYTES + _str_bytes(node.id)
        else:
            under[node.id] = sum(under[c.id] for c in node.children)
    largest = 0
    stack = [(tree.root, 0)]  # node, bytes of the other OR branches above it
    while stack:
        node, other = stack.pop()
        if node.is_leaf:
            largest = max(largest, _str_bytes(node.id) + under[node.id] + other)
            continue
        for child in node.children:
            extra = under[node.id] - under[child.id] if node.kind is NodeKind.OR else 0
            stack.append((child, other + extra))
    return _REPLY_BYTES + largest


def tree_wire_bytes(tree: TaskTree) -> int:
    """An upper bound on the body of the largest message `tree` makes (module
    docstring): its mission body, a claim reply, a snapshot's or declaration's list."""
    body = {
        "kind": "multitask",
        "tree": tree.to_dict(),
        "text": tree.to_string(),
        "mission": _MAX_ID,  # the stamp, counted here too: a bound, not an estimate
    }
    mission = len(msgspec.msgpack.encode(body))
    listed = _LIST_BYTES + sum(_str_bytes(leaf) for leaf in tree.leaves)
    return max(mission, _reply_bytes(tree), listed)


def check_tree_shape(depth: int, nodes: int, where: str) -> None:
    """SpecificationError naming `where` when a tree seen so far is `depth` levels
    deep or holds `nodes` nodes beyond the limits."""
    if len(where) > 120:  # a path down a deep tree: its ends say where
        where = f"{where[:60]}...{where[-50:]}"
    if depth > MAX_TREE_DEPTH:
        raise SpecificationError(
            f"{where}: the tree is nested more than {MAX_TREE_DEPTH} levels deep; "
            "flatten it (an AND inside an AND, or a THEN inside a THEN, merges into its "
            "parent) or split the mission in several"
        )
    if nodes > MAX_TREE_NODES:
        raise SpecificationError(
            f"{where}: the tree has more than {MAX_TREE_NODES} nodes (goals and leaves); "
            "split the mission in several, each at most that size"
        )


def check_tree_limits(tree: TaskTree, where: str = "tree") -> None:
    """SpecificationError naming `where` when `tree` is deeper than
    ``MAX_TREE_DEPTH``, has more than ``MAX_TREE_NODES`` nodes, or makes a message
    over ``TREE_WIRE_BUDGET`` bytes (module docstring)."""
    check_tree_shape(tree_depth(tree.root), len(tree), where)
    size = tree_wire_bytes(tree)
    if size > TREE_WIRE_BUDGET:
        raise SpecificationError(
            f"{where}: the tree's messages would take {size} bytes, over the "
            f"{TREE_WIRE_BUDGET} a message may carry ({PAYLOAD_CAP} less its headers); "
            "shorten node ids, names and parameters, or split the mission in several"
        )
