"""Noticing a behaviour that ended at the body while its end never reached the robot.

The robot learns that its behaviour ended from the driver's ``behaviour.finished`` /
``behaviour.failed`` progress messages. Those are not retained: one sent while the
robot is not subscribed (a broker restarted without persistence, where the driver
re-connects before the robot re-subscribes) is gone, and the robot would hold its
node forever while its body stands idle, its peers seeing the node worked on: the
team stalls with no error. The driver's observations, though, keep coming and say what
the body runs (``robot.busy``, the command id). ``BodyWatch`` compares the two: a
command the body was seen running and now has not run for ``grace_s``, or one never
seen running ``start_s`` after it was sent (an execute refused, lost, or past its
lease, which the body then refuses), ended unheard. The robot then treats it as
failed (the node goes back to the team; a leaf whose object reached its goal is
counted done by the world's observation first, "done means done").

Choices: ``start_s`` defaults to the lease plus two graces, since an execute that
waited longer than its lease is refused by the body anyway; ``grace_s`` (1.5 s) covers
the driver's progress message overtaking its observation. Pure: no clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BodyWatch"]


@dataclass
class _Watched:
    command_id: str
    sent_at: float
    seen: bool = False
    idle_since: float | None = None


@dataclass
class BodyWatch:
    """Per node: the command the robot gave its body, and whether the body runs it."""

    grace_s: float = 1.5
    start_s: float = 6.0
    _watched: dict[str, _Watched] = field(default_factory=dict)

    def sent(self, node: str, command_id: str, now: float) -> None:
        """The robot sent `command_id` (an execute) for `node` at `now` (seconds)."""
        self._watched[node] = _Watched(command_id, now)

    def forget(self, node: str) -> None:
        """The robot no longer holds `node` (finished, failed, aborted)."""
        self._watched.pop(node, None)

    @property
    def watched(self) -> frozenset[str]:
        """The nodes whose commands are watched."""
        return frozenset(self._watched)

    def observe(self, busy: str | None, held: frozenset[str] | set[str], now: float) -> list[str]:
        """One observation: the body runs `busy` (a command id, or None); `held` are the
        nodes the robot still holds. Returns the held nodes whose command ended unheard
        (each once: they are forgotten)."""
        lost: list[str] = []
        for node in list(self._watched):
            w = self._watched[node]
            if node not in held:
                del self._watched[node]
                continue
            if busy == w.command_id:
                w.seen, w.idle_since = True, None
                continue
            if w.seen:
                if w.idle_since is None:
                    w.idle_since = now
                if now - w.idle_since >= self.grace_s:
                    lost.append(node)
            elif now - w.sent_at >= self.start_s:
                lost.append(node)
        for node in lost:
            del self._watched[node]
        return lost
