"""GraspPrefetch: slow scores run on one worker thread, once per key, while the loop runs."""

from __future__ import annotations

import asyncio
import threading
import time

from teamtree.agents.tasktree.grasp_prefetch import GraspPrefetch


def test_a_prefetched_score_is_computed_once_off_the_loop_and_cached() -> None:
    calls: list[str] = []
    loop_ticks = 0

    def slow() -> float:
        calls.append(threading.current_thread().name)
        time.sleep(0.2)  # stands for ~40 ms of grasp sampling
        return 42.0

    async def main() -> float:
        nonlocal loop_ticks
        cache: dict = {}
        p = GraspPrefetch(cache)
        p.start("cup", slow)
        p.start("cup", slow)  # already under way: not started twice
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.1:  # the loop keeps running meanwhile
            loop_ticks += 1
            await asyncio.sleep(0.01)
        value = await p.get("cup", slow)
        again = await p.get("cup", slow)  # from the cache
        assert cache["cup"] == 42.0 and again == value
        p.close()
        return value

    assert asyncio.run(main()) == 42.0
    assert len(calls) == 1 and calls[0].startswith("grasp")
    assert loop_ticks >= 5


def test_get_without_prefetch_and_a_failing_score() -> None:
    async def main() -> None:
        p = GraspPrefetch({}, max_pending=0)  # no prefetch allowed: get still scores
        assert await p.get("a", lambda: 7.0) == 7.0

        def broken() -> float:
            raise ValueError("no arm")

        q = GraspPrefetch({})
        try:
            await q.get("b", broken)
        except ValueError as exc:
            assert "no arm" in str(exc)
        else:
            raise AssertionError("the score's error must reach the caller")
        assert "b" not in q.cache
        p.close()
        q.close()

    asyncio.run(main())
