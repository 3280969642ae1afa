"""QoS 1 publish bursts: aiomqtt's client, teamtree's FastClient and Connection, paho.

One mosquitto; for each burst size n, each client publishes n QoS 1 messages of 200
bytes as fast as it can (aiomqtt and FastClient: n concurrent ``publish`` calls, as a
pipelining agent makes them; Connection: ``publish(wait=False)`` then every PUBACK;
paho: ``publish`` in a loop with its network thread running) and waits for every
acknowledgement. Prints wall seconds and CPU microseconds per message, and each
client's ratio to paho in the same run. aiomqtt scans all pending publishes on every
publish (``_pending_call``), so its cost per message grows with n; FastClient does not.

    python benchmarks/bench_publish.py [--sizes 1000 3000 10000] [--aiomqtt-max 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
import threading
import time
from typing import Any

import aiomqtt
import paho.mqtt.client as paho

from teamtree.broker import Connection, Endpoint, Incoming, MosquittoBroker, Outgoing
from teamtree.broker.fast_client import FastClient

PAYLOAD = b"x" * 200


async def burst_aiomqtt(cls: type[aiomqtt.Client], endpoint: Endpoint, n: int) -> float:
    async with cls(endpoint.host, endpoint.port, max_inflight_messages=200, timeout=600) as c:
        start = time.perf_counter()
        await asyncio.gather(*(c.publish("bench/p", PAYLOAD, qos=1) for _ in range(n)))
        return time.perf_counter() - start


async def burst_connection(endpoint: Endpoint, n: int) -> float:
    async def ignore(message: Incoming) -> None:
        pass

    conn = Connection(endpoint, client_id="bench-conn", on_message=ignore, publish_timeout=600)
    task = asyncio.create_task(conn.run())
    await asyncio.wait_for(conn.connected.wait(), 10)
    start = time.perf_counter()
    for _ in range(n):
        await conn.publish(Outgoing("bench/p", PAYLOAD, 1), wait=False)
    while conn.inflight:
        await asyncio.sleep(0.001)
    elapsed = time.perf_counter() - start
    await conn.close()
    await task
    return elapsed


def burst_paho(endpoint: Endpoint, n: int) -> float:
    done = threading.Event()
    acked = 0

    def on_publish(*_: Any) -> None:
        nonlocal acked
        acked += 1
        if acked >= n:
            done.set()

    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="bench-paho")
    client.max_inflight_messages_set(200)
    client.max_queued_messages_set(0)
    client.on_publish = on_publish
    client.connect(endpoint.host, endpoint.port)
    client.loop_start()
    start = time.perf_counter()
    for _ in range(n):
        client.publish("bench/p", PAYLOAD, qos=1)
    done.wait(600)
    elapsed = time.perf_counter() - start
    client.disconnect()
    client.loop_stop()
    return elapsed


async def measure(name: str, run: Any, n: int) -> dict[str, Any]:
    cpu = time.process_time()
    wall = run()
    if inspect.isawaitable(wall):
        wall = await wall
    cpu = time.process_time() - cpu
    return {"client": name, "n": n, "wall_s": wall, "cpu_us": cpu / n * 1e6}


async def main_async(args: argparse.Namespace) -> None:
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt warns per pending publish
    broker = MosquittoBroker(persistence=False)
    await broker.start()
    ep = broker.endpoint
    rows = []
    try:
        for n in args.sizes:
            runs: list[tuple[str, Any]] = [
                ("paho", lambda n=n: burst_paho(ep, n)),
                ("FastClient", lambda n=n: burst_aiomqtt(FastClient, ep, n)),
                ("Connection", lambda n=n: burst_connection(ep, n)),
            ]
            if n <= args.aiomqtt_max:
                runs.append(("aiomqtt", lambda n=n: burst_aiomqtt(aiomqtt.Client, ep, n)))
            for name, run in runs:
                row = await measure(name, run, n)
                rows.append(row)
                print(f"  {name} x {n}: {row['wall_s']:.2f} s", flush=True)
    finally:
        await broker.close()
    print()
    print("QoS 1 bursts over mosquitto (200-byte payloads)")
    print(f"{'client':>11} {'n':>6} {'wall s':>8} {'cpu us/msg':>11} {'cpu vs paho':>12}")
    paho_cpu = {r["n"]: r["cpu_us"] for r in rows if r["client"] == "paho"}
    for r in rows:
        ratio = r["cpu_us"] / paho_cpu[r["n"]]
        print(f"{r['client']:>11} {r['n']:>6} {r['wall_s']:>8.2f} {r['cpu_us']:>11.0f} "
              f"{ratio:>11.1f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument(
        "--aiomqtt-max", type=int, default=3000,
        help="largest burst to give plain aiomqtt (it grows quadratically)",
    )  # fmt: skip
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
