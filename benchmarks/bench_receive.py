"""Receiving: CPU per message a Connection spends reading QoS 0 and QoS 1 messages.

One mosquitto. For each side, a Connection subscribes, and a publisher in another
process (paho, its own CPU not counted) sends n messages of 200 bytes as fast as it
can; the receiving process's CPU time from the first message to the last, over n, is
the figure. Sides, alternating over ``--rounds``:

- ``frames``: FastClient splits what each ``recv`` brought into MQTT frames itself and
  takes PUBLISH and PUBACK packets directly (``fast_client._read_frames``, the default
  over plain TCP on MQTT 3.1.1);
- ``paho``: the same client reading through paho's packet reader.

Prints microseconds of CPU per message, each side's median, and frames / paho.

    python benchmarks/bench_receive.py [--messages 20000] [--rounds 3] [--qos 0 1]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time

import structlog

from teamtree.broker import Connection, Endpoint, Incoming, MosquittoBroker
from teamtree.broker.fast_client import FastClient

TOPIC = "bench/receive"

PUBLISHER = """
import sys, paho.mqtt.client as mqtt
host, port, n, qos, topic = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench-receive-pub")
c.max_inflight_messages_set(1000)
c.max_queued_messages_set(0)
c.connect(host, port)
c.loop_start()
infos = [c.publish(topic, b"x" * 200, qos=qos) for _ in range(n)]
for info in infos:
    info.wait_for_publish(60)
c.disconnect()
c.loop_stop()
"""


async def receive(endpoint: Endpoint, n: int, qos: int, *, frames: bool) -> float:
    """CPU microseconds per message this process spent receiving `n` messages."""
    got = 0
    first = last = 0.0
    done = asyncio.Event()

    async def on_message(_message: Incoming) -> None:
        nonlocal got, first, last
        got += 1
        if got == 1:
            first = time.process_time()
        if got == n:
            last = time.process_time()
            done.set()

    original = FastClient.__aenter__

    async def enter(self: FastClient) -> FastClient:
        await original(self)
        self._framing = self._framing and frames
        return self

    FastClient.__aenter__ = enter  # type: ignore[method-assign]
    conn = Connection(endpoint, client_id="bench-receive", on_message=on_message)
    await conn.subscribe(TOPIC, qos=qos)
    task = asyncio.create_task(conn.run())
    try:
        await asyncio.wait_for(conn.connected.wait(), 10)
        pub = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            PUBLISHER,
            endpoint.host,
            str(endpoint.port),
            str(n),
            str(qos),
            TOPIC,
        )
        await asyncio.wait_for(done.wait(), 120)
        await pub.wait()
    finally:
        FastClient.__aenter__ = original  # type: ignore[method-assign]
        await conn.close()
        task.cancel()
    return (last - first) / max(1, n - 1) * 1e6


async def main(args: argparse.Namespace) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    broker = MosquittoBroker(persistence=False)
    endpoint = await broker.start()
    try:
        print(f"{'qos':>3} {'side':>6} {'cpu us/msg (each round)':>34} {'median':>7}")
        for qos in args.qos:
            figures: dict[str, list[float]] = {"frames": [], "paho": []}
            for _ in range(args.rounds):
                for side in ("paho", "frames"):
                    us = await receive(endpoint, args.messages, qos, frames=side == "frames")
                    figures[side].append(us)
            for side, values in figures.items():
                each = " ".join(f"{v:6.1f}" for v in values)
                print(f"{qos:>3} {side:>6} {each:>34} {statistics.median(values):7.1f}")
            ratio = statistics.median(figures["frames"]) / statistics.median(figures["paho"])
            print(f"{qos:>3} frames / paho: {ratio:.2f}x")
    finally:
        await broker.stop()


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--qos", type=int, nargs="+", default=[0, 1], choices=[0, 1])
    args = parser.parse_args()
    if args.messages < 2 or args.rounds < 1:
        parser.error("--messages must be at least 2 and --rounds at least 1")
    asyncio.run(main(args))


if __name__ == "__main__":
    cli()
