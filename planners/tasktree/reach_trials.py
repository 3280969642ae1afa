"""Synthetic reaches for judging intent inference (seed 000 §2.3): a hand in the
simulated world reaches from a random rest pose to a random object of a small table
scene, tracked as a robot's driver would see it, and an ``IntentTracker`` watches."""

from __future__ import annotations

import random
from dataclasses import dataclass

from teamtree.hardware.world import World
from teamtree.planners.tasktree import HandSample, IntentParams, IntentTracker

#: six objects on a table, metres (the tea-party table's middle)
SCENE: dict[str, list[float]] = {
    "cup": [-0.05, 0.05, 0.80],
    "sugar": [0.05, 0.20, 0.79],
    "tea_pot": [0.15, -0.05, 0.83],
    "burger": [-0.20, -0.10, 0.785],
    "sandwich": [0.0, -0.25, 0.77],
    "orange": [-0.25, 0.22, 0.80],
}


@dataclass(frozen=True)
class ReachTrial:
    """One reach: the target, the first object inferred, the latency (s from the start
    of the reach until the intent is the target for good; None if never), the reach's
    duration (s), and how many wrong objects were shown on the way."""

    target: str
    first: str | None
    latency: float | None
    duration: float
    wrong: int


def reach_trial(
    seed: int,
    noise: float,
    speed: float,
    path_noise: float = 0.05,
    params: IntentParams | None = None,
) -> ReachTrial:
    """Run one seeded reach with tracking `noise` (m), hand `speed` (m/s) and path
    wobble `path_noise`; deterministic for a seed."""
    rng = random.Random(seed)
    target = rng.choice(sorted(SCENE))
    objects = {
        n: {"shape": "sphere", "dims": [0.03], "position": p, "goal": [0.6, 0.6, 0.8]}
        for n, p in SCENE.items()
    }
    rest = [0.7 + rng.uniform(-0.05, 0.05), rng.uniform(-0.2, 0.2), 0.95]
    hand = {"rest": rest, "speed": speed, "noise": noise, "path_noise": path_noise}
    world = World.from_spec(objects, {}, {"h": hand}, seed=seed)
    tracker = IntentTracker(params) if params is not None else IntentTracker()
    world.advance(0.3)
    t0 = t = world.t
    world.hand_reach("h", "c", target, t0, then="hold")
    history: list[tuple[float, str | None]] = []
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
    return ReachTrial(target, first, latency, world.t - t0, wrong)
