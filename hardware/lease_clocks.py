"""Reading a holder's lease deadline on the body's own clock (the simulated world's,
a driver's that enforces the lease for its body), whatever the holder's
clock says.

A command's deadline (``lease_ms``) and its send time (``sent_ms``) come from the
holder's clock, which may run hours off the body's. For each holder clock (the body
and the ``clock`` id the holder sends, one per holder process) the body keeps the
smallest ``receipt - sent_ms`` it has seen on its own clock: the clocks' offset plus
the shortest delay of any command so far. A deadline on the body's clock is then
``lease_ms + that``. Skew cancels out: a command sent at real time ``s`` with
``lease_ms = sent_ms + lease`` lapses at real time ``s + lease + d_min`` (``d_min``
the shortest delay seen, milliseconds), however far apart the clocks are. A command
held up in a frozen driver still carries its old ``sent_ms``, so it is read as
late as it is and refused ``lease_expired`` when its lease has passed.

The first command of a clock is read as sent on receipt (nothing older is known to
compare it with). Pure: callers pass the times."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["KEEP", "LeaseClocks"]

KEEP = 256
"""Holder clocks remembered (least recently used forgotten first)."""


class LeaseClocks:
    """Per holder clock: the smallest ``receipt - sent`` seen (ms)."""

    def __init__(self, keep: int = KEEP) -> None:
        self._least: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._keep = keep

    def offset_ms(self, body: str, clock: str, sent_ms: int, now_ms: int) -> int:
        """What to add to a reading of `clock` to read it on the body's clock, learning
        from a command of `body` sent at `sent_ms` (its clock) and received at
        `now_ms` (the body's)."""
        key = (body, clock)
        sample = now_ms - sent_ms
        least = self._least.pop(key, sample)
        self._least[key] = least = min(least, sample)
        while len(self._least) > self._keep:
            self._least.popitem(last=False)
        return least

    def deadline_ms(
        self, body: str, clock: str | None, lease_ms: int, sent_ms: int | None, now_ms: int
    ) -> int:
        """`lease_ms` on the body's clock. Without `sent_ms` (an older holder) the
        deadline is taken as it is, on the body's clock."""
        if sent_ms is None:
            return lease_ms
        return lease_ms + self.offset_ms(body, clock or "", sent_ms, now_ms)
