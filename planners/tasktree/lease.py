"""Leases that fence a robot's body: how long a command may run without renewal, and
when a peer may take a node over from a holder that went silent.

A holder tells its body "run this until ``deadline``" and renews the deadline every
``renew_s`` while it holds the node; the body stops on its own when the deadline
passes (etcd and Chubby leases; the fencing numbers are the body's own, see
``teamtree.hardware.world.fences``). A peer that hears the holder's Last Will at time
``T`` (its own clock) may take the node over at ``T + takeover_s``, where
``takeover_s = lease_s + margin_s``:

- the holder's last renewal was sent at ``s``, before its last packet reached the
  broker, so before the Will and before ``T``: ``s <= T`` (real time);
- the deadline in that renewal is ``s + lease_s`` on the holder's clock, sent with
  ``s`` on that clock; the body reads it on its own clock by the smallest
  ``receipt - sent`` it has seen from the holder's clock (``hardware.lease_clocks``),
  so the clocks' offset cancels and the body stops by real time ``s + lease_s +
  d_min``, ``d_min`` the shortest delay seen;
- the peer measures ``takeover_s`` on its own clock from ``T``, a duration, so only
  its clock *rate* matters: it starts no earlier than ``T + takeover_s * (1 - rho)``.

So ``margin_s >= d_min + rho * takeover_s`` plus the body's reaction time suffices,
whatever the clocks' skew (``d_min`` is milliseconds; ``rho`` is ~1e-4). A renewal
that arrives after its deadline is refused, and one of a command the body has since
granted the object to another command over is refused, so a renewal delayed in a
frozen driver's buffer cannot revive the lease. Pure: no clock reads; callers pass
times.
"""

from __future__ import annotations

from msgspec import Struct

__all__ = ["LeaseTerms"]


class LeaseTerms(Struct, frozen=True):
    """``lease_s``: how long a body runs a command after its last renewal;
    ``renew_s``: how often the holder renews (well below ``lease_s``); ``margin_s``:
    what a peer waits beyond the lease for clock skew and reaction time."""

    lease_s: float = 3.0
    renew_s: float = 0.5
    margin_s: float = 1.0

    def __post_init__(self) -> None:
        if not self.lease_s > 0:
            raise ValueError(f"lease_s is {self.lease_s}; give a positive number of seconds")
        if not 0 < self.renew_s < self.lease_s:
            raise ValueError(
                f"renew_s is {self.renew_s}; give a positive number below lease_s "
                f"({self.lease_s}), e.g. a third of it, so one lost renewal is survived"
            )
        if not self.margin_s >= 0:
            raise ValueError(f"margin_s is {self.margin_s}; give 0 or more seconds")

    @property
    def takeover_s(self) -> float:
        """Seconds after a holder's Last Will before a peer may take its node over."""
        return self.lease_s + self.margin_s

    @property
    def takeover_ms(self) -> int:
        """``takeover_s`` in whole milliseconds (rounded up)."""
        return -(-round(self.takeover_s * 1e6) // 1000)

    def deadline_ms(self, now_ms: int) -> int:
        """The lease deadline a renewal sent at ``now_ms`` (the holder's clock) carries."""
        return now_ms + int(self.lease_s * 1000)
