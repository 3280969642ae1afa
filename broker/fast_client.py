"""aiomqtt's client with constant-time bookkeeping of pending publishes.

aiomqtt 2.5 checks every new QoS 1 publish against all pending calls by walking them
(``mid in self._pending_calls``, a generator over three dicts) and then counts them by
building a list: two linear scans per publish, so a burst of n pipelined publishes
costs O(n^2) (at 10,000 queued publishes most of the time goes there; see
benchmarks/bench_publish.py). ``FastClient`` keeps the same contract (one pending
entry per message id, removed when acknowledged or abandoned) with dict look-ups.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TypeVar

import aiomqtt

__all__ = ["FastClient"]

T = TypeVar("T")


class FastClient(aiomqtt.Client):
    """``aiomqtt.Client`` whose ``_pending_call`` does not scan the pending calls (its
    "many pending publishes" warning is left out: the connection logs its own state)."""

    @contextlib.contextmanager
    def _pending_call(self, mid: int, value: T, pending_dict: dict[int, T]) -> Iterator[None]:
        if mid in pending_dict:
            raise RuntimeError(f'There already exists a pending call for message ID "{mid}"')
        pending_dict[mid] = value
        try:
            yield
        finally:
            pending_dict.pop(mid, None)
