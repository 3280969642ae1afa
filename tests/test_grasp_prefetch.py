"""GraspPrefetch: a slow score runs in steps between the loop's other work, once per
key, one at a time, with the same result as the one-go score."""

from __future__ import annotations

import asyncio

import numpy as np

from teamtree.agents.tasktree.grasp_prefetch import GraspPrefetch
from teamtree.hardware.geometry import ShapePrimitive
from teamtree.hardware.profiles import arm_model
from teamtree.planners.tasktree.metrics import GraspScorer


def test_a_prefetched_score_runs_in_steps_once_and_matches_the_one_go_score() -> None:
    arm = arm_model("pr2", (0.9, 0.0, 0.0), yaw=3.14)
    shapes = [ShapePrimitive("box", (0.05, 0.05, 0.08), (0.3, 0.1 * i, 0.78)) for i in range(3)]
    scorer = GraspScorer()
    one_go = np.random.default_rng(5)
    expected = [scorer.score(s, arm, one_go).score for s in shapes]
    rng = np.random.default_rng(5)
    made = []

    def scoring(shape: ShapePrimitive):
        def steps():
            made.append(shape)
            result = yield from scorer.score_steps(shape, arm, rng)
            return result.score

        return steps

    async def main() -> tuple[list[float], int]:
        ticks = 0
        stop = asyncio.Event()

        async def other_agent() -> None:  # runs between the steps
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0)

        other = asyncio.create_task(other_agent())
        p = GraspPrefetch({})
        for i, s in enumerate(shapes):
            p.start(i, scoring(s))
            p.start(i, scoring(s))  # under way: not twice
        got = [await p.get(i, scoring(s)) for i, s in enumerate(shapes)]
        again = await p.get(0, scoring(shapes[0]))  # cached
        stop.set()
        await other
        p.close()
        return [*got, again], ticks

    got, ticks = asyncio.run(main())
    assert got[:3] == expected and got[3] == expected[0]  # same samples, same order
    assert len(made) == 3
    assert ticks >= 3 * (scorer.n_candidates // 16 - 1)  # the loop ran between steps


def test_get_without_prefetch_and_a_failing_score() -> None:
    def broken():
        raise ValueError("no arm")
        yield

    async def main() -> None:
        p = GraspPrefetch({}, max_pending=0)  # no prefetch allowed: get still scores

        def seven():
            yield
            return 7.0

        assert await p.get("a", seven) == 7.0
        try:
            await p.get("b", broken)
        except ValueError as exc:
            assert "no arm" in str(exc)
        else:
            raise AssertionError("the score's error must reach the caller")
        assert "b" not in p.cache

    asyncio.run(main())
