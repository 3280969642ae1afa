"""VDA 5050 driver benchmark against the third-party virtual AGV (vda-5050-lib under Node).

One mosquitto, one virtual AGV, one ``vda5050_driver`` process, and this process as
its robot: N behaviours (MOVE between stations, then PLACE of a load) are run one
after the other. Measured, all on this process's clock, through the same broker:

- order round trip: the ``order`` message seen on the broker -> the first AGV
  ``state`` carrying that orderId/orderUpdateId;
- finish latency: the first AGV ``state`` showing the order done (nodes passed,
  actions FINISHED) -> the driver's ``behaviour.finished`` at the robot;
- behaviour time: ``behaviour.execute`` sent -> ``behaviour.finished`` received;
- the AGV's own state period in the same run: the gaps between its ``state`` messages
  (event-driven plus every ``--state-ms``), the yardstick both latencies are set
  against (ratio = latency / median gap).

    python benchmarks/bench_vda5050.py [--behaviours 20] [--state-ms 1000]

Needs node and ``npm ci`` in tests/vda5050. Prints figures only; nothing is asserted.
Measured figures: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from teamtree.broker import MosquittoBroker, find_mosquitto  # noqa: E402
from teamtree.drivers.vda5050 import SentOrder, assess  # noqa: E402
from tests.vda5050_support import (  # noqa: E402
    Sniffer,
    VirtualAgv,
    Watcher,
    agv_agents,
    team_config,
)


def _stats(name: str, values: list[float], period: float) -> str:
    if not values:
        return f"{name:<28} (none)"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    med = statistics.median(values)
    return (
        f"{name:<28} n={len(values):<3} median {med * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms  "
        f"max {ordered[-1] * 1000:7.1f} ms  ratio to state period {med / period:.3g}"
    )


async def bench(args: argparse.Namespace) -> None:
    if find_mosquitto() is None:
        sys.exit("mosquitto is not installed")
    team = f"bench-{uuid.uuid4().hex[:6]}"
    broker = MosquittoBroker(persistence=False)
    await broker.start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-vda5050-"))
    config = team_config(
        tmp / "team.toml",
        team,
        "pallet1",
        agv_agents("agv7", "agv7", loads={"pallet1": ("A", "B")}),
        tmp / "run.jsonl",
    )
    agv = VirtualAgv(
        "agv7",
        broker.endpoint.url,
        tmp / "agv.log",
        options={"publishStateInterval": args.state_ms, "timeLapse": 4, "tickRate": 20},
    )
    driver = None
    robot = Watcher("agv7", team=team, endpoint=broker.endpoint)
    try:
        async with Sniffer(broker.endpoint.host, broker.endpoint.port) as sniffer, robot:
            agv.start()
            driver = subprocess.Popen(
                [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config),
                 "--id", "agv7-driver", "--broker", broker.endpoint.url, "--team", team,
                 "--log-level", "warning"],
                stdout=subprocess.DEVNULL, stderr=(tmp / "driver.log").open("wb"),
            )  # fmt: skip
            deadline = time.monotonic() + 60
            while not any(o["objects"] for o in robot.bodies("observation", "agv7-driver")):
                if time.monotonic() > deadline:
                    sys.exit(f"driver never saw the AGV online; see {tmp}")
                await asyncio.sleep(0.05)
            idle_from = time.monotonic()  # the AGV idles: its state comes only periodically
            await asyncio.sleep(args.idle_s)
            idle_to = time.monotonic()
            plan = [("MOVE", {"object": s}) for s in ("A", "B", "C", "dock", "home")]
            plan = (plan * (args.behaviours // len(plan) + 1))[: args.behaviours - 1]
            plan.append(("PLACE", {"object": "pallet1"}))
            behaviour_s: list[float] = []
            finished_at: dict[str, float] = {}

            def finished(cid: str) -> bool:
                return any(
                    k == "behaviour.finished" and b.get("command_id") == cid
                    for _, k, b in robot.messages
                )

            for i, (behaviour, params) in enumerate(plan):
                cid = f"b{i}"
                t0 = time.monotonic()
                await robot.command("agv7-driver", "behaviour.execute", command_id=cid,
                                    node=f"n{i}", behaviour=behaviour, params=params)  # fmt: skip
                while not finished(cid):
                    if time.monotonic() - t0 > 30:
                        sys.exit(f"behaviour {cid} did not finish; see {tmp}")
                    await asyncio.sleep(0.002)
                finished_at[cid] = time.monotonic()
                behaviour_s.append(finished_at[cid] - t0)
            await asyncio.sleep(0.2)
    finally:
        if driver is not None:
            driver.terminate()
            driver.wait(10)
        agv.stop()
        await broker.close()

    # Pair each order with the states after it, from the sniffer's receive times.
    states = sniffer.of("state", "agv7")
    orders = sniffer.of("order", "agv7")
    round_trip, finish = [], []
    for order in orders:
        o = order.payload
        sent = _as_sent(o)
        ack = next((s for s in states if s.t >= order.t and s.payload.get("orderId") == o["orderId"]
                    and s.payload.get("orderUpdateId", -1) >= o["orderUpdateId"]), None)  # fmt: skip
        if ack is not None:
            round_trip.append(ack.t - order.t)
        done = next((s for s in states if s.t >= order.t
                     and (v := assess(sent, s.payload)) is not None and v.status == "finished"),
                    None)  # fmt: skip
        cid = f"b{orders.index(order)}"  # one order per behaviour, in order
        if done is not None and cid in finished_at:
            finish.append(finished_at[cid] - done.t)
    gaps = [b.t - a.t for a, b in itertools.pairwise(states)]
    idle = [s for s in states if idle_from <= s.t <= idle_to]
    idle_gaps = [b.t - a.t for a, b in itertools.pairwise(idle)]
    period = statistics.median(idle_gaps) if idle_gaps else args.state_ms / 1000
    updates = sum(1 for o in orders if o.payload["orderUpdateId"] > 0)
    print(f"VDA 5050 driver vs vda-5050-lib virtual AGV (mosquitto, {args.behaviours} behaviours, "
          f"{len(orders)} orders of which {updates} order updates, periodic state every "
          f"{args.state_ms} ms, AGV time lapse x4)")  # fmt: skip
    print(f"AGV state period measured while idle ({len(idle_gaps)} gaps in {args.idle_s:g} s): "
          f"median {period * 1000:.1f} ms; while working the AGV also sends a state on each "
          f"event: {len(states)} states, median gap {statistics.median(gaps) * 1000:.1f} ms")  # fmt: skip
    print(_stats("order round trip", round_trip, period))
    print(_stats("finish latency (state->done)", finish, period))
    print(_stats("behaviour (execute->finished)", behaviour_s, period))
    failures = sniffer.failures()
    print(f"schema-validated messages: {sniffer.counts()}; failures: {len(failures)}")


def _as_sent(order: dict):
    """A SentOrder for a sniffed order body, to assess states against it."""
    nodes = tuple((n["nodeId"], n["sequenceId"]) for n in order["nodes"][1:])
    edges = tuple((e["edgeId"], e["sequenceId"]) for e in order["edges"])
    actions = tuple((a["actionId"], a["actionType"]) for n in order["nodes"] for a in n["actions"])
    return SentOrder(order["orderId"], order["orderUpdateId"], nodes, edges, actions, (), order)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--behaviours", type=int, default=20)
    parser.add_argument("--state-ms", type=int, default=1000, help="AGV's periodic state (ms)")
    parser.add_argument("--idle-s", type=float, default=4.0, help="idle time to measure it")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
