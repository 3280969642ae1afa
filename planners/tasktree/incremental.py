"""Activation spreading kept up to date one leaf at a time (same results as
``spread_activation``, at a cost that does not grow with the tree).

``spread_activation`` walks the whole tree; a member calls it whenever done or working
changed, that is several times per behaviour for every member, so at 500 leaves most
of a robot's CPU went there. ``IncrementalSpread`` keeps satisfied, committed and level
of every node and, when some leaves change, walks up from each changed leaf only as far
as something changes, then re-levels only the children of the goals whose children
changed (and, below them, only what changed level). A goal keeps how many of its
children are satisfied and committed, and an AND whose own level stayed re-levels only
the children that changed, rather than walking every child of a changed leaf's parent
(the root AND of a 500-leaf tree has 250). Potentials are read lazily: the
``ActivationView`` it returns computes a node's ``NodeActivation`` when it is asked
for one, and keeps the selectable leaves (level > 0, not committed) as a set so a
member choosing a leaf looks at those only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from teamtree.planners.tasktree.activation import NodeActivation
from teamtree.planners.tasktree.tree import NodeKind, TaskTree

__all__ = ["ActivationView", "IncrementalSpread"]


class IncrementalSpread:
    """Satisfied, committed and level of every node of `tree`, updated by ``apply``."""

    def __init__(self, tree: TaskTree):
        nodes = list(tree)  # pre-order
        self.order: tuple[str, ...] = tuple(n.id for n in nodes)
        self.index = {node_id: i for i, node_id in enumerate(self.order)}
        self.kind = {n.id: n.kind for n in nodes}
        self.kids: dict[str, tuple[str, ...]] = {
            n.id: tuple(c.id for c in n.children) for n in nodes
        }
        self.parent: dict[str, str | None] = {tree.root.id: None}
        for n in nodes:
            for c in n.children:
                self.parent[c.id] = n.id
        self.root = tree.root.id
        self.leaves: tuple[str, ...] = tuple(n.id for n in nodes if n.is_leaf)
        self.done: set[str] = set()
        self.working: set[str] = set()
        self.satisfied: dict[str, bool] = {}
        self.committed: dict[str, bool] = {}
        # per goal: how many of its children are satisfied, and how many committed, so
        # a child's change updates its parent in constant time, not a pass over the
        # children (the root AND of a 500-leaf tree has 250)
        self._n_sat: dict[str, int] = dict.fromkeys(self.order, 0)
        self._n_com: dict[str, int] = dict.fromkeys(self.order, 0)
        self.level: dict[str, float] = {}
        for node_id in reversed(self.order):
            self._bottom_up(node_id)
        self.level = dict.fromkeys(self.order, 0.0)
        self.level[self.root] = 0.0 if self.satisfied[self.root] else 1.0
        self.selectable: set[str] = set()
        self._relevel(self.root)
        self._sync_selectable(self.leaves)

    def _bottom_up(self, node_id: str) -> bool:
        """Recompute satisfied/committed of one node from its children (their counts);
        True if changed, and then the parent's counts follow."""
        kind = self.kind[node_id]
        if kind is NodeKind.BEHAVIOR:
            sat = node_id in self.done
            com = sat or node_id in self.working
        else:
            n_sat = self._n_sat[node_id]
            sat = n_sat > 0 if kind is NodeKind.OR else n_sat == len(self.kids[node_id])
            com = self._n_com[node_id] > 0
        was_sat = self.satisfied.get(node_id, False)
        was_com = self.committed.get(node_id, False)
        first = node_id not in self.satisfied
        self.satisfied[node_id] = sat
        self.committed[node_id] = com
        parent = self.parent[node_id]
        if parent is not None:
            self._n_sat[parent] += sat - was_sat
            self._n_com[parent] += com - was_com
        return first or was_sat != sat or was_com != com

    def _relevel(
        self, goal: str, touched: set[str] | None = None, only: Collection[str] | None = None
    ) -> None:
        """Give `goal`'s children the levels its constraint allows now; recurse into
        the children whose level changed. `only`: of an AND whose own level did not
        change, the children whose satisfied changed: an AND's child's level depends
        on its own satisfied and the AND's level alone, so the others keep theirs."""
        stack = [goal]
        while stack:
            node_id = stack.pop()
            kids = self.kids[node_id]
            if not kids:
                continue
            lv = self.level[node_id]
            kind = self.kind[node_id]
            if only is not None and node_id == goal and kind is NodeKind.AND:
                kids = tuple(only)
            new = dict.fromkeys(kids, 0.0)
            if lv > 0.0 and not self.satisfied[node_id]:
                if kind is NodeKind.THEN:
                    first = next(k for k in kids if not self.satisfied[k])
                    new[first] = lv
                elif kind is NodeKind.AND:
                    for k in kids:
                        if not self.satisfied[k]:
                            new[k] = lv
                else:  # OR
                    chosen = next((k for k in kids if self.committed[k]), None)
                    for k in [chosen] if chosen is not None else kids:
                        new[k] = lv
            for k, value in new.items():
                if self.level[k] != value:
                    self.level[k] = value
                    if touched is not None:
                        touched.add(k)
                    stack.append(k)

    def _sync_selectable(self, leaves: Collection[str]) -> None:
        for leaf in leaves:
            if self.kind.get(leaf) is not NodeKind.BEHAVIOR:
                continue
            if self.level[leaf] > 0.0 and not self.committed[leaf]:
                self.selectable.add(leaf)
            else:
                self.selectable.discard(leaf)

    def apply(self, done: Collection[str], working: Collection[str]) -> None:
        """Bring the state to `done` and `working` (leaves; unknown ids are ignored)."""
        done_now = set(done)
        working_now = set(working)
        changed = (done_now ^ self.done) | (working_now ^ self.working)
        self.done, self.working = done_now, working_now
        changed = {n for n in changed if n in self.kind}
        if not changed:
            return
        dirty: set[str] = set()
        for leaf in changed:
            node: str | None = leaf
            while node is not None and self._bottom_up(node):
                dirty.add(node)
                node = self.parent[node]
        touched: set[str] = set(changed)
        if self.root in dirty:
            lv = 0.0 if self.satisfied[self.root] else 1.0
            if self.level[self.root] != lv:
                self.level[self.root] = lv
                touched.add(self.root)
        goals: dict[str, set[str] | None] = {}  # goal -> its children that changed
        for d in dirty:
            parent = self.parent[d]
            if parent is not None:
                goals.setdefault(parent, set()).add(d)  # type: ignore[union-attr]
        if self.root in touched:
            goals[self.root] = None  # its own level changed: every child
        for goal in sorted(goals, key=self.index.__getitem__):  # top-down
            if goal in touched and goal != self.root:
                continue  # its level changed: its parent's pass re-levelled it whole
            self._relevel(goal, touched, goals[goal])
        self._sync_selectable(touched)

    def view(
        self,
        potentials: Mapping[str, float],
        *,
        default_potential: float,
        inhibition: Mapping[str, float],
    ) -> ActivationView:
        """The activations now, with these potentials (eq. 1) and inhibition factors."""
        return ActivationView(self, potentials, default_potential, inhibition)


