"""One spawner for agent processes (``teamtree.agents.runtime.processes``), used by
``teamtree run`` and by the mission queue.

A stop is SIGTERM, then SIGKILL for a process still there after the grace period; every
output line reaches the caller with the process's name; and the mission queue, which
starts its missions' agents with it, passes their lines on after their ids, as
``teamtree run`` does (a hello mission on a real mosquitto)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.missions.protocol import ACCEPTED, CHANNEL, LIST, SUBMIT
from teamtree.agents.runtime.processes import start_process, stop_processes
from tests.conftest import eventually, scaled, teamtree_cmd, write_config

pytestmark = pytest.mark.integration

#: prints a line, says when SIGTERM comes (and ignores it unless told to exit on it)
CHILD = """
import signal, sys, time
def term(*_):
    print("got SIGTERM", flush=True)
    if sys.argv[1] == "polite":
        sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
print("an Error line", file=sys.stderr, flush=True)
time.sleep(600)
"""


async def test_a_stop_terminates_then_kills_after_the_grace(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    lines: list[tuple[str, str]] = []

    def on_line(name: str, text: str) -> None:
        lines.append((name, text))

    stubborn = await start_process("stubborn", [sys.executable, str(script), "stubborn"], on_line)
    polite = await start_process("polite", [sys.executable, str(script), "polite"], on_line)
    await eventually(lambda: len(lines) >= 4, 30, what="both children ready")
    killed = []
    grace = scaled(1.0)
    await stop_processes([stubborn, polite], grace, killed.append)
    assert [p.name for p in killed] == ["stubborn"]
    assert stubborn.returncode == -signal.SIGKILL
    assert polite.returncode == 0
    for child in (stubborn, polite):
        await child.drained()
        assert (child.name, "ready") in lines  # stdout, with the process's name
        assert (child.name, "an Error line") in lines  # and stderr
        assert (child.name, "got SIGTERM") in lines, "SIGKILL came without a SIGTERM first"
        assert list(child.last_words) == ["an Error line"]


HELLO_QUEUE = """
[[agents]]
id = "queue"
kind = "mission_queue"
role = "service"

[[agents]]
id = "hello-a"
kind = "hello"
role = "on_call"

[[agents]]
id = "hello-b"
kind = "hello"
role = "on_call"
"""


async def test_the_queue_passes_its_agents_lines_on_after_their_ids(
    tmp_path: Path, mosquitto, team
) -> None:
    config = write_config(tmp_path / "queue.toml", team, HELLO_QUEUE)
    log = tmp_path / "queue.log"
    proc = subprocess.Popen(
        teamtree_cmd("agent", "--config", str(config), "--id", "queue",
                     "--broker", mosquitto.url, "--team", team, "--log-format", "plain"),
        stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    client = Agent("processes-client", team=team, endpoint=mosquitto.endpoint,
                   runtime=RuntimeSettings(request_timeout_s=20))  # fmt: skip
    try:
        async with client:
            await client.wait_connected(scaled(20))
            await eventually(lambda: client.team_view.online("mission_queue"), 120,
                             interval=0.2, what="the mission queue online")  # fmt: skip
            reply = await client.request(CHANNEL, SUBMIT, {"mission": {"kind": "hello"}})
            assert reply.kind == ACCEPTED, reply.body
            mission = reply.body["id"]

            async def state() -> str:
                rows = (await client.request(CHANNEL, LIST, {})).body["missions"]
                return next(r["state"] for r in rows if r["id"] == mission)

            deadline = asyncio.get_running_loop().time() + scaled(120)
            while (now := await state()) in ("queued", "running"):
                assert asyncio.get_running_loop().time() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.3)
            assert now == "done", log.read_text()[-3000:]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    text = log.read_text()
    for member in ("hello-a", "hello-b"):
        said = [line for line in text.splitlines() if line.startswith(f"{member} | ")]
        assert any("hello.team_online" in line for line in said), text[-3000:]
