"""Hybrid logical clock (Kulkarni et al. 2014): orders events across processes.

A stamp is ``(wall_ms, logical, node)``; tuples compare in that order, so the node id
breaks ties, which is what "earliest activation wins" (seed 000, Fig. 8) needs.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import NamedTuple

CLOCK_OFFSET_ENV = "TEAMTREE_CLOCK_OFFSET_S"
"""Environment variable: seconds added to this process's wall clock (``wall_ms``), e.g.
``3600`` for a clock an hour ahead. For tests and drills of clock skew; unset in
production."""


def clock_offset_ms(value: str | None = None) -> int:
    """The wall-clock offset ``TEAMTREE_CLOCK_OFFSET_S`` asks for, in whole ms (0 when
    unset). Raises ValueError naming the variable when it is not a finite number."""
    raw = os.environ.get(CLOCK_OFFSET_ENV, "") if value is None else value
    if not raw.strip():
        return 0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds):
        raise ValueError(
            f"{CLOCK_OFFSET_ENV}={raw!r} is not a number of seconds; give e.g. 3600 or "
            f"-3600, or unset it"
        )
    return round(seconds * 1000)


_OFFSET_MS = clock_offset_ms()


class HlcStamp(NamedTuple):
    """One HLC reading; compares by wall time, then logical counter, then node id."""

    wall_ms: int
    logical: int
    node: str

    def to_wire(self) -> list[object]:
        return [self.wall_ms, self.logical, self.node]

    @classmethod
    def from_wire(cls, value: object) -> HlcStamp:
        """Parse ``[wall_ms, logical, node]``; raises ValueError when malformed."""
        if (
            not isinstance(value, list | tuple)
            or len(value) != 3
            or not isinstance(value[0], int)
            or not isinstance(value[1], int)
            or not isinstance(value[2], str)
            or value[0] < 0
            or value[1] < 0
        ):
            raise ValueError(f"not an HLC stamp: {value!r}")
        return cls(int(value[0]), int(value[1]), value[2])


def wall_ms() -> int:
    """Current UTC wall time in milliseconds (shifted by ``TEAMTREE_CLOCK_OFFSET_S``)."""
    return time.time_ns() // 1_000_000 + _OFFSET_MS


MAX_OFFSET_MS = 5_000
"""How far ahead of this process's clock a received stamp may be and still be merged.
Clocks of one deployment agree to milliseconds (NTP, or one host's containers); a stamp
further ahead is a broken clock or a forged date, and merged it would move every later
stamp of this agent (and of its peers, which merge those) as far ahead, letting it
outrank messages sent after it."""


class HybridLogicalClock:
    """A hybrid logical clock for one node.

    `max_offset_ms` guards against a peer (or a hostile message) far in the future:
    such a stamp is not merged, so it cannot drag this clock forward.
    """

    def __init__(
        self, node: str, *, clock: Callable[[], int] = wall_ms, max_offset_ms: int = MAX_OFFSET_MS
    ):
        self.node = node
        self._clock = clock
        self._max_offset_ms = max_offset_ms
        self._wall = 0
        self._logical = 0
        self.rejected = 0

    def now(self) -> HlcStamp:
        """Stamp a local or send event."""
        physical = self._clock()
        if physical > self._wall:
            self._wall, self._logical = physical, 0
        else:
            self._logical += 1
        return HlcStamp(self._wall, self._logical, self.node)

    def update(self, remote: HlcStamp) -> HlcStamp:
        """Merge a received stamp and stamp the receive event.

        A remote stamp more than `max_offset_ms` ahead of the physical clock is not
        merged (counted in `rejected`); the event is stamped from local time alone.
        """
        physical = self._clock()
        if remote.wall_ms > physical + self._max_offset_ms:
            self.rejected += 1
            return self.now()
        wall = max(self._wall, remote.wall_ms, physical)
        if wall == self._wall == remote.wall_ms:
            logical = max(self._logical, remote.logical) + 1
        elif wall == self._wall:
            logical = self._logical + 1
        elif wall == remote.wall_ms:
            logical = remote.logical + 1
        else:
            logical = 0
        self._wall, self._logical = wall, logical
        return HlcStamp(wall, logical, self.node)
