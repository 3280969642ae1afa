"""Token buckets per sender: how an agent bounds the work (and the replies) that one
sender's messages can make it do, in a table that a flood of made-up senders cannot
grow without limit.

A bucket holds at most `burst` tokens and gains `rate` a second; a message takes one
or is refused. ``SenderBuckets`` keeps one bucket per sender, at most `max_senders`
of them: a new sender takes the place of the one heard from longest ago if that one's
bucket has filled up again (it has been quiet for ``burst / rate`` seconds, so
forgetting it gives it nothing), and otherwise shares one overflow bucket with every
other sender the table has no room for. Pure (time is passed in).
"""

from __future__ import annotations

__all__ = ["SenderBuckets", "TokenBucket"]

_EPSILON = 1e-9


class TokenBucket:
    """At most `burst` messages at once, `rate` a second on average."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if not rate > 0 or not burst >= 1:
            raise ValueError(f"a bucket needs rate > 0 and burst >= 1, not {rate}, {burst}")
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = self.burst
        self.stamp = now

    def level(self, now: float) -> float:
        """The tokens there are at `now` (a clock that went back adds none)."""
        return min(self.burst, self.tokens + max(0.0, now - self.stamp) * self.rate)

    def take(self, now: float) -> bool:
        """Take one token at `now`; False (and nothing taken) when there is none."""
        self.tokens = self.level(now)
        self.stamp = max(self.stamp, now)
        if self.tokens < 1.0 - _EPSILON:  # a sender exactly at the rate, less rounding
            return False
        self.tokens = max(0.0, self.tokens - 1.0)
        return True


class SenderBuckets:
    """One ``TokenBucket`` per sender, at most `max_senders` (module docstring)."""

    def __init__(self, rate: float, burst: float, max_senders: int = 256) -> None:
        TokenBucket(rate, burst, 0.0)  # the same checks, once
        self.rate = rate
        self.burst = burst
        self.max_senders = max(1, max_senders)
        self._buckets: dict[str, TokenBucket] = {}  # least recently heard first
        self._overflow: TokenBucket | None = None
        self.refused = 0
        """Messages refused since this table was made."""

    def __len__(self) -> int:
        return len(self._buckets)

    def allow(self, sender: str, now: float) -> bool:
        """Whether `sender` may have one more message handled at `now`."""
        bucket = self._bucket(sender, now)
        if bucket.take(now):
            return True
        self.refused += 1
        return False

    def _bucket(self, sender: str, now: float) -> TokenBucket:
        buckets = self._buckets
        bucket = buckets.pop(sender, None)
        if bucket is None and len(buckets) >= self.max_senders:
            oldest = next(iter(buckets))
            if buckets[oldest].level(now) < self.burst:  # not quiet long enough to forget
                if self._overflow is None:
                    self._overflow = TokenBucket(self.rate, self.burst, now)
                return self._overflow
            del buckets[oldest]
        if bucket is None:
            bucket = TokenBucket(self.rate, self.burst, now)
        buckets[sender] = bucket  # now the most recently heard
        return bucket
