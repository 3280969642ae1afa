"""Seed 002 over the broker: time from job receipt to member selection, methods 1 and 2.

Robots of Table II's mix (``factory_robots(n)``; factory_8's eight at 8), all within communication range
(ttl 1, so the agent sees n - 1 neighbours, as the paper's method-2 trend assumes),
on a fresh mosquitto. A job source hands the five paper jobs (job1 to M1, job2 to S2,
job3b to L1, job4 to B1, job5 to L1) ``--repeats`` times, one at a time on a settled
team. Per cell:

- ``select``: the agent's own monotonic time from ``job.assign`` receipt to member
  selection (verification, request, grants, selection, decision);
- ``grants``: when the last grant arrived (the broker round trip of the request and
  every answer);
- ``asked``: how many robots the agent sent the request to (median over the jobs);
- ``early``: how many windows closed before the deadline (every capable robot had
  answered, or the best team they could give had granted);
- ``done`` / ``imposs.`` / ``other``: how the jobs ended (impossible: no team of the
  agent and the robots in reach exists under this method, e.g. 3(c) and 5 under
  method 1, whose eq. 18 selects one helper).

Each cell runs four times in the same invocation: the fixed window (``--window``,
0.1 s by default, always waiting for its deadline), the window that closes once every
capable robot in reach has granted or declined (``close_early = 1``), and the one that
also closes once the best team those robots can give has granted (``close_early = 2``,
the default), and the one that asks that team first (``close_early = 3``);
``--deadline`` (1 s) bounds the last three. ``ratio`` is a row's
selection p50 over the row above it.

Modes: ``procs`` runs one OS process per robot through ``teamtree run`` (as a team is
deployed); ``inproc`` runs every robot in this process, each with its own MQTT client
(the broker path is the same; CPU is shared). The paper's figures (§VIII.A, Godot
simulation, Phase 1 time) are printed alongside: 0.17 s for method 1 at 8 and 24
robots, 0.18 s and 2.53 s for method 2.

    python benchmarks/bench_favors.py [--sizes 8 24 100] [--repeats 3] [--window 0.1]
                                      [--deadline 1.0] [--variants fixed answered best]
                                      [--older DIR]

``--older DIR`` runs each row again, right after it, with the code under DIR/teamtree
(e.g. a ``git archive`` of an older commit; the robots' processes inherit it) and
prints that row too, its ``ratio`` the older selection p50 over this code's.

Prints figures only, and every job that did not end done or impossible with its
reason; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from teamtree.agents import build_agent, configure_logging, load_config
from teamtree.agents.capability.factory import FactoryRobot, JobSource
from teamtree.broker import MosquittoBroker, find_mosquitto
from teamtree.hardware import RobotProfile, factory_robots, make_robot

PAPER = {(1, 8): "0.17 s", (1, 24): "0.17 s", (2, 8): "0.18 s", (2, 24): "2.53 s"}
VARIANTS = ("fixed", "answered", "best", "first")
"""The windows a row runs: fixed (``--window``), closed when all answered, when the best
team granted, and that team asked first (``close_early`` 0, 1, 2, 3)."""
JOB_AGENTS = [("job1", "m1"), ("job2", "s2"), ("job3b", "l1"), ("job4", "b1"), ("job5", "l1")]


def team(n: int) -> list[RobotProfile]:
    """``factory_robots(n)``; below 12, factory_8's mix (every paper job has its robots)."""
    if n >= 12:
        return factory_robots(n)
    kinds = ["B", "L", "M", "M", "S1", "S2", "O1", "O2", "O3", "O4", "B"][:n]
    ids = ["b1", "l1", "m1", "m2", "s1", "s2", "o1", "o2", "o3", "o4", "b2"][:n]
    return [make_robot(k, i) for k, i in zip(kinds, ids, strict=True)]


