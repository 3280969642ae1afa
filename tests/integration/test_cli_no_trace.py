"""One-shot commands leave no trace in the team, and find it as every command does.

A serving tea party (``teamtree run configs/tea_party_queue.toml``) on mosquitto takes
20 ``submit``/``missions``/``cancel`` calls; ``monitor --once --json`` then lists only
the config's agents (no ``cli-...`` member, online or not), and the queue records the
canceller as ``--as`` named it. ``submit`` run in another directory, without flags,
finds the team from ``$TEAMTREE_BROKER`` and ``$TEAMTREE_TEAM``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from teamtree.agents.runtime.config import load_config
from tests.conftest import REPO, teamtree_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONFIG = REPO / "configs" / "tea_party_queue.toml"
TEAM = "tea-party-queue"
#: a mission that stays running until cancelled (the PR2 cannot grasp the orange); the
#: same again waits behind it for the PR2
MISSION = '[mission]\nkind = "tasktree"\ntimeout_s = 300\ntree = "orange"\nmembers = ["pr2"]\n'


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        teamtree_cmd(*args), capture_output=True, text=True, timeout=120, cwd=cwd,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def wait_for_queue(url: str, cwd: Path, log: Path, within: float = 240) -> None:
    """Until the queue answers (the team's services start slowly on a loaded machine)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        out = cli("missions", "--broker", url, "--team", TEAM, "--timeout", "5", cwd=cwd)
        if out.returncode == 0:
            return
        time.sleep(1.0)
    raise AssertionError(f"the mission queue never answered:\n{log.read_text()[-3000:]}")


@pytest.mark.timeout(900)
def test_twenty_calls_leave_no_member_and_env_finds_the_team(tmp_path: Path, mosquitto) -> None:
    url = mosquitto.url
    log = tmp_path / "team.log"
    team = subprocess.Popen(
        teamtree_cmd("run", str(CONFIG), "--broker", url),
        stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    live: subprocess.Popen[str] | None = None
    try:
        wait_for_queue(url, tmp_path, log)
        (tmp_path / "m.toml").write_text(MISSION)
        flags = ("--broker", url, "--team", TEAM, "--timeout", "20")
        # a monitor watching while the calls are made; its views go to a file (a pipe
        # nobody reads fills up on a slow machine, and the monitor blocks mid-line)
        views_file = tmp_path / "live-monitor.jsonl"
        live = subprocess.Popen(
            teamtree_cmd("monitor", *flags[:4], "--json", "--interval", "1"),
            stdout=views_file.open("w"), stderr=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        calls = 0
        ids = []
        for _ in range(5):
            out = cli("submit", "m.toml", *flags, cwd=tmp_path)
            calls += 1
            assert out.returncode == 0, out.stdout + out.stderr
            ids.append(out.stdout.strip().splitlines()[-1])
            assert cli("missions", *flags, cwd=tmp_path).returncode == 0
            calls += 1
        # the last one waits behind the others (they share pr2), so it is still to be
        # cancelled when its cancel comes; the first may have ended by then, and then
        # its cancel says so and exits 1
        for n, mission in enumerate(reversed(ids)):
            as_name = ["--as", "ada"] if n == 0 else []
            out = cli("cancel", mission, *flags, *as_name, cwd=tmp_path)
            calls += 1
            too_late = out.returncode == 1 and "already ended" in out.stderr
            assert out.returncode == 0 or (too_late and n > 0), out.stdout + out.stderr
        while calls < 20:
            assert cli("missions", *flags, cwd=tmp_path).returncode == 0
            calls += 1
        rows = json.loads(cli("missions", *flags, "--json", cwd=tmp_path).stdout)
        last = next(r for r in rows if r["id"] == ids[-1])
        assert last.get("cancelled_by", "").startswith("ada"), last
        snap = json.loads(
            cli("monitor", *flags[:4], "--once", "--json", "--wait", "2", cwd=tmp_path).stdout
        )
        agents = {spec.id for spec in load_config(CONFIG).agents}
        strangers = sorted(set(snap["agents"]) - agents)
        assert not strangers, f"{calls} one-shot calls left team members: {strangers}"
        time.sleep(2.0)  # the live monitor's next view
        live.terminate()
        live.wait(timeout=30)
        views = _complete_views(views_file.read_text())
        seen = sorted({a for view in views for a in view["agents"]} - agents)
        assert views and not seen, f"a live monitor saw the one-shot calls as members: {seen}"

        elsewhere = tmp_path / "elsewhere"  # no current-run file: only the environment
        elsewhere.mkdir()
        (elsewhere / "m.toml").write_text(MISSION)
        env = {"TEAMTREE_BROKER": url, "TEAMTREE_TEAM": TEAM}
        out = cli("submit", "m.toml", "--timeout", "20", cwd=elsewhere, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        mission = out.stdout.strip().splitlines()[-1]
        assert cli("cancel", mission, cwd=elsewhere, env=env).returncode == 0
    finally:
        if live is not None and live.poll() is None:
            live.kill()
        team.terminate()
        team.wait(timeout=60)


def _complete_views(text: str) -> list[dict]:
    """The monitor's JSON views, one per line; a last line cut by the stop is left out."""
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines = lines[:-1]
    return [json.loads(line) for line in lines]
