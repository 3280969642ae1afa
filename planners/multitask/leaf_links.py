"""Where each leaf sits in the tree, read once from its shape: the claimant set (the
leaf and its ancestors), its tree order, its heir (the next sibling in its THEN) and,
for a pick, the place of its object later in that THEN.

One module because these are fixed for a problem and both halves of the allocator
read them: requests (claimant, order, eq. 1's heir) and hand-offs (heir, place).
"""

from __future__ import annotations

from collections.abc import Mapping

from teamtree.planners.multitask.model import Behaviour, BehaviourKind
from teamtree.planners.tasktree import NodeKind, TaskTree

__all__ = ["LeafLinks"]


class LeafLinks:
    """Each leaf's claimant set, tree order, heir and (picks) place; pure and fixed."""

    def __init__(self, tree: TaskTree, behaviours: Mapping[str, Behaviour]) -> None:
        self.order = {n.id: i for i, n in enumerate(tree)}
        """Node id -> its position in tree order (ties between equal potentials)."""
        self.claimant = {leaf: frozenset({leaf, *tree.ancestors(leaf)}) for leaf in tree.leaves}
        """Leaf -> the leaf and its ancestors (resources reserved to any are the leaf's)."""
        self.heir: dict[str, str | None] = {}
        """Leaf -> the next sibling in its THEN (None if last or not under a THEN)."""
        self.place_for: dict[str, str | None] = {}
        """Pick leaf under a THEN -> the later PLACE of the same object in it, if any."""
        for leaf in tree.leaves:
            parent_id = tree.parents[leaf]
            parent = tree[parent_id] if parent_id is not None else None
            heir = None
            if parent is not None and parent.kind is NodeKind.THEN:
                kids = [c.id for c in parent.children]
                i = kids.index(leaf)
                heir = kids[i + 1] if i + 1 < len(kids) else None
                b = behaviours[leaf]
                if b.kind is BehaviourKind.PICK:
                    self.place_for[leaf] = next(
                        (
                            k
                            for k in kids[i + 1 :]
                            if tree[k].is_leaf
                            and behaviours[k].kind is BehaviourKind.PLACE
                            and behaviours[k].object == b.object
                        ),
                        None,
                    )
            self.heir[leaf] = heir
