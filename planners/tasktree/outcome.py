"""Whether a tree's constraints are met by a set of finished leaves, for readers that
see only leaves finish (``record --until-done``, compose's outcome).

THEN and AND are met when every child is; an OR when one child is, so the leaves of
the branches not taken are never needed (seed 000 §2.2: once an OR's child is done,
its siblings are not needed). ``peer_sim`` judges a simulated run the same way.
"""

from __future__ import annotations

from collections.abc import Container

from teamtree.planners.tasktree.tree import NodeKind, TaskTree

__all__ = ["leaves_still_needed", "satisfied_nodes"]


def satisfied_nodes(tree: TaskTree, finished: Container[str]) -> set[str]:
    """Ids of the nodes of `tree` whose constraint `finished` leaves satisfy."""
    out: set[str] = set()
    for node in reversed(list(tree)):  # children before their parents
        if node.is_leaf:
            met = node.id in finished
        elif node.kind is NodeKind.OR:
            met = any(c.id in out for c in node.children)
        else:
            met = all(c.id in out for c in node.children)
        if met:
            out.add(node.id)
    return out


def leaves_still_needed(tree: TaskTree, finished: Container[str]) -> list[str]:
    """Leaves (left to right) not finished and not below a satisfied node: what the
    mission still waits for (every branch of an OR none of whose branches is done)."""
    met = satisfied_nodes(tree, finished)
    return [
        leaf
        for leaf in tree.leaves
        if leaf not in met and not any(a in met for a in tree.ancestors(leaf))
    ]
