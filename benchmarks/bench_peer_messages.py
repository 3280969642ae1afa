"""Messages per behaviour of the peer rule as the team grows, in the network simulation.

The simulation (``planners/tasktree/peer_sim.py``) runs the robots' own
``TaskController`` over a modelled broker: no sockets, no clock, the same counts for
the same seed on any machine, busy or not. It answers how the protocol's traffic grows
with the team; how long messages take over a real broker is
``bench_tasktree.py``'s question.

For each team size, a flat ``AND`` of ``THEN(a, b)`` pairs (as ``bench_tasktree.py``
runs) is simulated under each variant, side by side on the same seeds:

- ``all``: every claim asks every online peer (seed 000's rule), with contention
  avoidance, the baseline: its messages per behaviour grow linearly with the team,
  (robots - 1) replies a claim;
- ``interest pN``: declared interest with ``interest_prefetch`` N (the robots' default
  is 4), acknowledgements held ``--ack-hold`` seconds and sent one by one.

Printed per size and variant: messages published per behaviour (median of the seeds,
min-max), split by message type, the ratio to ``all`` in the same runs, and the growth
from the size before it over the growth of the team (1.0: linear in robots; above:
faster). Every run is checked (``check_invariants``): a run that breaks a guarantee or
does not complete is reported and left out of the figures.

The agents send their acknowledgements of the team's first declarations as one team
message per robot (``node.interest_acks``, while some online peer has not declared
yet); the simulation sends each one by one. So each interest row also gives ``start
batched``: the count with every acknowledgement of a robot's first declaration folded
into one message per acknowledging robot, a bound below the agents' count as the raw
one is a bound above it (an acknowledgement of a first declaration made after every
peer declared goes alone in the agents too).

    python benchmarks/bench_peer_messages.py                       # 2 to 32 robots x 50
    python benchmarks/bench_peer_messages.py --robots 8 16 32 64 --seeds 3
    python benchmarks/bench_peer_messages.py --prefetch 1 4 8 24 --robots 16 32
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from typing import Any

from teamtree.planners.tasktree import parse_tree, peer_sim
from teamtree.planners.tasktree.interest import Interest, InterestAck
from teamtree.planners.tasktree.peer_sim import NetworkModel, SimConfig, check_invariants


class _StartCounts(peer_sim._Sim):
    """The simulation, also counting the acknowledgements of each robot's first
    declaration and the robots that sent them."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.first: dict[str, tuple[int, int, str]] = {}
        self.first_acks = 0
        self.first_ackers: set[str] = set()

    def publish(self, sender: str, msg: Any, to: str | None = None) -> None:
        if isinstance(msg, Interest):
            self.first.setdefault(msg.agent, msg.stamp)
        elif isinstance(msg, InterestAck) and self.first.get(msg.declarer) == msg.stamp:
            self.first_acks += 1
            self.first_ackers.add(sender)
        super().publish(sender, msg, to)


