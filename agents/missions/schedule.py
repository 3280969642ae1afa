"""Which queued missions may start now, so that no body works in two missions at once.

Pure (no I/O): the mission queue asks `next_starts` each time a mission is queued or
ends. A mission needs *members* (the on_call agents that work it: each is one body,
or one service such as an LTL planner) and *objects* (what its tree moves). It asks
either for named members (``members = ["pr2"]``) or for a number of any idle ones
among those that serve its kind (``members = 1``); without ``members`` it needs every
member that serves its kind. Two missions run at once only when they share no member
and no object.

Choices (the issue says only "where members allow"):

- Objects are held like bodies: two missions that both move the cup never run at
  once, even on disjoint robots, since two bodies would reach for one object.
- Order: missions start in submission order, but a later mission may start while an
  earlier one waits if it takes nothing the earlier one waits for (backfilling). A
  waiting mission holds what it names (members and objects); one that asks for a
  number holds every idle member it could take, so a stream of small missions never
  starves a large one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Need:
    """What one mission needs to run.

    `eligible`: the members that may work it (those serving its kind, or those it
    names); `count`: how many of them (None: all of `eligible`); `objects`: the
    objects it moves."""

    eligible: frozenset[str]
    count: int | None = None
    objects: frozenset[str] = field(default_factory=frozenset)

    def wanted(self) -> int:
        """How many members it takes."""
        return len(self.eligible) if self.count is None else self.count


def next_starts(
    queued: Sequence[tuple[str, Need]], busy_members: Iterable[str], busy_objects: Iterable[str]
) -> list[tuple[str, frozenset[str]]]:
    """The queued missions to start now, in queue order, each with the members it
    gets. `queued` is in submission order; `busy_*` are held by running missions."""
    taken = set(busy_members)
    held_objects = set(busy_objects)
    reserved: set[str] = set()  # members earlier waiting missions hold
    reserved_objects: set[str] = set()
    starts: list[tuple[str, frozenset[str]]] = []
    for mission, need in queued:
        free = sorted(need.eligible - taken - reserved)
        objects_free = not (need.objects & (held_objects | reserved_objects))
        if objects_free and len(free) >= need.wanted():
            got = frozenset(free[: need.wanted()])
            starts.append((mission, got))
            taken |= got
            held_objects |= need.objects
            continue
        reserved |= need.eligible - taken
        reserved_objects |= need.objects
    return starts


def conflicts(running: Mapping[str, tuple[frozenset[str], frozenset[str]]]) -> list[str]:
    """Members or objects held by two running missions (empty when the schedule is
    sound); `running` maps mission -> (members, objects)."""
    seen: dict[str, str] = {}
    clashes: list[str] = []
    for mission, (members, objects) in running.items():
        for name in [*(f"member {m}" for m in members), *(f"object {o}" for o in objects)]:
            if name in seen:
                clashes.append(f"{name} in {seen[name]} and {mission}")
            seen[name] = mission
    return clashes
