"""A small world model of assembled teams (seed 002 §VII.A, "tower-like" assembly).

Robots stack bottom to top: heights add up, each component is raised by the sizes of
the robots below it, and the team moves on the ground robot's locomotion only (the
others' locomotion is unavailable, §VI.A). Port rule per robot: the ground robot spends
one port on the ground and one on the robot above; a middle robot two; the top robot one
(so a feasible tower always satisfies eq. 19 with A_P >= 0). A robot may sit on another
only if its collaborability level is not above the lower robot's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from teamtree.hardware.capability_matrix import (
    DEFAULT_LEVELS,
    StrengthCapability,
    TypeCapability,
    strength_capability,
    type_capability,
)
from teamtree.hardware.robot_types import Component, Domain, RobotProfile


@dataclass(frozen=True)
class AssembledTeam:
    """Members in tower order, bottom (ground robot) first."""

    members: tuple[RobotProfile, ...]

    @property
    def ground(self) -> RobotProfile:
        """The ground-contacted robot, which gives the team its locomotion."""
        return self.members[0]

    @property
    def ids(self) -> tuple[str, ...]:
        """Member ids, bottom first."""
        return tuple(m.robot_id for m in self.members)

    @property
    def height(self) -> int:
        """Team height: the sizes add up."""
        return sum(m.size for m in self.members)

    def offsets(self) -> dict[str, int]:
        """Height of each member's base above the ground."""
        out: dict[str, int] = {}
        base = 0
        for m in self.members:
            out[m.robot_id] = base
            base += m.size
        return out

    def links(self) -> list[tuple[str, str]]:
        """Assembly links (lower id, upper id)."""
        return [(a.robot_id, b.robot_id) for a, b in itertools.pairwise(self.members)]

    def member_components(self) -> list[tuple[str, int, Component, bool]]:
        """(robot id, index in its profile, raised component, usable) for every component.

        ``usable`` is False for the locomotion of robots that are not on the ground.
        """
        offs = self.offsets()
        out: list[tuple[str, int, Component, bool]] = []
        for k, m in enumerate(self.members):
            for i, c in enumerate(m.components):
                usable = not (c.domain == Domain.LOCOMOTION and k > 0)
                out.append((m.robot_id, i, c.raised(offs[m.robot_id]), usable))
        return out

    def components(self) -> tuple[Component, ...]:
        """The team's usable components, raised to their place in the tower."""
        return tuple(c for _, _, c, usable in self.member_components() if usable)

    def strength_capability(self, n_levels: int = DEFAULT_LEVELS) -> StrengthCapability:
        """C of the whole team (eqs. 2-5 over the usable, raised components)."""
        return strength_capability(self.components(), n_levels)

    def type_capability(self) -> TypeCapability:
        """T, q̂, P̂ of the whole team."""
        return type_capability(self.components())

    def is_feasible(self) -> bool:
        """True when the stacking obeys the port, locomotion and collaborability rules."""
        return tower_is_feasible(self.members)


def tower_is_feasible(order: Sequence[RobotProfile]) -> bool:
    """Whether ``order`` (bottom first) is a buildable tower; one robot alone always is."""
    f = len(order)
    if f == 1:
        return True
    if not order[0].has(Domain.LOCOMOTION):
        return False
    for k, m in enumerate(order):
        need = 1 if k == f - 1 else 2
        if m.ports < need:
            return False
    return all(up.collab_level <= low.collab_level for low, up in itertools.pairwise(order))


def tower_orders(members: Iterable[RobotProfile]) -> Iterator[AssembledTeam]:
    """Every feasible tower of exactly these robots, in a deterministic order."""
    pool = sorted(members, key=lambda m: m.robot_id)
    seen: set[tuple[str, ...]] = set()
    for perm in itertools.permutations(pool):
        ids = tuple(m.robot_id for m in perm)
        if ids in seen:
            continue
        seen.add(ids)
        if tower_is_feasible(perm):
            yield AssembledTeam(tuple(perm))


def find_tower(
    members: Iterable[RobotProfile], accept: Callable[[AssembledTeam], bool]
) -> AssembledTeam | None:
    """The first feasible tower of ``members`` that ``accept`` approves, or None.

    Towers are tried lowest-first by (collaborability descending) so big robots go down.
    """
    towers = sorted(
        tower_orders(members),
        key=lambda t: (tuple(-m.collab_level for m in t.members), t.ids),
    )
    for tower in towers:
        if accept(tower):
            return tower
    return None
