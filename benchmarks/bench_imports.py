"""Import cost of the planners and of an agent kind, in this checkout and in another
(e.g. an older commit), measured in the same run.

Each figure is the median over ``--runs`` fresh interpreters of the wall time to import
one module (``time.perf_counter`` around ``importlib.import_module``, after the
interpreter has started), and the number of modules it loaded. Every checkout is
imported the same way: a temporary directory holds a ``teamtree`` package whose
folders are symlinks to the checkout's ``agents``, ``broker``, ``drivers``, ``hardware``
and ``planners``, put first on ``PYTHONPATH`` (so it wins over an editable install of
either), with ``-s``. Bytecode is cached for both after two warm-up rounds.

    python benchmarks/bench_imports.py --other /path/to/old/checkout [--runs 9]

To get an older checkout without touching the repository's worktrees:
``mkdir /tmp/before && git archive COMMIT | tar -x -C /tmp/before``. A module name
may differ between checkouts (e.g. ``agents.robot`` in an old one,
``agents.tasktree.robot`` now): pass ``OLD=NEW`` pairs with ``--module``. Prints
figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("agents", "broker", "drivers", "hardware", "planners")
MODULES = [
    "teamtree.broker=teamtree.broker",
    "teamtree.planners.tasktree=teamtree.planners.tasktree",
    "teamtree.planners.allocation=teamtree.planners.allocation",
    "teamtree.planners.capability=teamtree.planners.capability",
    "teamtree.planners.ltl=teamtree.planners.ltl",
    "teamtree.planners.multitask=teamtree.planners.multitask",
    "teamtree.agents.robot=teamtree.agents.tasktree.robot",
    "teamtree.drivers.sim_driver=teamtree.drivers.sim_driver",
]
PROBE = """
import importlib, json, sys, time
before = set(sys.modules)
t = time.perf_counter()
importlib.import_module(sys.argv[1])
dt = time.perf_counter() - t
heavy = [m for m in ("asyncio", "aiomqtt", "paho", "zmq", "ssl", "structlog") if m in sys.modules]
print(json.dumps({"ms": dt * 1000, "modules": len(set(sys.modules) - before), "heavy": heavy}))
"""


def shadow(checkout: Path, into: Path) -> Path:
    """A directory whose ``teamtree`` package is `checkout`'s folders."""
    pkg = into / "teamtree"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for folder in FOLDERS:
        (pkg / folder).symlink_to(checkout.resolve() / folder)
    return into


def measure(path: Path, module: str, runs: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(path)
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-s", "-c", PROBE, module],
            env=env, capture_output=True, text=True, check=True, cwd=path,
        )  # fmt: skip
        samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "ms": statistics.median(s["ms"] for s in samples),
        "modules": samples[-1]["modules"],
        "heavy": samples[-1]["heavy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--module", action="append", help="OLD=NEW module names")
    args = parser.parse_args()
    pairs = [m.split("=", 1) for m in (args.module or MODULES)]
    with tempfile.TemporaryDirectory() as tmp:
        this = shadow(ROOT, Path(tmp) / "this")
        other = shadow(args.other, Path(tmp) / "other")
        for _ in range(2):  # warm the file cache and .pyc files of both
            for old, new in pairs:
                measure(other, old, 1)
                measure(this, new, 1)
        print(f"{'module (this checkout)':<40} {'other ms':>9} {'this ms':>8} {'ratio':>6}"
              f" {'mods other/this':>16}  heavy modules loaded (this)")  # fmt: skip
        for old, new in pairs:
            a, b = measure(other, old, args.runs), measure(this, new, args.runs)
            print(f"{new:<40} {a['ms']:9.1f} {b['ms']:8.1f} {a['ms'] / b['ms']:6.2f}"
                  f" {a['modules']:>7}/{b['modules']:<8}  {','.join(b['heavy']) or '-'}")  # fmt: skip
    print("ratio = other / this (> 1: this checkout imports faster)")


if __name__ == "__main__":
    main()
