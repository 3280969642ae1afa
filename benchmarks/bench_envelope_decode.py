"""Envelope decode (``broker.envelope.decode``), three ways in the same run: the header
checked field by field after msgpack-python's ``unpackb``, and after msgspec's untyped
decode (``_decode_checked``, the fallback), and msgspec's typed read into ``_Wire``
whose constraints are the header rules (``decode``).

Every robot decodes every peer's claims, snapshots and potentials, so this decode is
on a big team's hot path. Messages: a claim, a snapshot of a 500-leaf tree (done list,
potentials), an observation of 40 objects.

    python benchmarks/bench_envelope_decode.py [--number 2000] [--repeats 5]

Prints figures only (µs per decode, best of the repeats; checks / typed, > 1: the
typed read is faster); nothing is asserted but that both give the same envelope.
Measured figures: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import random
import timeit
from typing import Any

import msgpack

from teamtree.broker import envelope as env_mod


def _payload(kind: str, body: Any) -> bytes:
    wire = {"v": 1, "kind": kind, "sender": "r3", "hid": 123, "ts": 1795735764022,
            "hlc": [1795735764022, 3, "r3"], "body": body, "sid": "abcd1234"}  # fmt: skip
    return msgpack.packb(wire, use_bin_type=True)


def messages() -> dict[str, bytes]:
    rng = random.Random(7)
    leaves = [f"root/{i}/{j}" for i in range(50) for j in range(10)]
    snapshot = {"agent": "r3", "working": leaves[31], "mission": "m1",
                "done": [leaf for leaf in leaves if rng.random() < 0.4],
                "potentials": {leaf: rng.random() for leaf in leaves}}  # fmt: skip
    claim = {"node": leaves[31], "potential": 0.53, "stamp": [1795735764022, 3, "r3"],
             "mission": "m1"}  # fmt: skip
    objects = {f"o{k}": {"shape": "box", "dims": [0.05, 0.05, 0.1],
                         "position": [rng.random(), rng.random(), 0.8], "yaw": 0.0,
                         "at_goal": False, "held_by": None, "goal": [0.1, 0.2, 0.8]}
               for k in range(40)}  # fmt: skip
    observation = {"robot": {"arm": [0.1, 0.2, 0.9], "busy": False}, "objects": objects,
                   "full": True, "mission": "m1"}  # fmt: skip
    return {
        "node.claim": _payload("node.claim", claim),
        "node.snapshot (500 leaves)": _payload("node.snapshot", snapshot),
        "world.observation (40 objects)": _payload("world.observation", observation),
    }


class _MsgpackPython:
    """The decoder before: msgpack-python, strict map keys, no extensions."""

    @staticmethod
    def decode(data: Any) -> Any:
        return msgpack.unpackb(bytes(data), raw=False, ext_hook=env_mod._no_ext)


def best_us(decode: Any, data: bytes, number: int, repeats: int) -> float:
    times = timeit.repeat(lambda: decode(data), number=number, repeat=repeats)
    return min(times) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    now = env_mod._DECODER
    checked = lambda data: env_mod._decode_checked(data, None)  # noqa: E731
    print(f"{'message':<32} {'bytes':>6} {'msgpack µs':>10} {'checks µs':>9} {'typed µs':>8}"
          f" {'checks / typed':>14}")  # fmt: skip
    for name, data in messages().items():
        env_mod._DECODER = _MsgpackPython()
        try:
            before = best_us(checked, data, args.number, args.repeats)
        finally:
            env_mod._DECODER = now
        checks = best_us(checked, data, args.number, args.repeats)
        typed = best_us(env_mod.decode, data, args.number, args.repeats)
        assert env_mod.decode(data) == checked(data)
        assert env_mod.decode(data).body == msgpack.unpackb(data, raw=False)["body"]
        print(f"{name:<32} {len(data):>6} {before:>10.2f} {checks:>9.2f} {typed:>8.2f}"
              f" {checks / typed:>13.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
