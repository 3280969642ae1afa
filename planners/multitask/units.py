"""Units: what a team of multitask robots divides between its members.

Seed 004 runs one robot. A team keeps the seed 000 peer rule, but not at the level of
single behaviours: a THEN chains one body through its children (a move hands the base
to the pick after it, a pick keeps its gripper until the place), so two robots cannot
split a THEN between them. Peers therefore claim *units*, and each robot allocates its
own resources among the units it holds (several at once: the PR2 of experiment 1
carries objects of two units in its two grippers).

A unit is the first THEN node or leaf met descending from the root through AND and OR
nodes only (our reading; the paper has no teams). In Fig. 4, AND(THEN(...) x 4), the
units are the four THENs. A THEN at the root makes the whole tree one unit, done by
one robot; an AND or OR inside a THEN belongs to the THEN's unit.

``unit_tree`` keeps the AND/OR structure above the units and turns each unit into a
leaf (behaviour ``UNIT``), so ``TaskController`` runs the peer rule over it unchanged:
OR exclusivity, done-ness, Last Will release and late joiners carry over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from teamtree.planners.multitask.allocator import MultitaskAllocator, MultitaskState, Request
from teamtree.planners.multitask.model import BehaviourKind, distance
from teamtree.planners.tasktree import NodeKind, TaskNode, TaskTree

__all__ = ["UNIT_BEHAVIOR", "adopt_peer_unit", "co_located_units", "unit_of", "unit_tree"]

UNIT_BEHAVIOR = "UNIT"
"""The behaviour name of a unit's leaf in the unit tree."""


def _is_unit(node: TaskNode) -> bool:
    return node.is_leaf or node.kind is NodeKind.THEN


def unit_of(tree: TaskTree) -> dict[str, str]:
    """Each leaf's unit id (see the module docstring)."""
    out: dict[str, str] = {}
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if _is_unit(node):
            out.update(dict.fromkeys(tree.leaf_ids(node.id), node.id))
        else:
            stack.extend(node.children)
    return out


def _collapse(node: TaskNode) -> TaskNode:
    if _is_unit(node):
        n_leaves = sum(1 for _ in _leaves(node))
        return TaskNode(
            node.id,
            NodeKind.BEHAVIOR,
            behavior=UNIT_BEHAVIOR,
            params=(("leaves", n_leaves), ("unit", node.id)),
            name=node.name,
        )
    return replace(node, children=tuple(_collapse(c) for c in node.children))


def _leaves(node: TaskNode) -> Iterable[TaskNode]:
    if node.is_leaf:
        yield node
    for c in node.children:
        yield from _leaves(c)


def unit_tree(tree: TaskTree) -> TaskTree:
    """The tree above the units, each unit a ``UNIT(unit=<id>, leaves=<n>)`` leaf."""
    return TaskTree(_collapse(tree.root))


def adopt_peer_unit(
    alloc: MultitaskAllocator,
    state: MultitaskState,
    leaves: Iterable[str],
) -> MultitaskState:
    """A peer completed the unit of ``leaves``: record them done in this robot's copy,
    with the objects its places put down (no shared world: the peer's word is taken)."""
    done = set(state.done)
    placed = set(state.world.placed)
    for leaf in leaves:
        if leaf in state.finished or leaf in state.working:
            continue
        done.add(leaf)
        b = alloc.behaviours[leaf]
        if b.kind is BehaviourKind.PLACE and b.object is not None:
            placed.add(b.object)
    world = replace(state.world, placed=frozenset(placed))
    return replace(state, done=frozenset(done), world=world)


def co_located_units(
    alloc: MultitaskAllocator,
    state: MultitaskState,
    move: Request,
    free_units: Iterable[str],
) -> list[str]:
    """Units worth claiming together with the unit of ``move`` (a team heuristic of
    ours, not the paper's): those among ``free_units`` whose remaining moves go to the
    same spots as the remaining moves of ``move``'s unit, in order and within the
    tolerance, as many as the grippers ``move`` leaves for them. Claimed at once,
    objects that travel the same route are carried together rather than split between
    two robots that both drive it. Objects that share only a pick spot are not
    bundled: one robot carrying both to opposite ends can be slower than two.
    Empty unless ``move`` is a MOVE.
    """
    if move.behaviour.kind is not BehaviourKind.MOVE:
        return []
    mine = unit_of(alloc.tree)[move.leaf]
    route = _route(alloc, state, mine)
    room = alloc.available_grippers(state, move.leaf) - 1
    out: list[str] = []
    for unit in free_units:
        if len(out) >= room:
            break
        if unit == mine or any(leaf in state.working for leaf in alloc.tree.leaf_ids(unit)):
            continue
        other = _route(alloc, state, unit)
        if len(other) == len(route) and all(
            distance(a, b) <= alloc.problem.tolerance for a, b in zip(route, other, strict=True)
        ):
            out.append(unit)
    return out


def _route(alloc: MultitaskAllocator, state: MultitaskState, unit: str) -> list:
    """The targets of the unit's moves not yet done, in order."""
    return [
        alloc.behaviours[leaf].target
        for leaf in alloc.tree.leaf_ids(unit)
        if leaf not in state.finished and alloc.behaviours[leaf].kind is BehaviourKind.MOVE
    ]
