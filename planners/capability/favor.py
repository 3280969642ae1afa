"""The favor protocol of seed 002 (§IV.C-D, §V.B, Fig. 5) as a pure state machine.

Events in, actions out; time is a number the caller passes. A ``FavorRequester``
(``favor_requester.py``) runs one job's member search on the agent; a
``FavorResponder`` (``favor_responder.py``) runs on every robot and answers, forwards,
helps. This module holds what both speak: every favor is a :class:`Lease`::

    REQUESTED ─┬─> GRANTED ─┬─> ACCEPTED ─┬─> RELEASED   job done (or helper no longer needed)
               │            │             ├─> REVOKED    battery below the idle threshold,
               │            │             │              helper withdrew
               │            │             └─> EXPIRED    no heartbeat in time (silent)
               │            ├─> REJECTED  not selected (declined)
               │            └─> EXPIRED   helper's hold lapsed without an acceptance
               └─> REJECTED   no answer when the window closed, or refused

Choices: requests go to the idle neighbours in range and are forwarded hop by hop while
``ttl`` > 1, de-duplicated by request id and never sent back along their path; grants
and everything after go straight to the requester (reply-to, as over the broker). In
method 1 a neighbour that grants does not forward; in method 2 idle robots reply and
forward. A helper holds itself for one requester at a time. A selection that finds
nobody is retried in a new round (new request id) up to ``max_rounds`` times; a lost
helper starts a new round in which the helpers still committed compete with new offers.

Closing the window early: the agent may name the robots it expects to answer
(``expect``, the capable robots in reach, see ``reach.py``). A robot that could help
but is not idle declines at once (``FavorReject``, reason "not idle"), so the window
closes as soon as every expected robot has granted or declined; the deadline bounds
the wait for lost messages. A round that closed early without a selection is retried
after ``retry_s`` (helpers may become idle), not at once. A job the agent knows to be
impossible (``impossible`` set from its factsheet replay) fails at its first fruitless
round with ``SelectionFailed.impossible``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from teamtree.hardware import IDLE_BATTERY_THRESHOLD
from teamtree.planners.capability.modes import (
    FavorQuery,
    Offer,
    Selection,
    WorkingMode,
)


class LeaseState(enum.StrEnum):
    """Lifecycle of one favor (DESIGN §Wire)."""

    REQUESTED = "requested"
    """The request went out; no answer yet."""
    GRANTED = "granted"
    """The helper offered itself, carrying C^fav."""
    REJECTED = "rejected"
    """No answer by the deadline, refused, or not selected."""
    ACCEPTED = "accepted"
    """The requester selected the helper; the helper is helping."""
    RELEASED = "released"
    """Ended normally."""
    REVOKED = "revoked"
    """Ended early: battery below the idle threshold, or withdrawn."""
    EXPIRED = "expired"
    """A hold or a lease ran out without renewal (silence)."""


TERMINAL = frozenset(
    {LeaseState.REJECTED, LeaseState.RELEASED, LeaseState.REVOKED, LeaseState.EXPIRED}
)
_NEXT: dict[LeaseState, frozenset[LeaseState]] = {
    LeaseState.REQUESTED: frozenset({LeaseState.GRANTED, LeaseState.REJECTED}),
    LeaseState.GRANTED: frozenset({LeaseState.ACCEPTED, LeaseState.REJECTED, LeaseState.EXPIRED}),
    LeaseState.ACCEPTED: frozenset({LeaseState.RELEASED, LeaseState.REVOKED, LeaseState.EXPIRED}),
}


@dataclass
class Lease:
    """One favor between a requester and a helper, for one request id."""

    request_id: str
    requester: str
    helper: str
    state: LeaseState = LeaseState.REQUESTED
    since: float = 0.0
    offer: Offer | None = None
    last_seen: float = 0.0
    reason: str = ""

    def can_move(self, to: LeaseState) -> bool:
        """True when ``to`` follows the current state in the lifecycle."""
        return to in _NEXT.get(self.state, frozenset())

    def move(self, to: LeaseState, now: float, reason: str = "") -> bool:
        """Take the transition if the lifecycle allows it; False (no change) otherwise."""
        if not self.can_move(to):
            return False
        self.state, self.since = to, now
        if reason:
            self.reason = reason
        return True

    @property
    def active(self) -> bool:
        """Not in a terminal state."""
        return self.state not in TERMINAL


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class FavorRequest:
    """Spread to idle neighbours; ``hops`` is the path so far, ``deadline`` absolute time."""

    request_id: str
    requester: str
    query: FavorQuery
    ttl: int
    deadline: float
    hops: tuple[str, ...] = ()


@dataclass(frozen=True)
class FavorGrant:
    """A helper's offer, carrying its capability (C^fav) in ``offer``."""

    request_id: str
    requester: str
    helper: str
    offer: Offer


@dataclass(frozen=True)
class FavorReject:
    """A helper refuses (e.g. an acceptance that came after it moved on)."""

    request_id: str
    requester: str
    helper: str
    reason: str = ""


@dataclass(frozen=True)
class FavorAccept:
    """The requester selected the helper for ``mode``."""

    request_id: str
    requester: str
    helper: str
    mode: WorkingMode


@dataclass(frozen=True)
class FavorRelease:
    """The requester no longer needs the helper (declined grant, or job done)."""

    request_id: str
    requester: str
    helper: str
    reason: str = ""


@dataclass(frozen=True)
class FavorRevoke:
    """The helper withdraws from an accepted favor."""

    request_id: str
    requester: str
    helper: str
    reason: str = ""


@dataclass(frozen=True)
class HelperStatus:
    """A helper's heartbeat while helping (renews the lease)."""

    request_id: str
    requester: str
    helper: str
    battery: float


Message = (
    FavorRequest
    | FavorGrant
    | FavorReject
    | FavorAccept
    | FavorRelease
    | FavorRevoke
    | HelperStatus
)

# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Send:
    """Deliver ``message`` to robot ``to``."""

    to: str
    message: Message


@dataclass(frozen=True)
class Selected:
    """Member selection finished (again, after a lost helper)."""

    selection: Selection
    round: int


@dataclass(frozen=True)
class SelectionFailed:
    """No mode works after every round (``impossible``: not with every robot idle either)."""

    job: str
    reason: str
    impossible: bool = False


@dataclass(frozen=True)
class HelperLost:
    """An accepted helper is gone; the requester seeks another."""

    helper: str
    reason: str


@dataclass(frozen=True)
class RoleChanged:
    """A robot's LED state (Fig. 1): idle, busy or helping."""

    robot: str
    role: str
    requester: str | None = None


FavorAction = Send | Selected | SelectionFailed | HelperLost | RoleChanged
"""What a favor requester or responder asks its agent to do (send, report a selection)."""


def is_idle(battery: float, has_job: bool, threshold: float = IDLE_BATTERY_THRESHOLD) -> bool:
    """Idle robot (§II.B): battery above the threshold and no job."""
    return battery > threshold and not has_job
