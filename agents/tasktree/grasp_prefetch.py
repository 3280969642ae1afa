"""Grasp scores for the log, computed beside the event loop rather than in it.

Under the distance-only metric a robot scores a behaviour's grasp only for its log line
and its ``node.transition`` (the recorder's summary shows it). One score samples 128
grasp candidates: 30-45 ms of CPU here. Computed in the event loop when the behaviour
started, it stalled every agent of the process, and with them the replies other robots'
claims were waiting for (issue 19: most of an 8-robot claim's time was spent queued
in peers' processes). Here the score runs on one worker thread, started when the robot
claims the leaf, so it is usually ready when the claim is won, and awaited only when
the behaviour starts. One thread: the robot's random generator is never used by two
threads at once (the caller uses it nowhere else while this is in use).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["GraspPrefetch"]


class GraspPrefetch:
    """Scores computed once per key on one worker thread, kept in `cache`.

    `score` (given to ``start``/``get``) is the slow, pure-CPU scoring call. Call from
    the event loop's thread; the first call creates the worker, ``close`` ends it.
    """

    def __init__(self, cache: dict[Hashable, float], max_pending: int = 8):
        self.cache = cache
        self.max_pending = max_pending
        self._pending: dict[Hashable, Future[float]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def start(self, key: Hashable, score: Callable[[], float]) -> None:
        """Begin scoring `key` unless it is known or already under way (and at most
        `max_pending` at once: a prefetch is a hint, not a promise)."""
        if key in self.cache or key in self._pending or len(self._pending) >= self.max_pending:
            return
        future = self._worker().submit(score)
        self._pending[key] = future
        loop = asyncio.get_running_loop()  # settled on the loop's thread, not the worker's

        def done(f: Future[float], k: Hashable = key) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._settle, k, f)

        future.add_done_callback(done)

    def _worker(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grasp")
        return self._pool

    def _settle(self, key: Hashable, future: Future[float]) -> None:
        if self._pending.get(key) is future:
            del self._pending[key]
        if not future.cancelled() and future.exception() is None:
            self.cache.setdefault(key, future.result())

    async def get(self, key: Hashable, score: Callable[[], float]) -> float:
        """The score of `key`: cached, awaited from its prefetch, or computed now on the
        worker thread (the event loop keeps running meanwhile)."""
        if key in self.cache:
            return self.cache[key]
        self.start(key, score)
        future = self._pending.get(key)
        if future is None:  # too many under way: wait for this one on the thread anyway
            future = self._worker().submit(score)
        value = await asyncio.wrap_future(future)
        self.cache.setdefault(key, value)
        return self.cache[key]

    def close(self) -> None:
        """Stop the worker thread; scores not started yet are dropped."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._pending.clear()
