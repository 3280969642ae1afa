"""Simulated time: advancing the world runs every stage end and lease deadline up to
the new time, in time order. Time never runs backwards."""

from __future__ import annotations

from teamtree.hardware.world.state import WorldState


class Clock(WorldState):
    """``advance`` and ``moving``; the parts it drives live in their own modules."""

    def advance(self, t: float) -> None:
        """Run every job up to simulated time `t` (stage ends in time order)."""
        t = max(self.t, float(t))
        while True:
            due = [
                (r.job.legs[0].end, r.name)
                for r in self.robots.values()
                if r.job is not None and r.job.paused_at is None and r.job.legs
            ] + [(h.job.legs[0].end, h.name) for h in self.hands.values() if h.job and h.job.legs]
            leases = self._next_lapse()
            if not due and not leases:
                break
            end, name = min(due + leases)
            if end > t:
                break
            self._sample_hands(end)
            self.t = max(self.t, end)
            if (end, name) in leases and (end, name) not in due:
                self._lapse(self.robots[name], end)
            elif name in self.hands:
                self._finish_hand_leg(self.hands[name], end)
            else:
                self._finish_leg(self.robots[name], end)
        self._sample_hands(t)
        self.t = t

    @property
    def moving(self) -> bool:
        """True while some robot is running (not paused) a job, or a hand moves."""
        return any(
            r.job is not None and r.job.paused_at is None for r in self.robots.values()
        ) or any(h.job is not None for h in self.hands.values())
