"""Grasp scores for the log, computed in small steps between the event loop's other work.

Under the distance-only metric a robot scores a behaviour's grasp only for its log line
and its ``node.transition`` (the recorder's summary shows it). One score samples 128
grasp candidates: 30-45 ms of CPU here. Computed in one go when the behaviour started,
it stalled every agent of the process, and with them the replies other robots' claims
were waiting for (issue 19). On a worker thread it was no better: a CPU-bound thread
holds the GIL, and the event loop's thread waits up to the switch interval (5 ms)
after every select. So the score runs as a task in steps of 4 samples (~1.5 ms;
``GraspScorer.score_steps``), started `delay_s` after the robot claims the leaf (its
claim leaves first), so it is usually ready when the claim is won, and awaited only
when the behaviour starts. One
score at a time (a lock): the robot's random generator gives the same samples in the
same order as the one-go score would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Hashable

__all__ = ["GraspPrefetch"]

Steps = Generator[None, None, float]
"""A stepwise score: yields between steps, returns the score."""


class GraspPrefetch:
    """Scores computed once per key as event-loop tasks, in steps, kept in `cache`.

    `steps` (given to ``start``/``get``) makes the stepwise computation. Call from the
    event loop; ``close`` cancels what is under way.
    """

    def __init__(self, cache: dict[Hashable, float], max_pending: int = 8, delay_s: float = 0.02):
        self.cache = cache
        self.max_pending = max_pending
        self.delay_s = delay_s
        self._pending: dict[Hashable, asyncio.Task[float]] = {}
        self._one_at_a_time = asyncio.Lock()

    def start(self, key: Hashable, steps: Callable[[], Steps]) -> None:
        """Begin scoring `key` unless it is known or already under way (and at most
        `max_pending` at once: a prefetch is a hint, not a promise)."""
        if key in self.cache or key in self._pending or len(self._pending) >= self.max_pending:
            return
        self._pending[key] = asyncio.ensure_future(self._run(key, steps, self.delay_s))

    async def _run(self, key: Hashable, steps: Callable[[], Steps], delay_s: float = 0.0) -> float:
        try:
            if delay_s > 0:  # let what the caller just sent (a claim) leave first
                await asyncio.sleep(delay_s)
            async with self._one_at_a_time:
                if key in self.cache:
                    return self.cache[key]
                run = steps()
                while True:
                    try:
                        next(run)
                    except StopIteration as done:
                        value = float(done.value)
                        break
                    await asyncio.sleep(0)  # let the loop serve others between steps
            self.cache.setdefault(key, value)
            return self.cache[key]
        finally:
            self._pending.pop(key, None)

    async def get(self, key: Hashable, steps: Callable[[], Steps]) -> float:
        """The score of `key`: cached, awaited from its prefetch, or computed now."""
        if key in self.cache:
            return self.cache[key]
        task = self._pending.get(key)
        if task is None:
            return await self._run(key, steps)
        return await asyncio.shield(task)

    def close(self) -> None:
        """Cancel the scores under way."""
        for task in self._pending.values():
            task.cancel()
        self._pending.clear()
