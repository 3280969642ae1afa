"""Noticing a peer whose clock is off: every envelope carries its sender's wall clock
at send (``ts``); a receiver compares it with its own at receipt.

``ts - receipt`` is the peer's offset minus the message's delay, so a sample above
the bound proves the peer's clock ahead by more than the bound (a delay only makes it
look further behind). A peer behind by more than the bound is named only when the
largest sample of a window of ``WINDOW_S`` is still below minus the bound: the
least-delayed message of a window measures the offset best, and a window holds a
few of the peer's heartbeats (QoS 0, never queued), so a burst of messages queued
during an outage does not look like skew. Retained messages are not samples (they
are as old as they were kept), and the agent watches only senders its team view
knows (``KEEP`` at most). Each peer is named at most once per ``interval_s``. Pure:
callers pass the times."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KEEP", "WINDOW_S", "SkewWatch"]

KEEP = 1024
"""Peers watched at most (the longest unheard forgotten first)."""

WINDOW_S = 3.0
"""Seconds of samples whose largest estimates a peer's offset (a few heartbeats)."""


@dataclass(slots=True)
class _Peer:
    window_start: float
    best: int  #: the largest ``ts - receipt`` of the current window (ms)
    warned_at: float | None = None


class SkewWatch:
    """Per peer, whether its clock differs from this one by more than `bound_s`."""

    def __init__(self, bound_s: float, interval_s: float = 60.0, window_s: float = WINDOW_S):
        self.bound_ms = round(bound_s * 1000)
        self.interval_s = interval_s
        self.window_s = window_s
        self._peers: dict[str, _Peer] = {}

    def observe(self, peer: str, sent_ms: int, now_ms: int, mono: float) -> int | None:
        """A message of `peer` stamped `sent_ms` (its clock) arrived at `now_ms` (this
        clock), monotonic time `mono`. Returns the offset (ms, positive: the peer is
        ahead) when it is to be reported now, else None."""
        if self.bound_ms <= 0:
            return None
        sample = sent_ms - now_ms
        p = self._peers.pop(peer, None)
        if p is None:
            p = _Peer(mono, sample)
            while len(self._peers) >= KEEP:
                del self._peers[next(iter(self._peers))]
        else:
            p.best = max(p.best, sample)
        self._peers[peer] = p  # the most recently heard last
        offset: int | None = None
        if sample > self.bound_ms:
            offset = sample
        elif mono - p.window_start >= self.window_s:
            if p.best < -self.bound_ms:
                offset = p.best
            p.window_start, p.best = mono, sample
        if offset is None:
            return None
        if p.warned_at is not None and mono - p.warned_at < self.interval_s:
            return None
        p.warned_at = mono
        return offset

    def forget(self, peer: str) -> None:
        """Drop what is known of `peer` (it left; a new process may keep better time)."""
        self._peers.pop(peer, None)
