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
import random
import statistics
import time

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker import MosquittoBroker, find_mosquitto
from teamtree.hardware.world import World
from teamtree.planners.tasktree import HandSample, IntentParams, IntentTracker

SCENE = {
    "cup": [-0.05, 0.05, 0.80],
    "sugar": [0.05, 0.20, 0.79],
    "tea_pot": [0.15, -0.05, 0.83],
    "burger": [-0.20, -0.10, 0.785],
    "sandwich": [0.0, -0.25, 0.77],
    "orange": [-0.25, 0.22, 0.80],
}


def trial(seed: int, noise: float, speed: float, path_noise: float, params: IntentParams):
    rng = random.Random(seed)
    target = rng.choice(sorted(SCENE))
    objects = {
        n: {"shape": "sphere", "dims": [0.03], "position": p, "goal": [0.6, 0.6, 0.8]}
        for n, p in SCENE.items()
    }
    rest = [0.7 + rng.uniform(-0.05, 0.05), rng.uniform(-0.2, 0.2), 0.95]
    hand = {"rest": rest, "speed": speed, "noise": noise, "path_noise": path_noise}
    world = World.from_spec(objects, {}, {"h": hand}, seed=seed)
    tracker = IntentTracker(params)
    world.advance(0.3)
    t0 = t = world.t
    world.hand_reach("h", "c", target, t0, then="hold")
    history = []
    while True:
        t += 0.05
        world.advance(t)
        if world.objects[target].held_by is not None:
            break
        view = world.hand_view("h", 0.3)
        tracker.add(HandSample(r[0], tuple(r[1:])) for r in view["track"])
        change = tracker.update({n: o.position for n, o in world.objects.items()})
        if change is not None:
            history.append((world.t - t0, change.new))
    first = next((n for _, n in history if n), None)
    latency = None
    for when, name in history:
        if name == target and latency is None:
            latency = when
        elif name != target:
            latency = None
    wrong = sum(1 for _, n in history if n not in (None, target))
    return target, first, latency, world.t - t0, wrong


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
            res = [trial(s, noise, speed, path_noise, params) for s in range(trials)]
            ok = [r for r in res if r[2] is not None]
            lat = [r[2] for r in ok] or [float("nan")]
            share = [r[2] / r[3] for r in ok] or [float("nan")]
            print(
                f"  {noise:<7} {speed:<10} {sum(r[1] == r[0] for r in res) / len(res):6.0%}"
                f"  {len(ok) / len(res):6.0%}   {pct(lat, 0.5):5.2f} / {pct(lat, 0.9):5.2f}"
                f"         {pct(share, 0.5):4.0%} / {pct(share, 0.9):4.0%}"
                f"              {sum(r[4] for r in res) / len(res):4.2f}"
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
