"""The world's event log (what drivers and hands learn of their commands) and its
violations (coordination errors made visible)."""

from __future__ import annotations

from collections import deque
from typing import Any

EVENT_LOG = 10_000
"""Events kept; older ones are forgotten."""


class EventLog:
    """Numbered events (``seq`` from 1) and the list of violations."""

    def __init__(self, keep: int = EVENT_LOG) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=keep)
        self.seq = 0
        self.violations: list[dict[str, Any]] = []

    def emit(
        self,
        t: float,
        kind: str,
        robot: str,
        command_id: str,
        node: str | None,
        *,
        ok: bool = True,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Log one event at simulated time `t`; returns it (the caller may annotate it)."""
        self.seq += 1
        event = {
            "seq": self.seq,
            "t": round(t, 4),
            "kind": kind,
            "robot": robot,
            "command_id": command_id,
            "node": node,
            "ok": ok,
            "reason": reason,
        }
        self._events.append(event)
        return event

    def since(self, seq: int, robot: str | None = None) -> list[dict[str, Any]]:
        """Copies of the events with sequence number > `seq` (optionally one robot's)."""
        return [
            dict(e)
            for e in self._events
            if e["seq"] > seq and (robot is None or e["robot"] == robot)
        ]

    def violation(
        self,
        t: float,
        kind: str,
        obj: str,
        holders: list[str],
        command_id: str,
        node: str | None,
    ) -> None:
        """Record a violation of `kind` on object `obj` by `holders` (robots or hands)."""
        self.violations.append(
            {
                "seq": len(self.violations) + 1,
                "t": round(t, 4),
                "kind": kind,
                "object": obj,
                "robots": holders,
                "command_id": command_id,
                "node": node,
            }
        )