class ActivationView(Mapping[str, NodeActivation]):
    """Every node's ``NodeActivation``, computed when asked (see the module docstring).

    Valid until the ``IncrementalSpread`` it came from changes; read-only."""

    def __init__(
        self,
        spread: IncrementalSpread,
        potentials: Mapping[str, float],
        default_potential: float,
        inhibition: Mapping[str, float],
    ):
        self._s = spread
        self._pots = potentials
        self._default = default_potential
        self._inhib = inhibition
        self._goal_pot: dict[str, float] = {}
        self.selectable: frozenset[str] = frozenset(spread.selectable)
        """Leaves with level > 0 that nobody works on or did."""

    def satisfied(self, node_id: str) -> bool:
        """Whether the node's constraint is met (without computing potentials)."""
        return self._s.satisfied[node_id]

    def level(self, node_id: str) -> float:
        """The node's activation level (without computing potentials)."""
        return self._s.level[node_id]

    def leaf_value(self, leaf: str) -> float:
        """``level * potential`` of a leaf (0 when it cannot be selected)."""
        if leaf not in self.selectable:
            return 0.0
        p = float(self._pots.get(leaf, self._default)) * float(self._inhib.get(leaf, 1.0))
        return self._s.level[leaf] * max(p, 0.0)

    def _potential(self, node_id: str) -> float:
        s = self._s
        if s.kind[node_id] is NodeKind.BEHAVIOR:
            if node_id not in self.selectable:
                return 0.0
            p = float(self._pots.get(node_id, self._default))
            return max(p * float(self._inhib.get(node_id, 1.0)), 0.0)
        cached = self._goal_pot.get(node_id)
        if cached is None:
            cached = self._goal_pot[node_id] = max(self._potential(k) for k in s.kids[node_id])
        return cached

    def __getitem__(self, node_id: str) -> NodeActivation:
        s = self._s
        if node_id not in s.kind:
            raise KeyError(node_id)
        return NodeActivation(
            s.level[node_id], self._potential(node_id), s.satisfied[node_id], s.committed[node_id]
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._s.order)

    def __len__(self) -> int:
        return len(self._s.order)
