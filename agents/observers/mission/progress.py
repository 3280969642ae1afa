"""How far a team's mission is, from live messages alone: what ``teamtree record
--until-done`` ends on, and the exit code of ``docker compose up --exit-code-from``.

Retained messages are what an earlier mission left at the broker (its snapshots say
every leaf is done), so only live ones count as progress: a ``node.transition`` to
``done`` or ``skipped``, or a ``node.snapshot`` published while we listen. The leaves
come from the ``mission.tree`` message, retained or not (every member republishes it
when its mission starts). A mission with the same tree as the last one therefore ends
only when this one's members have done each leaf again.
"""

from __future__ import annotations

from typing import Any

from teamtree.agents.observers.mission_labels import mission_labels
from teamtree.broker.envelope import Envelope

__all__ = ["MissionProgress"]

_FINISHED = ("done", "skipped")


class MissionProgress:
    """Leaves of the mission and who finished each, fed with every message of a team."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.leaves: list[str] = []
        self.done: dict[str, str] = {}  #: leaf -> the agent that reported it finished

    def feed(self, env: Envelope, *, retained: bool) -> None:
        """One validated message; ignores what it does not understand."""
        body: Any = env.body
        if not isinstance(body, dict):
            return
        if env.kind == "mission.tree":
            labels, leaves = mission_labels(body) or ({}, [])
            if leaves and leaves != self.leaves:
                self.labels, self.leaves = labels, leaves
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
        """True once the mission is known and every one of its leaves is finished."""
        return bool(self.leaves) and all(n in self.done for n in self.leaves)

    def missing(self) -> list[str]:
        """Labels of the leaves not finished yet (all of them before the tree is known)."""
        return [self.labels.get(n, n) for n in self.leaves if n not in self.done]
