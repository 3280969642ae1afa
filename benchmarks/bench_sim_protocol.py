"""Cost of one request on the simulated world's ZeroMQ protocol, hand-validated (the
protocol before its requests were typed, loaded from git at ``--baseline``) against the
typed one (``sim_wire``), measured in the same run.

- world side: request bytes -> decode -> the world's answer -> reply bytes (what the
  world agent does per request, without the socket);
- client side: build and encode the request, decode (and, typed, check) the reply;
- both over a real ZeroMQ DEALER -> ROUTER pair on loopback TCP, one request at a time
  (requests per second, client and world in one thread).

Requests: ``observe`` (a driver polls it ~20 times a second; the reply carries every
object, so its cost grows with ``--objects``), ``execute`` (a repeated one: the world
answers it as a duplicate, so the figure is mostly the protocol's own cost) and
``pause`` (a small command). Prints µs per request (best of ``--repeats`` runs of
``--number``) and the ratio old / typed (> 1: typed is faster). Nothing is asserted.

    python benchmarks/bench_sim_protocol.py [--objects 10] [--number 5000] [--repeats 5]

Measured figures: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import timeit
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq
from bench_observation import table_world  # the same table, run as a script

from teamtree.hardware import sim_protocol as proto
from teamtree.hardware import sim_wire as wire
from teamtree.hardware.world import World

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "679dd44"
"""The last commit with the hand-validated protocol."""
NOW_MS = 1_700_000_000_000


def load_baseline(commit: str) -> types.ModuleType:
    """``hardware/sim_protocol.py`` as it was at `commit`, as a module."""
    source = subprocess.run(
        ["git", "show", f"{commit}:hardware/sim_protocol.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    module = types.ModuleType("sim_protocol_hand")
    exec(compile(source, f"{commit}:hardware/sim_protocol.py", "exec"), module.__dict__)
    return module


REQUESTS: dict[str, dict[str, Any]] = {
    "observe": {"robot": "pr2", "since": 0},
    "execute": {"robot": "pr2", "command_id": "c1", "behaviour": "place", "node": "n1",
                "params": {"object": "o0"}, "lease_ms": NOW_MS + 60_000,
                "token": [NOW_MS, 0, "pr2"]},
    "pause": {"robot": "pr2", "command_id": "c1"},
}  # fmt: skip


def world_side(old: types.ModuleType, w: World, op: str) -> tuple[Callable, Callable]:
    """(hand, typed): bytes in, reply bytes out, as the world agent serves them."""
    raw = old.encode(old.request(op, 7, **REQUESTS[op]))
    kwargs = {"now_ms": NOW_MS, "time_factor": 1.0}

    def hand() -> bytes:
        return old.encode(old.serve(w, old.decode(raw), 1.0, **kwargs))

    def typed() -> bytes:
        return proto.encode(proto.serve(w, proto.decode_request(raw), 1.0, **kwargs))

    return hand, typed


def client_side(old: types.ModuleType, w: World, op: str) -> tuple[Callable, Callable]:
    """(hand, typed): encode the request, decode (typed: and check) its reply."""
    reply = proto.encode(proto.answer(w, proto.encode(wire.make_request(op, 7, **REQUESTS[op])),
                                      1.0, now_ms=NOW_MS, time_factor=1.0))  # fmt: skip
    fields = REQUESTS[op]

    def hand() -> dict:
        old.encode(old.request(op, 7, **fields))
        return old.decode(reply)

    def typed() -> dict:
        wire.encode(wire.make_request(op, 7, **fields))
        decoded = wire.decode_reply(reply)
        wire.check_reply(op, decoded)
        return decoded

    return hand, typed


def round_trips_per_s(old: types.ModuleType, w: World, op: str, n: int) -> tuple[float, float]:
    """(hand, typed) requests per second of `op` over a real DEALER -> ROUTER pair on
    loopback TCP, one request at a time, client and world in this thread."""
    fields, kwargs = REQUESTS[op], {"now_ms": NOW_MS, "time_factor": 1.0}

    def hand(raw: bytes) -> bytes:
        return old.encode(old.serve(w, old.decode(raw), 1.0, **kwargs))

    def typed(raw: bytes) -> bytes:
        return proto.encode(proto.serve(w, proto.decode_request(raw), 1.0, **kwargs))

    def check(reply: bytes) -> None:
        wire.check_reply(op, wire.decode_reply(reply))

    paths = {
        "hand": (lambda: old.encode(old.request(op, 7, **fields)), hand, old.decode),
        "typed": (lambda: wire.encode(wire.make_request(op, 7, **fields)), typed, check),
    }
    ctx = zmq.Context()
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    try:
        dealer.connect(f"tcp://127.0.0.1:{router.bind_to_random_port('tcp://127.0.0.1')}")
        rates = {}
        for name, (ask, serve, read) in paths.items():
            start = time.perf_counter()
            for _ in range(n):
                dealer.send(ask())
                frames = router.recv_multipart()
                router.send_multipart([frames[0], serve(frames[-1])])
                read(dealer.recv())
            rates[name] = n / (time.perf_counter() - start)
        return rates["hand"], rates["typed"]
    finally:
        router.close(0)
        dealer.close(0)
        ctx.term()


def best_us(fn: Callable[[], Any], number: int, repeats: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10)
    parser.add_argument("--number", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", default=BASELINE, help="git commit of the old protocol")
    args = parser.parse_args()
    try:
        old = load_baseline(args.baseline)
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"cannot load the baseline from git ({exc}); run in a git checkout")
    w = table_world(args.objects)
    proto.answer(w, proto.encode(wire.make_request("execute", 1, **REQUESTS["execute"])), 1.0,
                 now_ms=NOW_MS, time_factor=1.0)  # fmt: skip
    print(f"{args.objects} objects + 1 hand; µs per request, best of {args.repeats} x "
          f"{args.number}; ratio old / typed (> 1: typed is faster)")  # fmt: skip
    print(f"{'request':<10}{'side':<8}{'old':>9}{'typed':>9}{'ratio':>8}")
    for op in REQUESTS:
        for side, make in (("world", world_side), ("client", client_side)):
            hand, typed = make(old, w, op)
            assert typed() is not None and hand() is not None
            # alternate, so both see the same machine load
            h = t = float("inf")
            for _ in range(args.repeats):
                h = min(h, best_us(hand, args.number, 1))
                t = min(t, best_us(typed, args.number, 1))
            print(f"{op:<10}{side:<8}{h:>9.2f}{t:>9.2f}{h / t:>8.2f}")
    print(f"round trips over ZeroMQ (loopback TCP, one at a time), requests/s, best of "
          f"{args.repeats} x {args.number // 5}; ratio typed / old (> 1: typed is faster)")  # fmt: skip
    print(f"{'request':<10}{'old':>9}{'typed':>9}{'ratio':>8}")
    for op in REQUESTS:
        h = t = 0.0
        for _ in range(args.repeats):
            rates = round_trips_per_s(old, w, op, args.number // 5)
            h, t = max(h, rates[0]), max(t, rates[1])
        print(f"{op:<10}{h:>9.0f}{t:>9.0f}{t / h:>8.2f}")


if __name__ == "__main__":
    main()
