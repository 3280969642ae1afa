"""The mission tree the team page draws and the work on its nodes (pure: no I/O).

Which tree is drawn, which mission it belongs to, who works on each node now, who
finished it and which were skipped change together: a new tree forgets the last
one's work, and a node's state on the page follows from all of them at once. The
timeline and the alerts live elsewhere; this holds only what the tree shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from teamtree.planners.tasktree import TaskTree, spread_activation

__all__ = ["STOPPED", "DrawnTree"]

#: a node worked on when its mission ended without success: nobody works it any more
STOPPED = "stopped"


class DrawnTree:
    """The drawn tree (``tree``, its wire form ``raw``, its ``mission``) and who works
    on (``working``) or finished (``done_by``, ``skipped``) each node."""

    def __init__(self) -> None:
        self.tree: TaskTree | None = None
        self.raw: dict[str, Any] | None = None
        self.mission: str | None = None  # the mission id the drawn tree belongs to
        self.working: dict[str, str] = {}  # leaf -> agent working on it now
        self.done_by: dict[str, str] = {}  # leaf -> agent (or person) that finished it
        self.skipped: set[str] = set()

    def replace(self, tree: TaskTree, raw: Any, mission: str | None) -> bool:
        """Draw `tree` of `mission`; True when it differs from the drawn one (then the
        work heard on the last one is forgotten)."""
        changed = self.raw != raw or mission != self.mission
        if changed:
            self.working.clear()
            self.done_by.clear()
            self.skipped.clear()
        self.tree, self.raw, self.mission = tree, raw, mission
        return changed

    def start(self, node: str, agent: str) -> None:
        """`agent` works on `node` now."""
        self.working[node] = agent

    def stop(self, node: str, agent: str) -> None:
        """`agent` no longer works on `node` (another's work on it stays)."""
        if self.working.get(node) == agent:
            del self.working[node]

    def finish(self, node: str, agent: str, *, skipped: bool = False) -> None:
        """`agent` finished (or skipped) `node`; the first to finish it keeps it."""
        self.stop(node, agent)
        if skipped:
            self.skipped.add(node)
        self.done_by.setdefault(node, agent)

    def states(self, stopped: bool, label: Callable[[str], str]) -> dict[str, dict[str, Any]]:
        """Every node of the tree: state (inactive / active / working / done / skipped,
        or stopped when `stopped`: its mission ended without success), who works or
        finished it, label, kind and children ids."""
        if self.tree is None:
            return {}
        done = {n for n in self.done_by if n in self.tree.nodes}
        working = {n for n in self.working if n in self.tree.nodes}
        acts = spread_activation(self.tree, done, working, default_potential=1.0)
        out = {}
        for node_id, node in self.tree.nodes.items():
            act = acts[node_id]
            if node_id in self.skipped:
                state = "skipped"
            elif node_id in done or act.satisfied:
                state = "done"
            elif node_id in working or (
                not node.is_leaf and any(w in working for w in _descendants(node))
            ):
                state = "working"
            elif act.level > 0:
                state = "active"
            else:
                state = "inactive"
            by = self.done_by.get(node_id) or self.working.get(node_id)
            if stopped and state == "working":
                state, by = STOPPED, None
            out[node_id] = {
                "label": label(node_id) or node_id,
                "kind": "leaf" if node.is_leaf else str(node.kind.value),
                "children": [c.id for c in node.children],
                "state": state,
                "by": by,
            }
        return out


def _descendants(node: Any) -> list[str]:
    out, stack = [], list(node.children)
    while stack:
        n = stack.pop()
        out.append(n.id)
        stack.extend(n.children)
    return out
