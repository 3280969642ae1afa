"""Contention avoidance for the peer rule: claim where you are the best candidate.

The peer rule (``peer.py``) resolves two claims on one leaf safely, but each conflict
costs a round of replies, a loser and a retry; when every robot selects the leaf of
highest activation, a team of 32 converges on the same few leaves and the retries
become a storm. Here each member also publishes its activation potentials (eq. 1, the
values it computes for every leaf anyway) and, before claiming, solves the team's
assignment in its own view: a greedy matching of idle members to selectable leaves by
potential (highest first, ties by member id, then leaf id), as the first round of a
consensus-based bundle algorithm (CBBA) would with bundles of one. It claims the leaf
the matching gives it. When views agree no two members claim the same leaf; when they
do not (a stale potential, a claim in flight), the peer rule still decides, so safety
never rests on this module: it only chooses *which* leaf to claim and *when*.

Readings and choices (the papers do not cover teams this large):

- *Idle* peers are the online ones working on nothing in this member's view; a busy
  peer does not compete (one behaviour at a time, §3.1). A member whose potentials are
  not known yet does not count: until every idle peer's potentials arrived, a member
  waits up to its patience before it claims with what it knows.
- *Patience*: when the matching gives this member no leaf while it has selectable ones
  (more idle members than leaves, or a view that is wrong), it waits a random
  ``patience_ticks .. 2 * patience_ticks`` ticks, then claims its own best leaf as seed
  000 does: progress never depends on a peer's published values.
- *Backoff with jitter*: a lost claim inhibits its leaf for ``base * u * 2**k`` ticks
  (``u`` uniform in [1, 2), ``k`` the member's consecutive losses, at most 4); a claim
  waiting for replies is re-sent after ``base * u * 2**k`` ticks (``k`` resends so far,
  at most 3: with the default 50 ticks of 50 ms, a resend at least every 20-40 s), so a
  storm damps out instead of growing. Over QoS 1 and persistent sessions a resend to a
  connected peer is only needed for a message lost with a session (a broker node that
  stopped); a slow reply means a busy peer, and asking it again makes it busier. A
  peer that announces itself ONLINE again is asked at once (the peer rule does that).
- Published potentials are rounded to 1/1000 and re-published (at most every
  ``publish_every`` ticks) only while the member can take work and when some leaf
  moved by more than ``tolerance``: a working robot's arm moves, an idle one's does not.
- Only a member's best ``top_count`` open leaves (neither done nor worked on) are
  published, twice the members online and at least 8: the matching does not reach
  further down a peer's list (``top_count``), so on a big tree the rest is bytes every
  peer decodes for nothing. They are published again when too few are still open.

Pure: the random draws come from a ``random.Random`` the caller seeds.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

__all__ = [
    "ContentionAvoider",
    "PeerPotentials",
    "PublishPotentials",
    "greedy_choice",
    "top_count",
]


@dataclass(frozen=True)
class PeerPotentials:
    """Event: ``agent``'s activation potentials (eq. 1) per leaf, as it published them."""

    agent: str
    potentials: Mapping[str, float]


@dataclass(frozen=True)
class PublishPotentials:
    """Action: publish this member's potentials per leaf (QoS 0, retained: the newest
    replaces the last, and a late joiner reads them at once)."""

    agent: str
    potentials: Mapping[str, float]


def greedy_choice(
    mine: Mapping[str, float], me: str, rivals: Mapping[str, Mapping[str, float]]
) -> str | None:
    """The leaf a greedy matching of members to leaves gives `me`, or None.

    `mine`: this member's value per selectable leaf (> 0); `rivals`: each idle peer's
    potential per leaf (only leaves in `mine` count). Pairs are taken best value first,
    ties by member id then leaf id; each member and each leaf is matched once. A member
    is matched within its own first ``len(members)`` leaves, so only those are ranked.
    """
    if not mine:
        return None
    members = 1 + len(rivals)
    # each member's best `members` leaves, ties to the lower leaf id as in the sort below
    pairs: list[tuple[float, str, str]] = [
        (nv, me, leaf) for nv, leaf in heapq.nsmallest(members, ((-v, k) for k, v in mine.items()))
    ]
    for q, pots in rivals.items():
        values = ((-pots.get(leaf, 0.0), leaf) for leaf in mine)
        pairs.extend((nv, q, leaf) for nv, leaf in heapq.nsmallest(members, values) if nv < 0.0)
    pairs.sort()
    taken_members: set[str] = set()
    taken_leaves: set[str] = set()
    for _neg, member, leaf in pairs:
        if member in taken_members or leaf in taken_leaves:
            continue
        if member == me:
            return leaf
        taken_members.add(member)
        taken_leaves.add(leaf)
    return None


