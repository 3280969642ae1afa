"""Intent inference and dialogs (seed 000 §2.3): figures, not pass/fail.

1. Intent latency and accuracy vs tracking noise and hand speed: reaches from a rest
   pose to a random object of a 6-object table, along the world's curved hand paths,
   tracked at 20 Hz with Gaussian noise; the tracker sees what a robot's driver sees.
   "first" = the first inferred object is the target; "final" = the model shows the
   target before the grasp; latency = from the start of the reach until the model
   shows the target for good (s and share of the reach); "wrong" = wrong objects
   shown per reach.
2. Dialog round trip over the broker (mosquitto): a robot's ``dialog.ask`` to a human
   agent that answers at once, p50/p95/max.

    python benchmarks/bench_intent.py [--trials 200] [--dialogs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker import MosquittoBroker, find_mosquitto
from teamtree.planners.tasktree import IntentParams
from teamtree.planners.tasktree.reach_trials import reach_trial


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def intent_table(trials: int, path_noise: float) -> None:
    params = IntentParams()
    print(f"\nintent inference, {trials} reaches per cell, path bow {path_noise} x distance")
    print(f"  defaults: {params}")
    print(
        "  noise m  speed m/s  first   final   latency p50/p90 s   share of reach p50/p90"
        "   wrong/reach"
    )
    for noise in (0.0, 0.005, 0.01, 0.02):
        for speed in (0.2, 0.35, 0.6, 1.0):
            res = [reach_trial(s, noise, speed, path_noise, params) for s in range(trials)]
            ok = [r for r in res if r.latency is not None]
            lat = [r.latency for r in ok] or [float("nan")]
            share = [r.latency / r.duration for r in ok] or [float("nan")]
            print(
                f"  {noise:<7} {speed:<10} {sum(r.first == r.target for r in res) / len(res):6.0%}"
                f"  {len(ok) / len(res):6.0%}   {pct(lat, 0.5):5.2f} / {pct(lat, 0.9):5.2f}"
                f"         {pct(share, 0.5):4.0%} / {pct(share, 0.9):4.0%}"
                f"              {sum(r.wrong for r in res) / len(res):4.2f}"
            )


class Responder(Agent):
    async def setup(self) -> None:
        self.on_team("dialog", self._ask, kind="dialog.ask")

    async def _ask(self, env, topic) -> None:
        if env.to == self.id:
            await self.reply(env, "dialog.answer", {"answer": "continue"})


async def dialog_rtt(n: int) -> None:
    if find_mosquitto() is None:
        print("\ndialog round trip: mosquitto is not installed; skipped")
        return
    broker = MosquittoBroker()
    await broker.start()
    try:
        runtime = RuntimeSettings(keepalive_s=5)
        robot = Agent("pr2", team="bench-dialog", endpoint=broker.endpoint, runtime=runtime)
        human = Responder("alice", team="bench-dialog", endpoint=broker.endpoint, runtime=runtime)
        async with robot, human:
            await robot.wait_connected(10)
            await human.wait_connected(10)
            await asyncio.sleep(0.5)
            rtts = []
            for i in range(n):
                start = time.perf_counter()
                await robot.request("dialog", "dialog.ask", {"n": i}, to="alice", timeout=5)
                rtts.append((time.perf_counter() - start) * 1000)
        print(f"\ndialog round trip over mosquitto ({n} questions, answer at once)")
        print(
            f"  p50 {statistics.median(rtts):.2f} ms  p95 {pct(rtts, 0.95):.2f} ms  "
            f"max {max(rtts):.2f} ms"
        )
    finally:
        await broker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--dialogs", type=int, default=200)
    parser.add_argument("--path-noise", type=float, default=0.05)
    args = parser.parse_args()
    intent_table(args.trials, args.path_noise)
    asyncio.run(dialog_rtt(args.dialogs))


if __name__ == "__main__":
    main()
