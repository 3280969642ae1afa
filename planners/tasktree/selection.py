"""Which leaves this member may claim and which it claims next: activation spreading
over its view (§2.2), the leaves still open, and the choice among them.

``LeafSelection`` owns the caches that make this cheap on every tick and event: the
activation view (kept up to date leaf by leaf, ``incremental.py``), this member's
positive leaf values in it, the open leaves and whether the root is satisfied. Each
cache is keyed on the version counters of what it reads (``versioned.py``), so a check
costs no pass over the tree. It is a part of its ``TaskController`` and reads the
team view (done, working, potentials, held-back leaves, who is online) through it:
that view has one home and changes under every event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamtree.planners.tasktree.incremental import ActivationView, IncrementalSpread
from teamtree.planners.tasktree.tree import TaskTree

if TYPE_CHECKING:
    from teamtree.planners.tasktree.peer import TaskController

__all__ = ["LeafSelection"]


class LeafSelection:
    """Activation view, open and allowed leaves, and the leaf to claim, cached on what
    they read."""

    def __init__(self, controller: TaskController, tree: TaskTree) -> None:
        self._c = controller
        self._spread = IncrementalSpread(tree)
        self._acts: ActivationView | None = None
        self._acts_key: tuple | None = None
        # the activation view select last read, and this member's positive leaf values
        # in it: an idle member selects on every tick, and the view changes far less
        self._values: tuple[ActivationView | None, int, dict[str, float]] = (None, 0, {})
        self._done_version: int | None = None  # root_satisfied's cache
        self._root_satisfied = False
        self._open: tuple[tuple[int, int] | None, frozenset[str]] = (None, frozenset())
        """``open_leaves``' cache: (done and working versions, the open leaves)."""

    def activations(self) -> ActivationView:
        """Activation level and potential of every node now (§2.2), as a mapping.

        Cached on what spreading reads (done, working, inhibited leaves, potentials):
        every event asks, and most change none of it. Done, working and the potentials
        count their changes (``versioned.py``), so the check costs no pass over the
        tree, and spreading is kept up to date leaf by leaf (``incremental.py``; the
        same results as ``spread_activation``). Read-only.
        """
        c = self._c
        key = (
            c.done.version,  # type: ignore[attr-defined]
            c.working.version,  # type: ignore[attr-defined]
            frozenset(c._inhibited),
            c.potentials.version,  # type: ignore[attr-defined]
        )
        if key != self._acts_key or self._acts is None:
            if key[:2] != (self._acts_key or (None, None))[:2]:
                self._spread.apply(c.done, c.working.keys())
            inhib = {n: c.inhibit_factor for n in c._inhibited}
            self._acts = self._spread.view(
                c.potentials, default_potential=c.default_potential, inhibition=inhib
            )
            self._acts_key = key
        return self._acts

    def allowed(self, leaf: str) -> bool:
        """True when this member may work on ``leaf`` now: not done, not worked by a
        peer, activated by the tree, no OR alternative committed elsewhere."""
        c = self._c
        if leaf in c.done:
            return False
        w = c.working.get(leaf)
        if w is not None and w[0] != c.me:
            return False
        acts = self.activations()
        if acts.level(leaf) <= 0.0:
            return False
        # an OR branch committed elsewhere (working by another member) also forbids it
        return all(
            not (n in c.done or (n in c.working and c.working[n][0] != c.me))
            for n in c.conflicts(leaf)
            if n != leaf
        )

    def root_satisfied(self) -> bool:
        """Whether the root's constraint is satisfied: it depends on the done leaves
        only, so it is recomputed when they change."""
        c = self._c
        version = c.done.version  # type: ignore[attr-defined]
        if version != self._done_version:
            self._done_version = version
            self._root_satisfied = self.activations().satisfied(c.tree.root.id)
        return self._root_satisfied

    def open_leaves(self) -> frozenset[str]:
        """The leaves neither done nor worked on in this member's view: the ones whose
        potentials it publishes (the best of them), selectable now or once their
        predecessors are done, so peers know its values before their views agree.
        The same set object until a leaf is done or taken (asked every idle tick)."""
        c = self._c
        done, working = c.done, c.working
        key = (done.version, working.version)  # type: ignore[attr-defined]
        if self._open[0] != key:
            leaves = c.tree.leaves
            self._open = (key, frozenset(n for n in leaves if n not in done and n not in working))
        return self._open[1]

    def select(self) -> str | None:
        """The leaf to claim on this tick: the best by activation (§2.2), or with
        contention avoidance the one the team's matching gives this member (or None:
        wait for a better-placed idle peer to claim first)."""
        c = self._c
        acts = self.activations()
        seen, doubt, mine = self._values
        doubted = c.trust.doubted
        if seen is not acts or doubt != doubted.version:  # its values (read-only)
            values = ((leaf, acts.leaf_value(leaf)) for leaf in acts.selectable)
            mine = {leaf: v for leaf, v in values if v > 0.0 and leaf not in doubted}
            self._values = (acts, doubted.version, mine)
        if c.avoider is None:  # the highest, ties to the leftmost (select_behaviour)
            index = self._spread.index
            return max(mine, key=lambda leaf: (mine[leaf], -index[leaf]), default=None)
        busy = {agent for agent, _s in c.working.values()}
        return c.avoider.select(mine, c.peers_online, busy, id(acts))
