"""How far a team's mission is, from live messages alone: what ``teamtree record
--until-done`` ends on, and the exit code of ``docker compose up --exit-code-from``.

Retained messages are what an earlier mission left at the broker (its snapshots say
every leaf is done), so only live ones count as progress: a ``node.transition`` to
``done`` or ``skipped``, or a ``node.snapshot`` published while we listen. The tree
comes from the ``mission.tree`` message, retained or not (every member republishes it
when its mission starts). A mission with the same tree as the last one therefore ends
only when this one's members have done its leaves again. The mission is complete when
the root's constraint is met (``planners.tasktree.outcome``): an OR needs one branch,
so the leaves of the branch not taken are never waited for.
"""

from __future__ import annotations

from typing import Any

from teamtree.agents.observers.mission_labels import tree_labels
from teamtree.agents.treeprotocol.mission_wire import MissionWireError, tree_from_body
from teamtree.broker.envelope import Envelope
from teamtree.planners.tasktree.outcome import leaves_still_needed, satisfied_nodes
from teamtree.planners.tasktree.tree import TaskTree

__all__ = ["MissionProgress"]

_FINISHED = ("done", "skipped")


class MissionProgress:
    """Leaves of the mission and who finished each, fed with every message of a team."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.leaves: list[str] = []
        self.done: dict[str, str] = {}  #: leaf -> the agent that reported it finished
        self.tree: TaskTree | None = None

    def feed(self, env: Envelope, *, retained: bool) -> None:
        """One validated message; ignores what it does not understand."""
        body: Any = env.body
        if not isinstance(body, dict):
            return
        if env.kind == "mission.tree":
            try:
                tree = tree_from_body(body)
            except MissionWireError:
                return
            labels, leaves = tree_labels(tree.to_dict())
            if leaves and leaves != self.leaves:
                self.labels, self.leaves, self.tree = labels, leaves, tree
                self.done = {n: a for n, a in self.done.items() if n in labels}
        elif retained:
            return
        elif env.kind == "node.transition" and body.get("status") in _FINISHED:
            if isinstance(body.get("node"), str):
                self.done.setdefault(body["node"], str(body.get("agent") or env.sender))
        elif env.kind == "node.snapshot" and isinstance(body.get("done"), list):
            for node in body["done"]:
                if isinstance(node, str):
                    self.done.setdefault(node, env.sender)

    @property
    def complete(self) -> bool:
        """True once the mission is known and its root's constraint is met by the
        finished leaves (every leaf of THEN/AND, one branch of each OR)."""
        return self.tree is not None and self.tree.root.id in satisfied_nodes(self.tree, self.done)

    def missing(self) -> list[str]:
        """Labels of the leaves the mission still waits for (none before the tree is
        known; every branch of an OR none of whose branches is finished)."""
        if self.tree is None:
            return []
        return [self.labels.get(n, n) for n in leaves_still_needed(self.tree, self.done)]
