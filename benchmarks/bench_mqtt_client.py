"""FastClient against the plain aiomqtt fallback in one run: round trip, publish and receive CPU.

One mosquitto. In each round, for each client (``--clients``; the choice is
``TEAMTREE_MQTT_CLIENT``, set in this process and inherited by the processes it
starts, ``broker/client_choice.py``):

- round trip: a runtime request/reply (``echo.ping``, QoS 1) between an agent in this
  process and an echo agent process, both on that client, p50 and p99 over
  ``--requests`` (``bench_runtime.runtime_round_trip``); a bare aiomqtt pair in two
  processes is measured once per round for reference;
- publish CPU: a ``Connection`` publishes ``--publishes`` QoS 1 messages of 200 bytes
  pipelined and waits for every PUBACK: this process's CPU microseconds per message
  (``bench_publish.burst_connection``);
- receive CPU: a ``Connection`` receives ``--messages`` QoS 1 messages of 200 bytes
  sent by a paho publisher in another process: CPU microseconds per message from the
  first to the last (``bench_receive.receive``).

The clients alternate within each round. Prints every round, the medians, and
plain / fast.

    python benchmarks/bench_mqtt_client.py [--clients fast plain] [--rounds 3]
        [--requests 300] [--publishes 3000] [--messages 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import structlog
from bench_publish import burst_connection
from bench_receive import receive
from bench_runtime import bare_round_trip, percentile, runtime_round_trip

from teamtree.broker import Endpoint, MosquittoBroker
from teamtree.broker.client_choice import MQTT_CLIENT_ENV

FIGURES = ("rtt p50 ms", "rtt p99 ms", "publish us/msg", "receive us/msg")


async def publish_cpu(endpoint: Endpoint, n: int) -> float:
    """CPU microseconds per message of a pipelined burst of `n` QoS 1 publishes."""
    cpu = time.process_time()
    await burst_connection(endpoint, n)
    return (time.process_time() - cpu) / n * 1e6


async def one_client(
    client: str, endpoint: Endpoint, args: argparse.Namespace, workdir: Path
) -> dict[str, float]:
    os.environ[MQTT_CLIENT_ENV] = client
    team = f"bench{uuid.uuid4().hex[:6]}"
    rtt = await runtime_round_trip(endpoint, team, args.requests, workdir)
    return {
        "rtt p50 ms": percentile(rtt, 0.5) * 1e3,
        "rtt p99 ms": percentile(rtt, 0.99) * 1e3,
        "publish us/msg": await publish_cpu(endpoint, args.publishes),
        "receive us/msg": await receive(endpoint, args.messages, 1, frames=True),
    }


async def main(args: argparse.Namespace) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    broker = MosquittoBroker(persistence=False)
    endpoint = await broker.start()
    rows: dict[str, dict[str, list[float]]] = {c: {f: [] for f in FIGURES} for c in args.clients}
    bare: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for number in range(1, args.rounds + 1):
                team = f"bench{uuid.uuid4().hex[:6]}"
                samples = await bare_round_trip(endpoint, team, args.requests)
                bare.append(percentile(samples, 0.5) * 1e3)
                for client in args.clients:
                    figures = await one_client(client, endpoint, args, Path(tmp))
                    for name, value in figures.items():
                        rows[client][name].append(value)
                    each = "  ".join(f"{k} {v:.2f}" for k, v in figures.items())
                    print(f"round {number} {client:>5}: {each}", flush=True)
    finally:
        os.environ.pop(MQTT_CLIENT_ENV, None)
        await broker.stop()
    print()
    print(f"medians over {args.rounds} round(s); bare aiomqtt pair rtt p50 "
          f"{statistics.median(bare):.2f} ms")  # fmt: skip
    print(f"{'client':>6} " + " ".join(f"{f:>15}" for f in FIGURES))
    medians = {c: {f: statistics.median(v) for f, v in rows[c].items()} for c in args.clients}
    for client in args.clients:
        print(f"{client:>6} " + " ".join(f"{medians[client][f]:>15.2f}" for f in FIGURES))
    if {"fast", "plain"} <= set(args.clients):
        ratios = " ".join(f"{medians['plain'][f] / medians['fast'][f]:>14.2f}x" for f in FIGURES)
        print(f"{'plain/fast':>6} {ratios}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--clients", nargs="+", choices=["fast", "plain"], default=["fast", "plain"]
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--publishes", type=int, default=3000)
    parser.add_argument("--messages", type=int, default=10000)
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
