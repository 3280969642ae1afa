"""Where the typed observation handler's extra cost comes from: the ways of turning a
driver's ``observation`` body (as msgpack bytes) into its declared ``ObservationBody``.

- ``unpack``: bytes -> plain maps, as the envelope codec does for every message
  (``msgpack.unpackb``); the hand-read handler stopped here and read the maps;
- ``convert``: plain maps -> Structs (``msgspec.convert``), what the typed handler does
  after the envelope codec (``decode_observation``);
- ``typed``: bytes -> Structs in one step (a ``msgspec.msgpack.Decoder``), what a
  receive path that kept the body's bytes for its declared type could do.

Prints µs per body (best of ``--repeats`` runs of ``--number``) and the ratio
(unpack + convert) / typed. Nothing is asserted.

    python benchmarks/bench_observation_decode.py [--objects 10 40] [--number 3000]

Measured figures, and what they say about the receive path: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

import msgpack
import msgspec
from bench_observation import observation_body  # the same body, run as a script

from teamtree.agents.runtime.observation_wire import ObservationBody


def best_us(fn: Callable[[], Any], number: int, repeats: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--number", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    typed_decoder = msgspec.msgpack.Decoder(ObservationBody)
    print(f"µs per observation body, best of {args.repeats} x {args.number}")
    print(f"{'objects':>8}{'bytes':>7}{'unpack':>9}{'convert':>9}{'typed':>8}{'ratio':>8}")
    for n in args.objects:
        body = observation_body(n)
        raw = msgpack.packb(body, use_bin_type=True)
        unpack = best_us(lambda raw=raw: msgpack.unpackb(raw), args.number, args.repeats)
        convert = best_us(
            lambda body=body: msgspec.convert(body, ObservationBody, strict=True),
            args.number,
            args.repeats,
        )
        typed = best_us(lambda raw=raw: typed_decoder.decode(raw), args.number, args.repeats)
        ratio = (unpack + convert) / typed
        print(f"{n:>8}{len(raw):>7}{unpack:>9.1f}{convert:>9.1f}{typed:>8.1f}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