def write_config(
    path: Path, n: int, method: int, repeats: int, window: float, close_early: int = 0
) -> Path:
    """A factory of ``n`` robots, every one in range, and the paper jobs ``repeats`` times."""
    jobs = ", ".join(
        f'{{ job = "{job}", robot = "{robot}" }}'
        for _ in range(repeats)
        for job, robot in JOB_AGENTS
    )
    lines = [
        f'[team]\nname = "bench-{uuid.uuid4().hex[:6]}"',
        "[runtime]\ntick_hz = 50\nheartbeat_s = 2.0\nkeepalive_s = 5",
        f'[mission]\nkind = "factory"\ntimeout_s = 600\nmethod = {method}\nttl = 1\n'
        f"window_s = {window}\nclose_early = {close_early}\nmax_rounds = 1",
        f'[[agents]]\nid = "jobs"\nkind = "job_source"\nwork_s = 0.05\nsettle_s = 0.2\n'
        f'start_timeout_s = 300\nsummary_path = "{path.parent / "summary.json"}"\njobs = [{jobs}]',
    ]
    for i, robot in enumerate(team(n)):
        lines.append(
            f'[[agents]]\nid = "{robot.robot_id}"\nkind = "factory_robot"\ntype = "{robot.kind}"\n'
            f"position = [{float(i % 10)}, {float(i // 10)}]"
        )
    path.write_text("\n\n".join(lines) + "\n")
    return path


