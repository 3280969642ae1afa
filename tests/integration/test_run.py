"""`teamtree run`: the hello mission end to end, a crashing child, and Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BROKER_KINDS, REPO, no_leftover, teamtree_cmd, write_config

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", BROKER_KINDS)
def test_hello_mission_runs_to_the_end(kind: str) -> None:
    out = subprocess.run(
        teamtree_cmd("run", str(REPO / "configs" / "hello.toml"), "--broker-kind", kind, "--timeout", "90"),
        capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    lines = out.stdout.splitlines()
    for agent in ("alpha", "beta", "gamma"):
        saw = [line for line in lines if line.startswith(agent) and "hello.saw" in line]
        assert len(saw) == 1, f"{agent} did not report who it saw"
        others = {"alpha", "beta", "gamma"} - {agent}
        assert all(o in saw[0] for o in others)
    assert "mission complete: 3 member(s)" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_every_agent_runs_on_the_event_loop_the_environment_names(loop: str) -> None:
    """``TEAMTREE_EVENT_LOOP`` reaches every agent process ``run`` starts; the hello
    mission completes on either loop (agents/runtime/event_loop.py)."""
    out = subprocess.run(
        teamtree_cmd("run", str(REPO / "configs" / "hello.toml"), "--timeout", "90"),
        capture_output=True, text=True, timeout=150,
        env={**os.environ, "TEAMTREE_EVENT_LOOP": loop},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    online = [line for line in out.stdout.splitlines() if "agent.online" in line]
    assert len(online) >= 3, out.stdout[-3000:]
    assert all(f"loop={loop}" in line for line in online), online
    assert "mission complete: 3 member(s)" in out.stdout


def _read_until(proc: subprocess.Popen[str], needle_count: int, needle: str, timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        if seen.count(needle) >= needle_count:
            return seen
    pytest.fail(f"did not see {needle_count}x {needle!r} in time:\n{seen[-3000:]}")


ECHO_TEAM = '[[agents]]\nid = "e1"\nkind = "echo"\n\n[[agents]]\nid = "e2"\nkind = "echo"\n'


def _start(tmp_path: Path, team: str) -> subprocess.Popen[str]:
    config = write_config(tmp_path / "echo.toml", team, ECHO_TEAM)
    return subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker-kind", "mosquitto", "--log-format", "json"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_ctrl_c_stops_every_child(tmp_path: Path, team: str) -> None:
    proc = _start(tmp_path, team)
    seen = _read_until(proc, 2, '"agent.online"', 60)
    pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", seen)]
    assert len(pids) == 3, seen  # mosquitto and two agents
    with no_leftover(pids):
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, rest[-2000:]
    assert "interrupted; stopping every child" in rest
    assert "Traceback" not in seen + rest


def test_a_crashing_child_fails_the_run_naming_it(tmp_path: Path, team: str) -> None:
    proc = _start(tmp_path, team)
    seen = _read_until(proc, 2, '"agent.online"', 60)
    e2 = int(re.search(r"started member e2 \(pid (\d+)\)", seen).group(1))
    pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", seen)]
    with no_leftover(pids):
        subprocess.run(["kill", "-9", str(e2)], check=True)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "agent 'e2' exited with code -9" in rest


def test_cli_entry_point_is_installed() -> None:
    out = subprocess.run(["teamtree", "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "teamtree run" in out.stdout, out.stderr
