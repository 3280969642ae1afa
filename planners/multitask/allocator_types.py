"""The allocator's vocabulary: how behaviours claim resources (``Mode``), how an AND
picks its set (``AndRule``), a leaf's bottom-up ``Request``, the execution state
(``MultitaskState``) and one round's ``Allocation``.

Their own module because the allocator and its leaf mechanics (``leaf_requests``)
both speak them; the allocator re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from teamtree.hardware.resources import ResourceNeed, ResourceState
from teamtree.planners.multitask.model import Behaviour, World

__all__ = ["Allocation", "AndRule", "Mode", "MultitaskState", "Request"]


class Mode(StrEnum):
    """How behaviours claim resources."""

    MULTITASK = "multitask"
    """Seed 004: declared needs, compatible behaviours run together, skips."""
    SEQUENTIAL = "sequential"
    """Baseline: the whole robot for one behaviour; each THEN runs to its end."""


class AndRule(StrEnum):
    """How an AND node picks the set it passes up (§III.C.1)."""

    ALG1 = "alg1"
    """FindCompatible, Alg. 1: greedy from the highest potential."""
    MAX_TOTAL = "max_total"
    """The compatible subset with the highest total potential (exponential)."""


@dataclass(frozen=True)
class Request:
    """A leaf's bottom-up message (§III.C): needs, activation potential, possibility.

    ``claimant`` is the leaf and its ancestors (resources reserved to any of them are
    the leaf's); ``skips`` the THEN children skipped to reach it; ``or_choices`` the
    (OR node, child index) pairs on its path, for the search; ``order`` its tree order.
    """

    leaf: str
    behaviour: Behaviour
    potential: float
    possible: bool
    needs: tuple[ResourceNeed, ...]
    claimant: frozenset[str]
    holds: bool = False
    order: int = 0
    skips: tuple[str, ...] = ()
    or_choices: tuple[tuple[str, int], ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class MultitaskState:
    """Everything that changes during execution; immutable and hashable.

    ``handoffs`` are (resource, heir) reservations from a finished move that lapse
    if the heir is not granted in the next round.
    """

    resources: ResourceState
    world: World
    done: frozenset[str] = frozenset()
    skipped: frozenset[str] = frozenset()
    working: frozenset[str] = frozenset()
    handoffs: frozenset[tuple[str, str]] = frozenset()

    @property
    def finished(self) -> frozenset[str]:
        """Leaves done or skipped."""
        return self.done | self.skipped

    def key(self) -> tuple:
        """What the future depends on (for search memo tables)."""
        return (self.world, self.done | self.skipped, self.working, self.resources, self.handoffs)


@dataclass(frozen=True)
class Allocation:
    """The result of one round: granted requests, the rest, committed skips, per-node offers.

    ``skipped`` holds every skip to commit with the grant; ``trailing`` those among them
    that ride on no request (a THEN whose remaining children's goals all hold).
    """

    granted: tuple[Request, ...]
    rejected: tuple[Request, ...]
    skipped: tuple[str, ...]
    trailing: tuple[str, ...] = ()
    offers: Mapping[str, tuple[Request, ...]] = field(default_factory=dict, repr=False)

    @property
    def leaves(self) -> tuple[str, ...]:
        """Granted leaf ids."""
        return tuple(r.leaf for r in self.granted)
