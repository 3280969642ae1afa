"""Corridors the planner knows blocked: the team's map (``ltl.map``) and the
corridors blocked for one robot only.

A blocked corridor is a fact of the map, not of one robot, so it is deleted from
every robot's transition system once and remembered; which corridors those are is
what both R4 and the ``mission impossible`` report need, and nothing else of the
planner's state is, so they live together here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence, Set

from teamtree.broker import SpecificationError
from teamtree.planners.ltl import (
    EnvironmentChange,
    Mission,
    TSState,
    apply_change,
    block_edge,
)

__all__ = ["BlockedCorridors"]


class BlockedCorridors:
    """The corridors blocked for the whole team and those blocked for one robot."""

    def __init__(self, robot_ids: Sequence[str]) -> None:
        self.robot_ids = robot_ids
        self.team: set[tuple[str, str]] = set()
        """Corridors ``(a, b)`` with ``a < b`` blocked for every robot (the map)."""
        self.private: set[tuple[str, tuple[str, str]]] = set()
        """``(robot, corridor)``: corridors blocked for that robot only."""

    def block(
        self,
        mission: Mission,
        robot: str,
        edges: Sequence[tuple[str, str]],
        private: Set[tuple[str, str]] = frozenset(),
    ) -> EnvironmentChange:
        """A blocked corridor is a fact of the map, not of one robot (our extension of
        Alg. 2): it is deleted from every robot's transition system, so global plans
        avoid it too, and remembered so robots that learn of it from the map (and ask
        for R4 themselves) find it gone already. ``private`` edges are blocked for
        ``robot`` only. Returns the requester's change. Raises SpecificationError for
        a corridor the requester's map does not have."""
        mine: list[tuple[TSState, TSState]] = []
        for a, b in edges:
            corridor = (min(a, b), max(a, b))
            if corridor in self.team or (robot, corridor) in self.private:
                continue  # deleted when first reported; the plan check still sees it
            mine.extend(block_edge(mission, robot, a, b).delete)
            if (a, b) in private:
                self.private.add((robot, corridor))
                continue
            for other in self.robot_ids:
                if other == robot:
                    continue
                with contextlib.suppress(SpecificationError):  # no such corridor for it
                    apply_change(mission, other, block_edge(mission, other, a, b))
            self.team.add(corridor)
        return EnvironmentChange(delete=tuple(mine))

    def describe(self) -> str:
        """The team's blocked corridors as ``a-b, c-d`` (empty when none)."""
        return ", ".join(f"{a}-{b}" for a, b in sorted(self.team))
