"""Done is checked, not believed: rule 7 of ``peer.py``.

For an evidence leaf (one whose object has a goal in the world) a peer's ``done`` is
not believed: the leaf is done for this member only when its own observation of the
world shows it. Such a report still casts doubt: the leaf is held back from selection
until this member's next keyframe shows the world, a claim on it now would most
likely lose to that peer's report. At most ``DOUBT_LIMIT`` keyframes that did not
bear a report out, so a forged or mistaken done delays a leaf a little, never for
good.

``DoneTrust`` owns that: the evidence leaves, the peer dones refused, and the doubt.
It holds no reference to the controller; it is told what peers and the world said,
and its owner keeps the one copy of which leaves are done.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from teamtree.planners.tasktree.versioned import VersionedSet

__all__ = ["DOUBT_LIMIT", "DoneTrust"]

DOUBT_LIMIT = 3
"""Keyframes a leaf may be held back through on peers' reports of its done that the
world did not bear out (``DoneTrust.refuse``); past them such reports hold it back no
more."""


class DoneTrust:
    """Evidence leaves, the peer dones refused for them, and the doubt those cast."""

    def __init__(self, evidence_leaves: Iterable[str]) -> None:
        self.evidence_leaves = frozenset(evidence_leaves)
        """Leaves done only on the world's evidence (rule 7)."""
        self.unconfirmed = 0
        """Peer reports of done that the world did not show (rule 7)."""
        self._refused_done: set[str] = set()
        """Evidence leaves a peer said were done, not believed (``EvidenceChanged``)."""
        self.doubted = VersionedSet()
        """Evidence leaves held back from selection until the next ``WorldShown``: a
        peer said they were done and this member's world has not shown it yet."""
        self._doubt_misses: dict[str, int] = {}
        """Per leaf: keyframes that came after a doubt and did not show it done."""
        self._keyframes = 0  # WorldShown events seen: none, no doubt (nothing frees it)

    def refuse(self, node: str) -> None:
        """A peer says evidence leaf ``node`` is done: not believed, counted, doubted."""
        self.unconfirmed += 1
        self._refused_done.add(node)
        self._doubt(node)

    def _doubt(self, node: str) -> None:
        """Hold ``node`` back from selection until this member's next keyframe: a peer
        says it is done, which this member's world will show if it is (a claim on it
        now would only lose to that peer's report, and at 64 robots most claims did).
        At most ``DOUBT_LIMIT`` keyframes that did not show it done, so reports that
        the world never bears out (a forged or mistaken done) delay a leaf by a few
        keyframes, never for good. Only once keyframes come (``WorldShown``)."""
        if (
            not self._keyframes
            or node in self.doubted
            or self._doubt_misses.get(node, 0) >= DOUBT_LIMIT
        ):
            return
        self.doubted.add(node)

    def world_shown(self, done: Set[str]) -> None:
        """A keyframe: the doubts end; those the world did not bear out count a miss."""
        self._keyframes += 1
        if not self.doubted:
            return
        misses = self._doubt_misses
        for node in self.doubted:
            if node not in done:
                misses[node] = misses.get(node, 0) + 1
        self.doubted.clear()

    def world_confirmed(self, node: str) -> None:
        """The world shows ``node`` done: a report of it was borne out, doubt anew."""
        self._doubt_misses.pop(node, None)

    def set_leaves(self, leaves: Iterable[str]) -> list[str]:
        """New evidence leaves; returns the refused peer dones that count now (their
        leaves left the set, e.g. an AGV's load the world turned out not to show)."""
        self.evidence_leaves = frozenset(leaves)
        freed = [n for n in self._refused_done if n not in self.evidence_leaves]
        if freed:
            self._refused_done.difference_update(freed)
        return freed