def tree_text(behaviours: int) -> str:
    pairs = max(1, behaviours // 2)
    return "AND(" + ", ".join(f"THEN(a{i}, b{i})" for i in range(pairs)) + ")"


def variants(prefetches: list[int]) -> list[tuple[str, dict[str, Any]]]:
    """The rules compared: the baseline first."""
    out: list[tuple[str, dict[str, Any]]] = [("all", {"declared_interest": False})]
    for p in prefetches:
        out.append((f"interest p{p}", {"declared_interest": True, "interest_prefetch": p}))
    return out


def one(
    robots: int, behaviours: int, seed: int, rule: dict[str, Any], args: argparse.Namespace
) -> tuple[float, float, Counter[str], str]:
    """Messages per behaviour (as the simulation sends them, and start batched), per
    type, and what went wrong ("" for a good run)."""
    tree = parse_tree(tree_text(behaviours))
    cfg = SimConfig(
        robots=tuple(f"r{i}" for i in range(robots)),
        seed=seed,
        network=NetworkModel(max_delay=args.max_delay, reorder=False),
        avoid_contention=True,
        ack_hold=args.ack_hold,
        duration=(0.2, 1.0),
        time_limit=3600.0,
        **rule,
    )
    sim = _StartCounts(tree, cfg)
    res = sim.run()
    errors = check_invariants(tree, res)
    why = "; ".join(errors) if errors else ("" if res.completed else "did not complete")
    leaves = len(tree.leaves)
    batched = res.published - sim.first_acks + len(sim.first_ackers)
    return res.published / leaves, batched / leaves, Counter(res.kinds), why


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--robots", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--behaviours", type=int, default=50)
    parser.add_argument("--prefetch", type=int, nargs="+", default=[4])
    parser.add_argument("--seeds", type=int, default=3, help="runs per size and variant")
    parser.add_argument("--ack-hold", type=float, default=0.1, help="seconds (0: at once)")
    parser.add_argument(
        "--max-delay", type=float, default=0.002, help="seconds a hop takes at most"
    )
    args = parser.parse_args()
    if min(args.robots) < 1 or args.behaviours < 2 or args.seeds < 1:
        parser.error("--robots 1 or more each, --behaviours 2 or more, --seeds 1 or more")
    if min(args.prefetch) < 0 or args.ack_hold < 0 or args.max_delay <= 0:
        parser.error("--prefetch 0 or more, --ack-hold 0 or more, --max-delay above 0")
    rules = variants(args.prefetch)
    table: dict[tuple[int, str], float] = {}
    print(f"{tree_text(args.behaviours)[:40]}... ({args.behaviours} behaviours), "
          f"seeds 0-{args.seeds - 1}, ack hold {args.ack_hold:g} s", flush=True)  # fmt: skip
    for robots in sorted(args.robots):
        for name, rule in rules:
            started = time.monotonic()
            per: list[float] = []
            batched: list[float] = []
            kinds: Counter[str] = Counter()
            for seed in range(args.seeds):
                value, start, counts, why = one(robots, args.behaviours, seed, rule, args)
                if why:
                    print(f"  {robots} robots, {name}, seed {seed}: NOT OK: {why}", flush=True)
                    continue
                per.append(value)
                batched.append(start)
                kinds += counts
            if not per:
                continue
            table[(robots, name)] = median = statistics.median(per)
            if name != "all":
                table[(robots, f"{name} batched")] = statistics.median(batched)
            n = len(per) * args.behaviours
            split = ", ".join(f"{k} {c / n:.1f}" for k, c in kinds.most_common())
            base = table.get((robots, "all"))
            ratio = f"  x{median / base:.2f} of all" if base and name != "all" else ""
            smaller = [r for r in sorted(args.robots) if r < robots and (r, name) in table]
            growth = ""
            if smaller:
                prev = smaller[-1]
                grew = (median / table[(prev, name)]) / (robots / prev)
                growth = f"  growth from {prev}: {grew:.2f} of linear"
            print(f"{robots:4d} robots  {name:<13} msgs/behav {median:7.1f} "
                  f"({min(per):.1f}-{max(per):.1f}){ratio}{growth}  "
                  f"[{time.monotonic() - started:.0f} s]", flush=True)  # fmt: skip
            if name != "all":
                key = f"{name} batched"
                growth = ""
                if smaller and (smaller[-1], key) in table:
                    prev = smaller[-1]
                    grew = (table[(robots, key)] / table[(prev, key)]) / (robots / prev)
                    growth = f"  growth from {prev}: {grew:.2f} of linear"
                ratio = f"  x{table[(robots, key)] / base:.2f} of all" if base else ""
                print(f"{'':4} {'':7} {'start batched':<13} msgs/behav "
                      f"{table[(robots, key)]:7.1f}{ratio}{growth}", flush=True)  # fmt: skip
            print(f"      {split}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
