"""An agent's tasks are its task group: a spawned task that fails fails the agent.

Each test runs an agent as its own process against a real mosquitto. The agent spawns
one task that raises: unless the task was spawned optional, the agent logs
``agent.task_failed`` naming the task and its error, and exits 1 without waiting for
its ``main`` to end; an optional task's failure is logged once and the agent goes on.
A hostile message to the same agent never fails it (``tests/integration/test_hostile.py``
covers every kind of bad message)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, scaled

pytestmark = pytest.mark.integration

#: an agent whose ``main`` spawns the failing task, then waits `GRACE` s for a stop
AGENT = """
import asyncio, sys

from teamtree.agents import Agent
from teamtree.agents.runtime.log_setup import configure_logging
from teamtree.broker.endpoint import parse_endpoint

URL, TEAM, OPTIONAL, GRACE = sys.argv[1], sys.argv[2], sys.argv[3] == "optional", float(sys.argv[4])


class Doomed(Agent):
    async def main(self) -> None:
        await self.wait_connected(60)

        async def fail() -> None:
            await asyncio.sleep(0.05)
            raise RuntimeError("the widget broke")

        how = {"optional": True} if OPTIONAL else {}  # a required task: spawn's default
        task = self.spawn(fail(), "widget-watch", **how)
        await asyncio.wait([task])
        print("main: the task has ended", flush=True)
        try:
            await asyncio.wait_for(self.wait_stop_requested(), GRACE)
        except TimeoutError:  # nobody stopped it: it lived on
            print("main: returned", flush=True)


async def run() -> int:
    agent = Doomed("doomed", team=TEAM, endpoint=parse_endpoint(URL))
    async with agent:
        return await agent.run_until_stopped()


configure_logging("plain")
sys.exit(asyncio.run(run()))
"""


def run_agent(tmp_path: Path, url: str, team: str, how: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "doomed.py"
    script.write_text(AGENT)
    grace = scaled(3.0)
    return subprocess.run(
        [sys.executable, str(script), url, team, how, str(grace)],
        capture_output=True, text=True, timeout=scaled(60) + grace, cwd=REPO,
    )  # fmt: skip


def test_a_failed_task_fails_the_agent_naming_the_task(tmp_path: Path, mosquitto, team) -> None:
    done = run_agent(tmp_path, mosquitto.url, team, "required")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    failed = [line for line in out.splitlines() if "agent.task_failed" in line]
    assert len(failed) == 1, out
    assert "widget-watch" in failed[0] and "the widget broke" in failed[0], failed
    assert "stopping" in failed[0], failed
    assert "main: returned" not in out, "the agent lived on after its task failed:\n" + out


def test_an_optional_task_that_fails_is_logged_and_the_agent_goes_on(
    tmp_path: Path, mosquitto, team
) -> None:
    done = run_agent(tmp_path, mosquitto.url, team, "optional")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    failed = [line for line in out.splitlines() if "agent.task_failed" in line]
    assert len(failed) == 1 and "widget-watch" in failed[0], out
    assert "going on" in failed[0], failed
    assert "main: returned" in out, out
