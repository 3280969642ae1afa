"""Repeated starts of a node, read from its transitions as the team published them.

A node started more than once is not by itself a fault: a robot whose behaviour failed
releases the node (``inactive``) and a teammate takes it over, and a paused robot
resumes. What must never happen is a start while another robot still holds the node
(two bodies on one behaviour), or a start after the node was done. Readers that see
only the transitions (a benchmark's tap, a recorder's log) tell the three apart here.

Order is by the transitions' stamps (hybrid logical clock: wall ms, counter, agent):
a robot that started a node after hearing its release stamps the start later than the
release, even within one millisecond. Without hearing it (a partition), the start may
precede the release by the stamps, and is counted as held: the safe reading.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["RepeatedStarts", "repeated_starts"]

Entry = tuple[str, str, tuple[int, int, str]]
"""(agent, status, HLC stamp) of one transition: status ``working``, ``done`` or
``inactive`` (released)."""


@dataclass
class RepeatedStarts:
    """Nodes started more than once, by why (each with its transitions in stamp order)."""

    held: dict[str, list[Entry]] = field(default_factory=dict)
    """Started while another robot had started it and not released it: two bodies."""
    after_done: dict[str, list[Entry]] = field(default_factory=dict)
    """Started again after a robot reported it done."""
    taken_over: dict[str, list[Entry]] = field(default_factory=dict)
    """Started again after its holder released it (a retry after a failure, a resume)."""

    @property
    def unsafe(self) -> dict[str, list[Entry]]:
        """The nodes of ``held`` and ``after_done``: what no run may show."""
        return self.held | self.after_done


def repeated_starts(history: Mapping[str, Iterable[Entry]]) -> RepeatedStarts:
    """Classify every node of `history` (node -> its transitions, in any order) that
    was started more than once."""
    out = RepeatedStarts()
    for node, entries in history.items():
        events = sorted(entries, key=lambda e: e[2])
        if sum(status == "working" for _a, status, _t in events) < 2:
            continue
        holders: set[str] = set()
        done = held = after_done = False
        for agent, status, _stamp in events:
            if status == "working":
                held = held or bool(holders - {agent})
                after_done = after_done or done
                holders.add(agent)
            else:
                holders.discard(agent)
                done = done or status == "done"
        kind = out.held if held else out.after_done if after_done else out.taken_over
        kind[node] = events
    return out
