"""Agent start-up at scale: N agent processes to ONLINE, against N bare aiomqtt clients.

Both sides are started the same way (N processes at once, ``python -m ...``) against
one broker; a tap subscribed to the team's presence topics takes the time from the
first spawn to the N-th ``online``, and reads each process's resident memory then.
The agents are task-tree robots of one config (``teamtree agent --id rK``); the bare
client imports aiomqtt, connects and publishes one retained presence-like message.
Used by ``bench_tasktree.py --startup N ...``.

teamtree's modules are byte-compiled first (``compileall``), as after a wheel install
or any first run: with ``PYTHONDONTWRITEBYTECODE`` set (as on the project's build
machine) every agent would otherwise compile its ~70 modules from source, 80 ms of
each start that a user does not pay.
"""

from __future__ import annotations

import asyncio
import compileall
import importlib
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from teamtree.broker import Connection, Endpoint, Incoming
from teamtree.broker.topics import build, pattern

__all__ = ["print_startup", "startup_row"]

BARE = """
import asyncio, sys
import aiomqtt
async def main(host, port, topic, ident):
    async with aiomqtt.Client(host, int(port), identifier=f"bare-{ident}") as client:
        await client.publish(topic, b"online", qos=1, retain=False)
        await asyncio.Event().wait()
asyncio.run(main(*sys.argv[1:]))
"""


def _config(team: str, n: int) -> str:
    lines = ['[team]', f'name = "{team}"', "[mission]", 'kind = "tasktree"',
             'tree = "AND(THEN(o0, o1))"']  # fmt: skip
    for r in range(n):
        lines += ["[[agents]]", f'id = "r{r}"', 'kind = "robot"', 'profile = "pr2"',
                  "start_timeout_s = 60.0"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def _launch(
    endpoint: Endpoint, team: str, n: int, argv_of: Any, timeout: float
) -> tuple[float, float]:
    """Start n processes from ``argv_of(k)``; seconds until all n said ONLINE, mean RSS."""
    online: set[str] = set()
    all_online = asyncio.Event()

    async def on_message(message: Incoming) -> None:
        if b"online" in message.payload.lower():
            online.add(message.topic)
            if len(online) >= n:
                all_online.set()

    tap = Connection(endpoint, client_id=f"startup-tap-{team}", on_message=on_message)
    await tap.subscribe(pattern(team, "+", "connection"))
    tap_task = asyncio.create_task(tap.run())
    await asyncio.wait_for(tap.connected.wait(), 10)
    procs: list[asyncio.subprocess.Process] = []
    t0 = time.perf_counter()
    try:
        for k in range(n):
            quiet = asyncio.subprocess.DEVNULL
            proc = await asyncio.create_subprocess_exec(*argv_of(k), stdout=quiet, stderr=quiet)
            procs.append(proc)
        try:
            await asyncio.wait_for(all_online.wait(), timeout)
            elapsed = time.perf_counter() - t0
        except TimeoutError:
            elapsed = float("nan")
        rss = statistics.fmean(_rss_mib(p.pid) for p in procs)
    finally:
        for p in procs:
            if p.returncode is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                await asyncio.wait_for(p.wait(), 15)
            except TimeoutError:
                p.kill()
                await p.wait()
        await tap.close()
        await tap_task
    return elapsed, rss


def compile_teamtree() -> None:
    """Byte-compile teamtree's packages (see the module's docstring)."""
    for name in ("agents", "broker", "planners", "drivers", "hardware"):
        for path in importlib.import_module(f"teamtree.{name}").__path__:
            compileall.compile_dir(path, quiet=1)


async def startup_row(endpoint: Endpoint, n: int, timeout: float = 180.0) -> dict[str, Any]:
    """One row: n agents vs n bare clients (seconds to all ONLINE, mean RSS MiB)."""
    compile_teamtree()
    team = f"st{os.getpid()}n{n}"
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "team.toml"
        config.write_text(_config(team, n))
        url = str(endpoint)

        def agent_argv(k: int) -> list[str]:
            return [sys.executable, "-m", "teamtree.agents", "agent", "--config", str(config),
                    "--id", f"r{k}", "--broker", url, "--log-level", "error"]  # fmt: skip

        def bare_argv(k: int) -> list[str]:
            topic = build(team + "b", f"b{k}", "connection")
            return [sys.executable, "-c", BARE, endpoint.host, str(endpoint.port), topic, f"b{k}"]

        bare_s, bare_rss = await _launch(endpoint, team + "b", n, bare_argv, timeout)
        agent_s, agent_rss = await _launch(endpoint, team, n, agent_argv, timeout)
    return {"n": n, "agent_s": agent_s, "bare_s": bare_s, "agent_rss": agent_rss,
            "bare_rss": bare_rss}  # fmt: skip


def print_startup(rows: list[dict[str, Any]]) -> None:
    """The start-up table."""
    print()
    print("start-up: N processes started at once, seconds until all N are ONLINE")
    print(f"{'N':>4} {'agents s':>9} {'bare s':>7} {'ratio':>6} {'agent RSS MiB':>14} "
          f"{'bare RSS MiB':>13}")  # fmt: skip
    for r in rows:
        print(f"{r['n']:>4} {r['agent_s']:>9.1f} {r['bare_s']:>7.1f} "
              f"{r['agent_s'] / r['bare_s']:>5.1f}x {r['agent_rss']:>14.0f} "
              f"{r['bare_rss']:>13.0f}")  # fmt: skip
