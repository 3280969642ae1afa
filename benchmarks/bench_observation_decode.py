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

Measured (load average 8-9 on 2 cores, best of 7 x 3000), µs unpack / convert / typed:
10 objects 18.7 / 5.9 / 7.7 (ratio 3.21), 40 objects 86.9 / 25.1 / 45.4 (2.47); an
earlier run at the same load 30.5 / 19.9 / 17.0 and 131.5 / 65.0 / 86.1. So the typed
handler pays the envelope's unpack, as the hand-read one did, and the convert on top
(about the gap ``bench_observation`` shows); a body decoded from its bytes straight
into the Struct would cost less than the unpack alone. That needs the receive path to
keep a body's bytes until its handler decodes it (the envelope codec and the agent's
dispatch read every body as plain maps today), which is not done.
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
