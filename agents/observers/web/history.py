"""The team page's timeline, one mission at a time, from the start of each mission
(pure: no I/O, no clock reads).

The server keeps, per mission, every span of work heard since the mission began (an
agent on a node: a task-tree leaf, a kitting action, an LTL plan action), each with
the node's label as it was then, how it ended (``done``, ``inactive``, ``failed``
with the driver's reason, ``stopped`` by the mission's end) and the mission's own
end. A page opened late gets the whole of it; with a queue, each mission keeps its
own rows. Bounded: the newest ``MAX_KEPT`` missions, ``MAX_SPANS`` spans each.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

__all__ = ["MAX_KEPT", "MAX_SPANS", "MissionHistory"]

#: missions whose timeline is kept (the oldest dropped first)
MAX_KEPT = 6
#: spans kept per mission (the oldest dropped first), so hours of work stay bounded
MAX_SPANS = 600
#: how a span ended: still open (``working``), or one of these
ENDS = ("done", "inactive", "failed", "stopped")
#: the key of work heard before any mission was named
UNNAMED = ""


class _Mission:
    def __init__(self, t0: int) -> None:
        self.t0 = t0
        self.spans: deque[dict[str, Any]] = deque(maxlen=MAX_SPANS)
        self.open: dict[tuple[str, str], dict[str, Any]] = {}
        self.end: dict[str, Any] | None = None


class MissionHistory:
    """``open``/``close`` spans of a mission; ``view(mission, now)`` is its timeline."""

    def __init__(self) -> None:
        self.missions: OrderedDict[str, _Mission] = OrderedDict()

    def _get(self, mission: str, ts: int) -> _Mission:
        m = self.missions.get(mission)
        if m is None:
            # work heard before the mission was named is the first named mission's
            m = self.missions.pop(UNNAMED, None) if mission != UNNAMED else None
            m = self.missions[mission] = m or _Mission(ts)
            while len(self.missions) > MAX_KEPT:
                self.missions.popitem(last=False)
        return m

    def begin(self, mission: str, ts: int) -> None:
        """`mission` started at `ts` (its timeline starts there)."""
        m = self._get(mission, ts)
        m.t0 = min(m.t0, ts)

    def open(self, mission: str, agent: str, node: str, label: str, ts: int) -> None:
        """`agent` works on `node` from `ts` on (a span already open goes on)."""
        m = self._get(mission, ts)
        m.t0 = min(m.t0, ts)
        if (agent, node) in m.open:
            return
        span = {"agent": agent, "node": node, "label": label, "status": "working",
                "start": ts, "end": None}  # fmt: skip
        m.open[(agent, node)] = span
        m.spans.append(span)

    def close(
        self, mission: str, agent: str, node: str, ts: int, how: str, reason: str | None = None
    ) -> bool:
        """The span of `agent` on `node` ends at `ts` (`how`: one of ``ENDS``); False
        when none was open."""
        m = self.missions.get(mission)
        span = None if m is None else m.open.pop((agent, node), None)
        if span is None:
            return False
        span["end"], span["status"] = max(ts, span["start"]), how
        if reason:
            span["reason"] = reason[:200]
        return True

    def mark(
        self, mission: str, agent: str, node: str, label: str, ts: int, how: str, reason: str
    ) -> None:
        """`how` happened to `agent` on `node` at `ts`: the open span ends so, else a
        span of no length says it (a behaviour that failed before it was seen working)."""
        if self.close(mission, agent, node, ts, how, reason):
            return
        m = self._get(mission, ts)
        m.spans.append({"agent": agent, "node": node, "label": label, "status": how,
                        "start": ts, "end": ts, "reason": reason[:200]})  # fmt: skip

    def close_all(self, mission: str, agent: str | None, ts: int, how: str) -> None:
        """End every open span of `mission` (of `agent` only, when given)."""
        m = self.missions.get(mission)
        if m is None:
            return
        for key in [k for k in m.open if agent is None or k[0] == agent]:
            self.close(mission, key[0], key[1], ts, how)

    def ended(self, mission: str, state: str, reason: str, ts: int) -> None:
        """The mission ended (`state`): its open spans stop there, unless it succeeded.
        A later word on its end (a cancel outranking its robots' success) replaces the
        state and reason; the line stays where it first ended."""
        m = self.missions.get(mission)
        if m is None:
            return
        at = ts if m.end is None else m.end["ts"]
        m.end = {"ts": at, "state": state, "reason": reason[:200]}
        if state != "succeeded":
            self.close_all(mission, None, at, "stopped")

    def ids(self) -> list[str]:
        """The kept missions, oldest first."""
        return [m for m in self.missions if m != UNNAMED or len(self.missions) == 1]

    def view(self, mission: str | None, now: int) -> dict[str, Any] | None:
        """`mission`'s timeline as JSON-ready data (its clock stops at its end)."""
        m = self.missions.get(mission if mission is not None else UNNAMED)
        if m is None:
            return None
        end = m.end["ts"] if m.end is not None else now
        last = max((s["end"] for s in m.spans if s["end"] is not None), default=m.t0)
        end = max(end, last) if m.end is not None else max(now, last)
        return {
            "mission": mission,
            "t0": m.t0,
            "now": end,
            "end": m.end,
            "spans": [dict(s) for s in m.spans],
        }
