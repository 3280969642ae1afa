"""When a peer's leaf is free for others: rules 6 and 8 of ``peer.py``.

A holder that went offline (its Last Will) gives its leaves up only ``takeover_ms``
after the Will (rule 6), and a holder's release of an evidence leaf frees it only
``release_hold_ms`` after it arrived (rule 8): until then the holder's body may still
run the leaf, its lease not yet lapsed. Both waits are measured on ``wait_clock``
(monotonic ms) when given, else on the stamps' wall part.

``Handover`` owns the waits in progress and is told the team's ``working`` map when
it frees leaves, rather than holding the controller: it decides only *when* a leaf is
free, and its owner keeps the one copy of who works on what.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set

from teamtree.planners.tasktree.peer_messages import Stamp

__all__ = ["Handover"]


class Handover:
    """Pending takeovers of offline holders' leaves and held releases (rules 6, 8).

    ``takeover_ms``: how long a Will's leaves stay taken; ``release_hold_ms`` and
    ``released_at_once``: how long a peer's release of an evidence leaf waits, and
    whose does not; ``wait_clock``: the monotonic ms clock both are measured on.
    """

    def __init__(
        self,
        *,
        takeover_ms: int,
        release_hold_ms: int,
        released_at_once: Iterable[str],
        wait_clock: Callable[[], int] | None,
    ) -> None:
        self.takeover_ms = takeover_ms
        self.release_hold_ms = release_hold_ms
        self.released_at_once = frozenset(released_at_once)
        self._wait_clock = wait_clock
        self.lapsing: dict[str, int] = {}
        """Offline holders -> when (``wait_ms``) their leaves may be taken over."""
        self.releasing: dict[str, tuple[str, int]] = {}
        """Leaves a peer said it released -> (that peer, when (``wait_ms``) they are
        free). Evidence that the peer works the leaf removes its entry."""

    def wait_ms(self, now: Stamp) -> int:
        """Now on the clock takeover waits are measured on (``wait_clock``)."""
        return now[0] if self._wait_clock is None else self._wait_clock()

    def holder_gone(self, agent: str, now: Stamp) -> None:
        """``agent`` went offline: its leaves are free once its lease lapsed (rule 6)."""
        self.lapsing.setdefault(agent, self.wait_ms(now) + self.takeover_ms)

    def release(
        self,
        node: str,
        agent: str,
        now: Stamp,
        working: dict[str, tuple[str, Stamp]],
        evidence_leaves: Set[str],
    ) -> None:
        """``agent`` says it no longer works on ``node``: free it once its lease must
        have lapsed (rule 8), at once without a hold."""
        if (
            self.release_hold_ms <= 0
            or agent in self.released_at_once
            or node not in evidence_leaves  # nothing in the world to double-run
        ):
            del working[node]
            return
        held = self.releasing.get(node)
        if held is None or held[0] != agent:
            self.releasing[node] = (agent, self.wait_ms(now) + self.release_hold_ms)

    def release_held(self, now: Stamp, working: dict[str, tuple[str, Stamp]]) -> None:
        """Free the released leaves whose hold is over (rule 8)."""
        wait_now = self.wait_ms(now)
        for node, (agent, at) in list(self.releasing.items()):
            if at <= wait_now:
                del self.releasing[node]
                if working.get(node, ("",))[0] == agent:
                    del working[node]

    def release_lapsed(
        self, now: Stamp, working: dict[str, tuple[str, Stamp]], online: Set[str]
    ) -> None:
        """Release the leaves of offline holders whose lease must have lapsed."""
        for agent, at in list(self.lapsing.items()):
            if agent in online:
                del self.lapsing[agent]
            elif at <= self.wait_ms(now):
                del self.lapsing[agent]
                for node, (holder, _s) in list(working.items()):
                    if holder == agent:
                        del working[node]
