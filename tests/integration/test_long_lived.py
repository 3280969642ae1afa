"""An agent process freezes what it holds once it is ONLINE (``broker/long_lived``): its
modules, classes and config live as long as the process, and the garbage collector's
full collections no longer walk them (24-64 ms each in a process of four robots at
8 x 500 before). Run in a fresh interpreter against mosquitto: nothing was frozen before
the agent started, much is after, and a second agent of the process freezes nothing
more."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent(
    """
    import asyncio, gc, sys

    from teamtree.agents.runtime.agent import Agent
    from teamtree.broker import Endpoint

    async def online(agent):
        await agent.__aenter__()
        for _ in range(200):
            if agent.connection.connected.is_set():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # its announce has run

    async def main(port):
        print("frozen before:", gc.get_freeze_count())
        first = Agent("a1", team="t1", endpoint=Endpoint("127.0.0.1", port))
        await online(first)
        after_first = gc.get_freeze_count()
        print("frozen after the first:", after_first > 10_000)
        second = Agent("a2", team="t1", endpoint=Endpoint("127.0.0.1", port))
        await online(second)
        # (frozen objects freed since lower the count; a second freeze would raise it)
        print("the second froze nothing more:", gc.get_freeze_count() <= after_first)
        await second.stop()
        await first.stop()

    asyncio.run(main(int(sys.argv[1])))
    """
)


def test_an_agent_process_freezes_its_startup_objects_once(mosquitto) -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(mosquitto.endpoint.port)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert "frozen before: 0" in lines, run.stdout
    assert "frozen after the first: True" in lines, run.stdout
    assert "the second froze nothing more: True" in lines, run.stdout
