"""ROS 2 driver benchmark: the goal round trip through ``ros2_driver`` against the same
through the simulated driver, in one run.

One mosquitto; a ROS 2 robot node (tests/ros2/robot_node.py, an rclpy action server in
its own process, in a ROS 2 domain of this run's own, discovery kept to this host) and
its ``ros2_driver`` process; a simulated world and its ``sim_driver`` process; and this
process as both drivers' robot agent. N behaviours are sent to each driver, one after
the other. Measured on this host's wall clock:

- command -> started: ``behaviour.execute`` sent -> ``behaviour.started`` received
  (ROS 2: the action server accepted the goal; sim: the world took the command);
- result -> finished (ROS 2 only): the robot node's own time of ``succeed()`` ->
  ``behaviour.finished`` received (the result through rclpy, the driver and MQTT);
- execute -> finished: the whole behaviour (the ROS 2 robot's goal lasts ``--goal-s``;
  the simulated PR2's PLACE is its own motion at ``time_factor`` 8).

    python benchmarks/bench_ros2.py [--behaviours 20] [--goal-s 0.1]

Needs the ros2 extra and ros-jazzy-test-msgs (CPython 3.11) and mosquitto. Prints
figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from teamtree.broker import MosquittoBroker, find_mosquitto  # noqa: E402
from tests.ros2_support import RobotNode, ros2_agents  # noqa: E402
from tests.vda5050_support import SIM_AGENTS, Watcher, team_config  # noqa: E402


class TimedWatcher(Watcher):
    """A Watcher that stamps each message with the wall time it arrived."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.arrived: dict[tuple[str, str], float] = {}  # (kind, command_id) -> time

    async def _record(self, env: Any, topic: Any) -> None:
        await super()._record(env, topic)
        body = env.body if isinstance(env.body, dict) else {}
        self.arrived.setdefault((env.kind, str(body.get("command_id"))), time.time())


def _stats(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<34} (none)"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"{name:<34} n={len(values):<3} median {statistics.median(values) * 1000:7.1f} ms"
            f"  p90 {p90 * 1000:7.1f} ms  max {ordered[-1] * 1000:7.1f} ms")  # fmt: skip


async def _run(robot: TimedWatcher, driver: str, plan: list[tuple[str, dict]], prefix: str,
               tmp: Path) -> dict[str, list[float]]:  # fmt: skip
    started, total = [], []
    sent: dict[str, float] = {}
    for i, (behaviour, params) in enumerate(plan):
        cid = f"{prefix}{i}"
        sent[cid] = time.time()
        await robot.command(driver, "behaviour.execute", command_id=cid, node=f"n{i}",
                            behaviour=behaviour, params=params)  # fmt: skip
        t0 = time.monotonic()
        while ("behaviour.finished", cid) not in robot.arrived:
            if ("behaviour.failed", cid) in robot.arrived or time.monotonic() - t0 > 60:
                sys.exit(f"{driver}: behaviour {cid} did not finish; see {tmp}")
            await asyncio.sleep(0.001)
        started.append(robot.arrived[("behaviour.started", cid)] - sent[cid])
        total.append(robot.arrived[("behaviour.finished", cid)] - sent[cid])
    return {"started": started, "total": total}


async def _online(robot: TimedWatcher, driver: str, tmp: Path) -> None:
    deadline = time.monotonic() + 90
    while not any(o["objects"] for o in robot.bodies("observation", driver)):
        if time.monotonic() > deadline:
            sys.exit(f"{driver} never showed its objects; see {tmp}")
        await asyncio.sleep(0.05)


async def bench(args: argparse.Namespace) -> None:
    if find_mosquitto() is None:
        sys.exit("mosquitto is not installed")
    domain = random.randint(1, 100)
    os.environ.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    team = f"bench-{uuid.uuid4().hex[:6]}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-ros2-"))
    targets = {"plate": (1, (1.5, 0.5)), "dock": (2, (2.0, 2.0))}
    agents = SIM_AGENTS + ros2_agents("r1", "/r1", domain, {"plate": targets["plate"]},
                                      stations={"dock": targets["dock"]})  # fmt: skip
    config = team_config(tmp / "team.toml", team, "cup", agents, tmp / "run.jsonl")
    broker = MosquittoBroker(persistence=False)
    await broker.start()
    node = RobotNode("/r1", domain, targets, tmp, {"duration_s": args.goal_s})
    procs: list[subprocess.Popen[bytes]] = []
    ros_robot = TimedWatcher("r1", team=team, endpoint=broker.endpoint)
    sim_robot = TimedWatcher("pr2", team=team, endpoint=broker.endpoint)
    try:
        async with ros_robot, sim_robot:
            node.start()
            for agent_id in ("world", "pr2-driver", "r1-driver"):
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config),
                     "--id", agent_id, "--broker", broker.endpoint.url, "--team", team,
                     "--log-level", "warning"],
                    stdout=subprocess.DEVNULL, stderr=(tmp / f"{agent_id}.log").open("wb"),
                ))  # fmt: skip
            await _online(ros_robot, "r1-driver", tmp)
            await _online(sim_robot, "pr2-driver", tmp)
            ros_plan = [("PLACE", {"object": "plate"}), ("MOVE", {"object": "dock"})]
            ros_plan = (ros_plan * args.behaviours)[: args.behaviours]
            ros = await _run(ros_robot, "r1-driver", ros_plan, "r", tmp)
            sim = await _run(
                sim_robot, "pr2-driver", [("PLACE", {"object": "cup"})] * args.behaviours, "s", tmp
            )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
        node.stop()
        await broker.close()
    done_at = [t for t, event, _ in node.own_state()["log"] if event == "done"]
    finished = sorted(
        v
        for (k, c), v in ros_robot.arrived.items()
        if k == "behaviour.finished" and c.startswith("r")
    )
    result_to_finished = [f - d for d, f in zip(done_at, finished, strict=False)]
    print(f"ROS 2 driver vs simulated driver ({args.behaviours} behaviours each, mosquitto, "
          f"Fast DDS on localhost, ROS_DOMAIN_ID {domain}, goals of {args.goal_s:g} s)")  # fmt: skip
    print(_stats("ros2: command -> goal accepted", ros["started"]))
    print(_stats("ros2: robot result -> finished", result_to_finished))
    print(_stats("ros2: execute -> finished", ros["total"]))
    print(_stats("sim:  command -> started", sim["started"]))
    print(_stats("sim:  execute -> finished", sim["total"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--behaviours", type=int, default=20)
    parser.add_argument("--goal-s", type=float, default=0.1)
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
