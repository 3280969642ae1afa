"""The ``mission.tree`` body on ``_/mission`` (docs/protocol.md, "Task trees") as
declared msgspec Structs: the tree with its stable node ids, its compact text, and the
mission kind. Robots (seed 000) and multitask robots (seed 004, which add their own
keys) publish it retained; a member that reads it back decodes it with
``decode_mission_tree``, which raises MissionWireError (a ``ValueError`` naming the
field's path, e.g. ``$.tree.children[1].id``) on a malformed body. Unknown keys are
ignored.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body
from teamtree.broker import SpecificationError
from teamtree.planners.tasktree import TaskTree, check_tree_shape, tree_from_dict
from teamtree.planners.tasktree.limits import MAX_TREE_DEPTH


class MissionWireError(ValueError):
    """A ``mission.tree`` body that does not match its declared type."""


class TreeNodeWire(Struct, frozen=True, omit_defaults=True):
    """One node: an inner node has ``type`` (then, and, or) and ``children``; a leaf has
    ``behavior`` and ``params``; either may have a ``name``."""

    id: str
    name: str | None = None
    type: str | None = None
    children: list[TreeNodeWire] | None = None
    behavior: str | None = None
    params: dict[str, Any] | None = None


class MissionTreeBody(Struct, frozen=True):
    """The ``mission.tree`` body."""

    kind: str
    tree: TreeNodeWire
    text: str


def mission_tree_body(tree: TaskTree, kind: str = "tasktree") -> dict[str, Any]:
    """The body for `tree` (a kind may add its own keys to it)."""
    return {"kind": kind, "tree": tree.to_dict(), "text": tree.to_string()}


def decode_mission_tree(body: Any) -> MissionTreeBody:
    """A ``mission.tree`` body; raises MissionWireError naming the field, or the depth
    limit when its tree nests deeper than a tree may (measured before the typed
    decode recurses into it)."""
    tree = body.get("tree") if isinstance(body, dict) else None
    try:
        check_tree_shape(_depth(tree), 0, "$.tree")
    except SpecificationError as exc:
        raise MissionWireError(f"bad mission.tree body: {exc}") from None
    return decode_body(body, MissionTreeBody, MissionWireError, "mission.tree")


def _depth(tree: Any) -> int:
    """Levels of ``children`` in a tree's dict form, counted without recursion (up to
    one beyond the limit)."""
    deepest, stack = 0, [(tree, 1)]
    while stack and deepest <= MAX_TREE_DEPTH:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        children = node.get("children") if isinstance(node, dict) else None
        if isinstance(children, list):
            stack.extend((child, depth + 1) for child in children)
    return deepest


def tree_from_body(body: Any) -> TaskTree:
    """The TaskTree a ``mission.tree`` body carries; raises MissionWireError (also when
    the tree's shape is wrong, e.g. an inner node without children)."""
    decoded = decode_mission_tree(body)
    try:
        return tree_from_dict(msgspec.to_builtins(decoded.tree), where="mission.tree")
    except SpecificationError as exc:
        raise MissionWireError(f"bad mission.tree body: {exc}") from None
