"""Activation spreading over a task tree (seed 000 §2.2).

Top-down, each goal passes its *activation level* to the children its constraint
allows now; bottom-up, each node's *activation potential* is the best potential of
a behaviour below it that could run. The update loop picks the leaf with the highest
``level * potential``.

Readings chosen where the paper is not explicit:

- Levels are 1.0 (allowed) or 0.0 (not allowed); the paper gives no decay per level,
  and a constant keeps potentials comparable across depths.
- THEN passes its level to its first child that is not done. AND passes it to every
  child not done. OR passes it to every child until one child is *committed* (a leaf
  under it is working somewhere or done); from then on only that child gets it, and
  once it is done the OR is done and the others are no longer needed. Committing on
  *start* (not only on done) is what makes "exactly one child of each OR" hold with
  several robots.
- A leaf a team member is working on has level 1 if allowed but is not selectable.
- "Lowering the activation" of a lost claim (Figs. 7, 8) multiplies that leaf's
  potential by an inhibition factor the caller keeps (``TaskController`` does).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from teamtree.planners.tasktree.status import NodeStatus
from teamtree.planners.tasktree.tree import NodeKind, TaskTree

__all__ = [
    "NodeActivation",
    "node_statuses",
    "select_behaviour",
    "spread_activation",
]


@dataclass(frozen=True)
class NodeActivation:
    """One node's activation state after a spreading pass (§2.2).

    ``level``: top-down activation level (1.0 when the constraints allow the node now).
    ``potential``: bottom-up activation potential (for a leaf, its metric times its
    inhibition, 0 if it cannot be selected; for a goal, the max over its children).
    ``satisfied``: the node's constraint is met (leaf: done).
    ``committed``: some leaf below is working somewhere or done.
    """

    level: float
    potential: float
    satisfied: bool
    committed: bool


class _Layout:
    """A tree flattened for spreading (pre-order ids, each goal's kind and children),
    with the last structural pass (satisfied, committed, level) and the done and
    working sets it was made for: potentials change on every observation, done and
    working far less often, and walking ``TaskNode`` objects costs more than the
    arithmetic on a big tree."""

    __slots__ = ("goals", "leaves", "memo", "order", "reversed_steps", "root", "tree")

    def __init__(self, tree: TaskTree):
        self.tree = weakref.ref(tree)
        nodes = list(tree)
        self.order: tuple[str, ...] = tuple(n.id for n in nodes)
        self.root = tree.root.id
        self.leaves: frozenset[str] = frozenset(n.id for n in nodes if n.is_leaf)
        # (id, kind, child ids) of every goal, in pre-order
        self.goals: tuple[tuple[str, NodeKind, tuple[str, ...]], ...] = tuple(
            (n.id, n.kind, tuple(c.id for c in n.children)) for n in nodes if not n.is_leaf
        )
        # every node children first (reversed pre-order); child ids empty for leaves
        self.reversed_steps: tuple[tuple[str, NodeKind, tuple[str, ...]], ...] = tuple(
            (n.id, n.kind, tuple(c.id for c in n.children)) for n in reversed(nodes)
        )
        self.memo: tuple[Any, ...] | None = None


_LAYOUTS: dict[int, _Layout] = {}


def _layout(tree: TaskTree) -> _Layout:
    """The tree's layout, made once per tree object (trees are immutable)."""
    layout = _LAYOUTS.get(id(tree))
    if layout is None or layout.tree() is not tree:
        layout = _Layout(tree)
        _LAYOUTS[id(tree)] = layout
        weakref.finalize(tree, _LAYOUTS.pop, id(tree), None)
    return layout


def _structure(
    layout: _Layout, done_set: frozenset[str], working_set: frozenset[str]
) -> tuple[dict[str, bool], dict[str, bool], dict[str, float]]:
    """Satisfied, committed (bottom-up) and level (top-down) of every node."""
    memo = layout.memo
    if memo is not None and memo[0] == done_set and memo[1] == working_set:
        return memo[2]
    satisfied: dict[str, bool] = {}
    committed: dict[str, bool] = {}
    for node_id, kind, kids in layout.reversed_steps:
        if kind is NodeKind.BEHAVIOR:
            satisfied[node_id] = node_id in done_set
            committed[node_id] = node_id in done_set or node_id in working_set
            continue
        if kind is NodeKind.OR:
            satisfied[node_id] = any(satisfied[k] for k in kids)
        else:
            satisfied[node_id] = all(satisfied[k] for k in kids)
        committed[node_id] = any(committed[k] for k in kids)
    level: dict[str, float] = {layout.root: 0.0 if satisfied[layout.root] else 1.0}
    for node_id, kind, kids in layout.goals:
        lv = level[node_id]
        for k in kids:
            level[k] = 0.0
        if lv <= 0.0 or satisfied[node_id]:
            continue
        if kind is NodeKind.THEN:
            first = next(k for k in kids if not satisfied[k])
            level[first] = lv
        elif kind is NodeKind.AND:
            for k in kids:
                if not satisfied[k]:
                    level[k] = lv
        else:  # OR
            chosen = next((k for k in kids if committed[k]), None)
            for k in [chosen] if chosen is not None else kids:
                level[k] = lv
    result = (satisfied, committed, level)
    layout.memo = (done_set, working_set, result)
    return result


def spread_activation(
    tree: TaskTree,
    done: Collection[str],
    working: Collection[str],
    potentials: Mapping[str, float] | None = None,
    *,
    default_potential: float = 1.0,
    inhibition: Mapping[str, float] | None = None,
) -> dict[str, NodeActivation]:
    """One top-down + bottom-up pass; returns every node's ``NodeActivation``.

    ``done``: leaves completed by anyone; ``working``: leaves someone executes;
    ``potentials``: per-leaf metric (eq. 1), missing leaves get ``default_potential``;
    ``inhibition``: per-leaf factor applied to the potential (1.0 when absent).
    Pure; never raises for ids it does not know (they are ignored).
    """
    potentials = potentials or {}
    inhibition = inhibition or {}
    layout = _layout(tree)
    satisfied, committed, level = _structure(layout, frozenset(done), frozenset(working))
    # bottom-up: potentials
    pot: dict[str, float] = {}
    for node_id, kind, kids in layout.reversed_steps:
        if kind is NodeKind.BEHAVIOR:
            selectable = level[node_id] > 0.0 and not committed[node_id]
            p = float(potentials.get(node_id, default_potential))
            p *= float(inhibition.get(node_id, 1.0))
            pot[node_id] = max(p, 0.0) if selectable else 0.0
        else:
            pot[node_id] = max(pot[k] for k in kids)
    return {n: NodeActivation(level[n], pot[n], satisfied[n], committed[n]) for n in layout.order}


def select_behaviour(tree: TaskTree, acts: Mapping[str, NodeActivation]) -> str | None:
    """The leaf to activate: highest ``level * potential`` > 0, ties to the leftmost (§2.2).

    Returns None when no leaf can be selected.
    """
    best: str | None = None
    best_value = 0.0
    for leaf in tree.leaves:
        a = acts[leaf]
        value = a.level * a.potential
        if value > best_value:
            best, best_value = leaf, value
    return best


def node_statuses(
    tree: TaskTree,
    acts: Mapping[str, NodeActivation],
    working_here: Collection[str] = (),
) -> dict[str, NodeStatus]:
    """Each node's status in one member's copy (see ``NodeStatus``).

    ``working_here``: the leaves this member executes (a robot: at most one).
    """
    here = set(working_here)
    out: dict[str, NodeStatus] = {}
    for node in reversed(list(tree)):
        a = acts[node.id]
        if a.satisfied:
            out[node.id] = NodeStatus.DONE
        elif node.is_leaf:
            if node.id in here:
                out[node.id] = NodeStatus.WORKING
            elif a.level > 0.0 and not a.committed:
                out[node.id] = NodeStatus.ACTIVE
            else:
                out[node.id] = NodeStatus.INACTIVE
        elif any(out[c.id] is NodeStatus.WORKING for c in node.children):
            out[node.id] = NodeStatus.WORKING
        elif a.level > 0.0:
            out[node.id] = NodeStatus.ACTIVE
        else:
            out[node.id] = NodeStatus.INACTIVE
    return out