def top_count(members: int) -> int:
    """How many of its best open leaves (neither done nor worked on) a member
    publishes in a team of `members` online (itself included): twice as many, and at
    least ``MIN_TOP``.

    ``greedy_choice`` matches a member within its first ``members`` leaves among the
    solver's (each other member takes one leaf before it). So while every open leaf is
    selectable, the views agree and the solver could take each of them, a peer's values
    beyond its best `members` never change a matching, and the rest need not be sent.
    Otherwise this is an approximation (safety never rests on the matching): the
    margin covers leaves not selectable yet (a THEN's later steps, sent ahead so a
    peer whose view lags still knows them), leaves done or taken between two publishes
    and peers whose view of who is online differs. Sending every leaf's value would
    make each robot of a big team decode every peer's whole tree on each publish."""
    return max(MIN_TOP, 2 * members)


MIN_TOP = 8


class ContentionAvoider:
    """One member's view of its peers' potentials, its patience and its backoff.

    ``TaskController(avoid_contention=True)`` owns one; see the module docstring.
    """

    def __init__(
        self,
        me: str,
        rng: random.Random,
        *,
        patience_ticks: int = 10,
        publish_every: int = 10,
        tolerance: float = 0.02,
        recompute_every: int = 4,
    ) -> None:
        self.me = me
        self.rng = rng
        self.patience_ticks = patience_ticks
        self.publish_every = publish_every
        self.tolerance = tolerance
        self.recompute_every = recompute_every
        self.peers: dict[str, dict[str, float]] = {}
        self.silent: set[str] = set()
        """Peers that never publish potentials (a robot's human teammates, whose
        conflicts its models and dialogs handle): not counted as rivals."""
        self._published: dict[str, float] | None = None
        self._checked: Collection[str] | None = None
        """The open leaves ``_top_stale`` last looked at (the caller hands the same
        object while none was done or taken)."""
        self._since_publish = publish_every
        self._dirty = True
        self._held_new = False  # a leaf was held back since the last publish
        self._waited = 0
        self._patience = self._draw_patience()
        self._losses = 0
        self._cache: tuple[tuple[object, ...], str | None] | None = None
        self._cache_age = 0
        self._version = 0

    # -- peers' potentials -----------------------------------------------------

    def on_peer(self, ev: PeerPotentials) -> None:
        """Keep `ev.agent`'s newest potentials (values below 0 count as 0)."""
        if ev.agent == self.me:
            return
        self.peers[ev.agent] = {k: max(0.0, float(v)) for k, v in ev.potentials.items()}
        self._version += 1

    def forget(self, agent: str) -> None:
        """`agent` went offline: its potentials no longer count."""
        if self.peers.pop(agent, None) is not None:
            self._version += 1

    # -- publishing this member's ----------------------------------------------

    def potentials_changed(self) -> None:
        """This member's potentials changed (maybe by less than the tolerance)."""
        self._dirty = True

    def held_back(self) -> None:
        """This member now holds a leaf back (``maybe_publish``'s `held`): say so at the
        next tick, not ``publish_every`` ticks after the last publish. A robot that fails
        a leaf had usually published when its last hold ended, just before it claimed
        the leaf again, so the news waited out most of the new hold."""
        self._dirty = True
        self._held_new = True

    def maybe_publish(
        self,
        potentials: Mapping[str, float],
        can_take_work: bool,
        open_leaves: Callable[[], Collection[str]] | None = None,
        members: int = 0,
        held: Collection[str] = (),
    ) -> PublishPotentials | None:
        """Called once a tick: the potentials to publish now, if any (see module doc).

        With `open_leaves` (the leaves neither done nor worked on, asked only when it
        may publish; the same object while they do not change) only its best
        ``top_count(members)`` of them go out, `members` being the team's robots online
        in its view, itself included. `held`: leaves this member holds back for now
        (inhibited after a lost claim or a failed behaviour): they go out as 0 (left
        out), since it will not claim them meanwhile. Published at their value, a
        peer's matching gave such a leaf to this member and the peer waited its
        patience for nothing; a member whose behaviour failed on a leaf again and again
        (an AGV that rejects the order) claimed it again as soon as its hold ended, so
        an able peer of equal potential never got it (call ``potentials_changed`` when
        the held leaves change, ``held_back`` when one is added)."""
        self._since_publish += 1
        if not (can_take_work and (self._since_publish >= self.publish_every or self._held_new)):
            return None
        leaves = None if open_leaves is None else open_leaves()
        if not (self._dirty or self._top_stale(leaves, members)):
            return None
        self._dirty = self._held_new = False
        if held:
            potentials = {k: (0.0 if k in held else v) for k, v in potentials.items()}
        if leaves is None:
            chosen: Mapping[str, float] = potentials
        else:
            values = ((-max(0.0, float(potentials.get(k, 0.0))), k) for k in leaves)
            best = heapq.nsmallest(top_count(members), values)  # ties to the lower leaf id
            chosen = {k: -nv for nv, k in best if nv < 0.0}
        rounded = {k: round(max(0.0, float(v)), 3) for k, v in chosen.items()}
        last = self._published
        if (
            last is not None
            and last.keys() == rounded.keys()
            and all(abs(rounded[k] - last[k]) <= self.tolerance for k in rounded)
        ):
            return None
        self._published = rounded
        self._since_publish = 0
        return PublishPotentials(self.me, rounded)

    def _top_stale(self, leaves: Collection[str] | None, members: int) -> bool:
        """Whether fewer of the published leaves are still open than a peer's matching
        may need (``members``; leaves done or taken since the last publish)."""
        last = self._published
        if leaves is None or last is None or leaves is self._checked:
            return False  # the same open leaves as at the last look: nothing more taken
        self._checked = leaves
        return sum(k in leaves for k in last) < min(members, len(leaves))

    # -- choosing ----------------------------------------------------------------

    def select(
        self,
        mine: Mapping[str, float],
        online: Collection[str],
        busy: Collection[str],
        view_key: object,
    ) -> str | None:
        """The leaf to claim now, or None to wait (called once a tick while idle).

        `mine`: this member's value per selectable leaf; `online`: peers online; `busy`:
        peers working on something; `view_key`: changes whenever `mine` may have."""
        if not mine:
            self._waited = 0
            return None
        idle = [q for q in online if q not in busy and q not in self.silent]
        rivals = {q: self.peers[q] for q in idle if q in self.peers}
        complete = len(rivals) == len(idle)
        key = (view_key, self._version, frozenset(rivals))
        self._cache_age += 1
        cache = self._cache
        if cache is not None and (cache[0] == key or self._cache_age < self.recompute_every):
            choice = cache[1]  # the same view, or one too recent to solve again
        else:
            choice = greedy_choice(mine, self.me, rivals)
            self._cache = (key, choice)
            self._cache_age = 0
        if choice is not None and choice not in mine:
            choice = None  # the cached choice was taken meanwhile
            self._cache = None
        if choice is not None and complete:
            self._waited = 0
            return choice
        self._waited += 1
        if self._waited < self._patience:
            return None
        self._waited = 0
        self._patience = self._draw_patience()
        if choice is not None:
            return choice
        return max(mine, key=lambda leaf: (mine[leaf], leaf))

    def _draw_patience(self) -> int:
        return self.patience_ticks + self.rng.randrange(self.patience_ticks + 1)

    # -- backoff -------------------------------------------------------------------

    def lost(self, base_ticks: int) -> int:
        """Ticks to inhibit a leaf whose claim just lost (jittered, exponential)."""
        self._losses = min(self._losses + 1, 4)
        self._cache = None
        return max(1, round(base_ticks * (1.0 + self.rng.random()) * 2 ** (self._losses - 1)))

    def won(self) -> None:
        """A claim won: the next loss starts the backoff again from the base."""
        self._losses = 0
        self._cache = None

    def resend_after(self, base_ticks: int, resends: int) -> int:
        """Ticks until the next resend of a claim already re-sent `resends` times."""
        return max(1, round(base_ticks * (1.0 + self.rng.random()) * 2 ** min(resends, 3)))
