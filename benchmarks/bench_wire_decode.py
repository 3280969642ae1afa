"""Decode speed of two hot messages, hand-parsed (the codec before typed bodies) against
the msgspec Structs that replaced it, measured in the same run.

- ``node.claim``: every robot decodes every peer's claim (seed 000's peer rule);
- ``favor.request``: every robot in range decodes every favor request (seed 002),
  the largest body (two capability matrices).

Each row: microseconds per decode (best of ``--repeats`` runs of ``--number`` decodes)
from the plain map the envelope carries, and from msgpack bytes (unpack + decode for
the hand codec; msgspec's typed msgpack decoder for the Struct), and the ratio
hand / typed (> 1: typed is faster).

    python benchmarks/bench_wire_decode.py [--number 20000] [--repeats 5]

Prints figures only; nothing is asserted. Measured figures: docs/results/2026-11-codecs-and-transport.md.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

import msgpack
import msgspec

from teamtree.agents.capability.favor_wire import (
    RequestWire,
    request_from_typed,
    request_from_wire,
    request_to_wire,
)
from teamtree.agents.treeprotocol.peer_wire import ClaimWire, claim_from_wire, claim_to_wire
from teamtree.hardware import StrengthCapability, make_robot
from teamtree.planners.capability import JOBS, FavorQuery, FavorRequest, Method, PassiveMatcher
from teamtree.planners.tasktree import Claim

# -- the hand codec as it was before typed bodies (the baseline) ----------------------------


def hand_stamp(value: Any) -> tuple[int, int, str]:
    if (
        isinstance(value, list | tuple)
        and len(value) == 3
        and isinstance(value[0], int)
        and isinstance(value[1], int)
        and isinstance(value[2], str)
    ):
        return (value[0], value[1], value[2])
    raise ValueError(f"not a stamp: {value!r}")


def hand_claim(body: Any) -> Claim:
    return Claim(
        claim_id=str(body["claim_id"]),
        node=str(body["node"]),
        claimant=str(body["claimant"]),
        stamp=hand_stamp(body["stamp"]),
        potential=float(body.get("potential", 0.0)),
        round=int(body.get("round", 0)),
    )


def hand_capability(data: Any) -> StrengthCapability | None:
    if data is None:
        return None
    return StrengthCapability.from_matrix(data["matrix"], int(data["n_levels"]))


def hand_query(data: Any) -> FavorQuery:
    return FavorQuery(
        Method(int(data["method"])),
        str(data["job"]),
        bool(data["agent_capable"]),
        hand_capability(data.get("c_job")),
        hand_capability(data.get("c_req")),
    )


def hand_request(body: Any, now: float, now_ms: int) -> tuple[FavorRequest, list[str]]:
    deadline = now + (int(body["deadline_ms"]) - now_ms) / 1000.0
    req = FavorRequest(
        str(body["request_id"]),
        str(body["requester"]),
        hand_query(body["query"]),
        int(body["ttl"]),
        deadline,
        tuple(str(h) for h in body["hops"]),
    )
    return req, [str(t) for t in body["targets"]]


# -- typed decoding straight from msgpack bytes ---------------------------------------------

_CLAIM_DECODER = msgspec.msgpack.Decoder(ClaimWire)
_REQUEST_DECODER = msgspec.msgpack.Decoder(RequestWire)


def typed_claim_bytes(raw: bytes) -> Claim:
    w = _CLAIM_DECODER.decode(raw)
    return Claim(w.claim_id, w.node, w.claimant, w.stamp, w.potential, w.round)


def typed_request_bytes(raw: bytes) -> tuple[FavorRequest, list[str]]:
    return request_from_typed(_REQUEST_DECODER.decode(raw), 0.0, 0)


def best_us(fn: Callable[[], Any], number: int, repeats: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    claim = claim_to_wire(Claim("pr2@1#1", "root/1/0", "pr2", (1_700_000_000_000, 3, "pr2"), 0.4))
    query = PassiveMatcher().query(make_robot("M", "m1"), JOBS["job3b"])
    request = request_to_wire(
        FavorRequest("m1:j1#1", "m1", query, 2, 10.0, ("m1",)), ["o1", "b1", "s2"], 5_000
    )
    assert hand_claim(claim) == claim_from_wire(claim)
    assert hand_request(request, 0.0, 0) == request_from_wire(request, 0.0, 0)
    raw_claim, raw_request = msgpack.packb(claim), msgpack.packb(request)
    assert msgspec.msgpack.encode(msgspec.convert(claim, ClaimWire)) == raw_claim

    n, r = args.number, args.repeats
    rows = [
        (
            "node.claim",
            "map",
            best_us(lambda: hand_claim(claim), n, r),
            best_us(lambda: claim_from_wire(claim), n, r),
        ),
        (
            "node.claim",
            "bytes",
            best_us(lambda: hand_claim(msgpack.unpackb(raw_claim)), n, r),
            best_us(lambda: typed_claim_bytes(raw_claim), n, r),
        ),
        (
            "favor.request",
            "map",
            best_us(lambda: hand_request(request, 0.0, 0), n // 4, r),
            best_us(lambda: request_from_wire(request, 0.0, 0), n // 4, r),
        ),
        (
            "favor.request",
            "bytes",
            best_us(lambda: hand_request(msgpack.unpackb(raw_request), 0.0, 0), n // 4, r),
            best_us(lambda: typed_request_bytes(raw_request), n // 4, r),
        ),
    ]
    print(f"{'message':<15} {'from':<6} {'hand µs':>9} {'typed µs':>9} {'hand/typed':>11}")
    for kind, source, hand, typed in rows:
        print(f"{kind:<15} {source:<6} {hand:>9.2f} {typed:>9.2f} {hand / typed:>11.2f}")
    print(f"(bytes: claim {len(raw_claim)} B, favor.request {len(raw_request)} B; best of {r})")


if __name__ == "__main__":
    main()
