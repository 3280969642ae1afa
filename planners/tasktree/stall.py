"""Whether a team is making progress: a leaf newly done, or one claim that held its
node through a whole ``timeout_s`` (a long behaviour, a robot paused on a question).

Claims and attempts are not progress: a team whose robots claim, start and are refused
again and again (a body that refuses every command on an object, a leaf every robot
fails) looks busy from moment to moment but finishes nothing, and before this rule it
cycled forever with no error. Pure: callers pass the times."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

__all__ = ["StallWatch"]


class StallWatch:
    """Seconds since the team last made progress, and whether that is too long."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.since: float | None = None  #: when progress was last seen (None: not watching)
        self._done: frozenset[str] = frozenset()
        self._holds: dict[Hashable, float] = {}  # a hold -> when it was first seen

    def reset(self) -> None:
        """Stop watching (the mission is over, the robot is offline): the next
        ``observe`` starts the clock afresh."""
        self.since = None
        self._holds = {}

    def observe(self, done: Iterable[str], holds: Iterable[Hashable], now: float) -> float | None:
        """The team now: the leaves done, and its current holds (one per claim, e.g.
        ``(node, holder, stamp)``). Returns the seconds without progress once they
        reach ``timeout_s`` (0: never), else None."""
        done = frozenset(done)
        self._holds = {h: self._holds.get(h, now) for h in holds}
        if self.since is None or done != self._done:
            self.since, self._done = now, done  # a leaf newly done (or re-opened)
            return None
        if any(now - first >= self.timeout_s for first in self._holds.values()):
            self.since = now  # one claim has held its node throughout: it works
            return None
        idle = now - self.since
        return idle if self.timeout_s and idle >= self.timeout_s else None