def run_procs(config: Path, broker: MosquittoBroker) -> list[dict]:
    """``teamtree run`` with one process per robot; the summary's job rows."""
    out = subprocess.run(
        [sys.executable, "-m", "teamtree.agents", "run", str(config), "--broker", broker.endpoint.url],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    # exit 1 with a summary: the run was honest that some jobs failed (counted below)
    if out.returncode not in (0, 1) or not (config.parent / "summary.json").exists():
        raise RuntimeError(f"run failed: {out.stdout[-3000:]}{out.stderr[-2000:]}")
    return json.loads((config.parent / "summary.json").read_text())["jobs"]


async def run_inproc(config_path: Path, broker: MosquittoBroker) -> list[dict]:
    """Every robot in this process, each with its own MQTT client."""
    config = load_config(config_path)
    agents = [build_agent(config, s.id, endpoint=broker.endpoint) for s in config.agents]
    source = next(a for a in agents if isinstance(a, JobSource))
    async with contextlib.AsyncExitStack() as stack:
        for agent in agents:
            await stack.enter_async_context(agent)
        await source.main()
    for agent in agents:
        if isinstance(agent, FactoryRobot):
            agent.request_stop()
    return json.loads((config_path.parent / "summary.json").read_text())["jobs"]


def cell(rows: list[dict]) -> dict[str, float]:
    sel = [r["selection_ms"] for r in rows if r.get("selection_ms") is not None]
    grants = [max(r["grants_ms"]) for r in rows if r.get("grants_ms")]
    asked = [r["asked"] for r in rows if r.get("asked") is not None]
    early = sum(
        1
        for r in rows
        if r.get("selections")
        and r["selections"][0].get("closed_by") in ("all answered", "best team granted")
    )
    return {
        "n": len(sel),
        "select": statistics.median(sel) if sel else float("nan"),
        "select_max": max(sel) if sel else float("nan"),
        "grants": statistics.median(grants) if grants else float("nan"),
        "asked": statistics.median(asked) if asked else float("nan"),
        "early": early,
        "done": sum(r["status"] == "done" for r in rows),
        "impossible": sum(r["status"] == "impossible" for r in rows),
        "other": sum(r["status"] not in ("done", "impossible") for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 24, 100])
    parser.add_argument("--methods", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window", type=float, default=0.1, help="baseline window, seconds")
    parser.add_argument(
        "--deadline", type=float, default=1.0, help="deadline of the early-closing window, s"
    )
    parser.add_argument(
        "--mode", choices=["auto", "procs", "inproc"], default="auto",
        help="auto: processes up to 24 robots, in-process above",
    )  # fmt: skip
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
        help="which windows to run: the fixed one, all answered, best granted, best asked first",
    )  # fmt: skip
    parser.add_argument(
        "--older", type=Path, default=None, metavar="DIR",
        help="also run each row with the code under DIR/teamtree (e.g. a git archive of "
        "an older commit) and print the ratio older / this",
    )  # fmt: skip
    parser.add_argument("--cell", nargs=5, help=argparse.SUPPRESS)  # one row as JSON
    args = parser.parse_args()
    configure_logging("plain", level="warning")
    if find_mosquitto() is None:
        sys.exit("mosquitto is not installed (apt-get install -y mosquitto)")
    if args.older is not None and not (args.older / "teamtree").is_dir():
        parser.error(f"--older {args.older}: no teamtree/ there (git archive into DIR/teamtree)")
    if args.cell:
        n, method, mode, window, close_early = args.cell
        rows, wall = measure(
            int(n), int(method), mode, args.repeats, float(window), int(close_early)
        )
        print(json.dumps({"rows": rows, "wall": wall}))
        return
    print(
        f"{'robots':>6} {'method':>6} {'mode':>6} {'window':>15} {'jobs':>4} {'select p50':>10} "
        f"{'max':>7} {'grants':>7} {'asked':>5} {'early':>5} {'done':>4} {'imposs.':>7} {'other':>5} "
        f"{'wall':>5} {'ratio':>5}  paper"
    )
    variants = [(label, window, close_early)
                for key, (label, window, close_early) in {
                    "fixed": (f"deadline {args.window:g} s", args.window, 0),
                    "answered": ("all answered", args.deadline, 1),
                    "best": ("best granted", args.deadline, 2),
                    "first": ("best asked first", args.deadline, 3)}.items()
                if key in args.variants]  # fmt: skip
    for n in args.sizes:
        for method in args.methods:
            baseline = float("nan")
            for label, window, close_early in variants:
                mode = args.mode if args.mode != "auto" else ("procs" if n <= 24 else "inproc")
                baseline = run_cell(args, n, method, mode, label, window, close_early, baseline)


def run_cell(
    args: argparse.Namespace,
    n: int,
    method: int,
    mode: str,
    label: str,
    window: float,
    close_early: int,
    baseline: float,
) -> float:
    """One row (and, with ``--older``, the same row on the older code); returns its
    selection p50 (the next row's baseline when it is one)."""
    rows, wall = measure(n, method, mode, args.repeats, window, close_early)
    c = cell(rows)
    ratio = c["select"] / baseline if close_early else float("nan")
    print_row(n, method, mode, label, c, wall, ratio, rows)
    if args.older is not None:
        cmd = [sys.executable, __file__, "--cell", str(n), str(method), mode, str(window),
               str(close_early), "--repeats", str(args.repeats)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(args.older)}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if out.returncode != 0:
            raise RuntimeError(f"the older code's run failed: {out.stderr[-2000:]}")
        old = json.loads(out.stdout.strip().splitlines()[-1])
        o = cell(old["rows"])
        print_row(n, method, mode, f"{label} (older)", o, old["wall"], o["select"] / c["select"],
                  old["rows"])  # fmt: skip
    return c["select"]


def measure(
    n: int, method: int, mode: str, repeats: int, window: float, close_early: int
) -> tuple[list[dict], float]:
    """The summary's job rows of one run on a fresh mosquitto, and its wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp) / "f.toml", n, method, repeats, window, close_early)
        broker = MosquittoBroker()

        async def go(cfg: Path = config, b: MosquittoBroker = broker, m: str = mode):
            await b.start()
            try:
                if m == "procs":
                    return await asyncio.to_thread(run_procs, cfg, b)
                return await run_inproc(cfg, b)
            finally:
                await b.close()

        t0 = time.monotonic()
        rows = asyncio.run(go())
        return rows, time.monotonic() - t0


def print_row(
    n: int,
    method: int,
    mode: str,
    label: str,
    c: dict[str, float],
    wall: float,
    ratio: float,
    rows: list[dict],
) -> None:
    print(
        f"{n:>6} {method:>6} {mode:>6} {label:>15} {c['n']:>4} {c['select']:>8.1f}ms "
        f"{c['select_max']:>5.0f}ms {c['grants']:>5.1f}ms {c['asked']:>5.0f} {c['early']:>5} "
        f"{c['done']:>4} {c['impossible']:>7} {c['other']:>5} {wall:>4.0f}s "
        f"{ratio:>5.2f}  {PAPER.get((method, n), '-')}",
        flush=True,
    )
    for r in rows:
        if r["status"] not in ("done", "impossible"):
            print(f"{'':>13} {r['job_id']} {r['job']} by {r['agent']}: {r['status']},"
                  f" {r['reason'] or 'no reason'}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
