"""Cost of one driver ``observation`` in the robot (seed 000), the hot inbound message:
a robot reads its driver's observation ~10 times a second and turns it into activation
potentials. Measures the robot's whole handler (``RobotAgent._on_observation``: decode,
absorb objects, humans, body watch, potentials) on a body the simulated world makes
(`--objects` objects on the table, one tracked hand), distance-only metric.

Prints microseconds per observation (best of ``--repeats`` runs of ``--number``), and
of decoding the body alone into its declared type (``decode_observation``) with its
share of the handler. Nothing is asserted.

    python benchmarks/bench_observation.py [--objects 10] [--number 2000] [--repeats 5]

Measured figures: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import timeit
from typing import Any

from teamtree.agents.runtime.observation_wire import decode_observation
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, Envelope, HlcStamp
from teamtree.broker.topics import build, parse
from teamtree.hardware.world import World
from teamtree.planners.tasktree import parse_tree

TEAM = "bench"


def table_world(n: int) -> World:
    """A simulated world with `n` objects on the table, a PR2 and one hand."""
    objects = {
        f"o{i}": {"shape": "cylinder", "dims": [0.04, 0.1],
                  "position": [0.4 + 0.05 * (i % 5), -0.2 + 0.1 * (i // 5), 0.75],
                  "goal": [0.5, 0.3, 0.75]}
        for i in range(n)
    }  # fmt: skip
    robots = {"pr2": {"profile": "pr2", "base": [0.0, 0.0, 0.0]}}
    hands = {"alice": {"rest": [1.0, 0.0, 0.9]}}
    return World.from_spec(objects, robots, hands)


def observation_body(n: int) -> dict[str, Any]:
    """A driver's observation body of a world with `n` objects and one hand."""
    obs = table_world(n).observe("pr2", 1.0)
    body = {"t": obs["t"], "robot": obs["robot"], "objects": obs["objects"]}
    if "hands" in obs:
        body["hands"] = obs["hands"]
    return body


def best_us(fn: Any, number: int, repeats: int) -> float:
    """Best time per call of `fn`, microseconds."""
    return min(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


async def measure(n: int, number: int, repeats: int) -> float:
    leaves = ", ".join(f"PLACE(object=o{i})" for i in range(n))
    robot = RobotAgent(
        "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=parse_tree(f"AND({leaves})"),
        params=RobotParams(profile="pr2", driver="pr2-driver", metric="distance"), roster=["pr2"],
    )  # fmt: skip
    await robot.setup()
    body = observation_body(n)
    env = Envelope("observation", "pr2-driver", 1, 1, HlcStamp(1, 0, "pr2-driver"), body)
    topic = parse(build(TEAM, "pr2-driver", "observation"))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            await robot._on_observation(env, topic)
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    us = asyncio.run(measure(args.objects, args.number, args.repeats))
    body = observation_body(args.objects)
    decode = best_us(lambda: decode_observation(body), args.number, args.repeats)
    print(f"observation handler, {args.objects} objects + 1 hand: {us:.1f} µs per observation")
    print(f"  of which decoding the body: {decode:.1f} µs ({decode / us:.0%})")


if __name__ == "__main__":
    main()
