"""Mistakes are refused at once, and two runs share a directory.

- ``--set KEY=VALUE`` with a key no agent of the config accepts exits 2 naming the key
  and the keys each agent accepts; one that an agent accepts (the world's
  ``time_factor``) reaches it.
- A task tree naming an object the world lacks (``suger``) exits 2 before any agent
  starts, instead of running until the mission times out.
- Two ``teamtree run`` in one directory each keep their own current-run file; the one
  that ends first leaves the other's (and ``current.json`` names the one still running).
- ``run --without ID`` starts the team without member ID, for a person to take its place.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, teamtree_cmd

pytestmark = [pytest.mark.integration]

TEA = REPO / "configs" / "tea_party_s1.toml"
#: how long a refused command may take (a loaded machine), far below a mission's timeout
REFUSED_WITHIN_S = 60


def refused(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `args`; a command still running after REFUSED_WITHIN_S is killed and fails."""
    proc = subprocess.Popen(
        teamtree_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=cwd, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=REFUSED_WITHIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{args[0]} was not refused within {REFUSED_WITHIN_S} s:\n{out[-2000:]}")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def test_a_set_key_nobody_accepts_exits_2_naming_it(tmp_path: Path, mosquitto) -> None:
    out = refused("run", str(TEA), "--broker", mosquitto.url, "--timeout", "5",
                  "--set", "bogus=1", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr
    assert "bogus" in out.stderr and "time_factor (world)" in out.stderr, out.stderr
    assert "metric (pr2, baxter)" in out.stderr, out.stderr
    assert " | " not in out.stdout, f"agents started:\n{out.stdout}"


def test_set_time_factor_reaches_the_world(tmp_path: Path, mosquitto) -> None:
    """The config says 8.0; ``--set time_factor=1.0`` is what the world serves with."""
    world = subprocess.Popen(
        teamtree_cmd("agent", "--config", str(TEA), "--id", "world", "--broker", mosquitto.url,
                     "--set", "time_factor=1.0", "--log-format", "plain"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )  # fmt: skip
    seen = []
    try:
        deadline = time.monotonic() + 60
        assert world.stdout is not None
        for line in world.stdout:
            seen.append(line)
            if "world.serving" in line or time.monotonic() > deadline:
                break
    finally:
        world.terminate()
        world.wait(timeout=30)
    serving = next((line for line in seen if "world.serving" in line), "")
    found = re.search(r"time_factor=([0-9.]+)", serving)
    assert found is not None, "".join(seen[-30:])
    assert float(found[1]) == 1.0, serving


def test_a_misspelt_object_exits_2_before_any_agent_starts(tmp_path: Path, mosquitto) -> None:
    config = tmp_path / "suger.toml"
    text = TEA.read_text().replace("AND(sugar, tea_pot)", "AND(suger, tea_pot)")
    config.write_text(text.replace('path = "runs/', f'path = "{tmp_path}/runs/'))
    out = refused("run", str(config), "--broker", mosquitto.url, cwd=tmp_path)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr
    assert "'suger'" in out.stderr and "[mission.tree]" in out.stderr, out.stderr
    assert " | " not in out.stdout, f"agents started:\n{out.stdout}"


def _team(tmp_path: Path, name: str, peers: str = "") -> Path:
    """Two hello agents; `peers` of ``a`` (e.g. ``peers = ["ghost"]``: ``a`` waits for a
    peer that never comes, until the mission's timeout)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[team]\nname = "{name}"\n[mission]\nkind = "hello"\ntimeout_s = 120\n'
        f'[[agents]]\nid = "a"\nkind = "hello"\n{peers}\n[[agents]]\nid = "b"\nkind = "hello"\n'
    )
    return path


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def test_two_runs_in_one_directory_keep_their_files(tmp_path: Path, mosquitto) -> None:
    here = tmp_path / "here"
    here.mkdir()
    current = here / ".teamtree" / "current.json"
    first = subprocess.Popen(
        teamtree_cmd("run", str(_team(tmp_path, "first", 'peers = ["ghost"]')), "--broker",
                     mosquitto.url),
        stdout=(tmp_path / "first.log").open("w"), stderr=subprocess.STDOUT, cwd=here,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while _read(current).get("pid") != first.pid:
            assert time.monotonic() < deadline, (tmp_path / "first.log").read_text()
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            time.sleep(0.2)
        second = subprocess.run(
            teamtree_cmd("run", str(_team(tmp_path, "second")), "--broker",
                         mosquitto.url),
            capture_output=True, text=True, timeout=180, cwd=here,
        )  # fmt: skip
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr
        assert first.poll() is None, "the first run ended early"
        assert _read(current).get("pid") == first.pid, _read(current)
        assert _read(current).get("team") == "first"
        own = list((here / ".teamtree" / "runs").glob("*.json"))
        assert [p.name for p in own] == [f"{first.pid}.json"], own
    finally:
        first.terminate()
        first.wait(timeout=60)
    assert not current.exists() and not list((here / ".teamtree" / "runs").glob("*.json"))


def test_without_an_id_that_is_no_member_exits_2(tmp_path: Path, mosquitto) -> None:
    out = refused("run", str(TEA), "--broker", mosquitto.url, "--without", "world",
                  cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2 and "--without" in out.stderr and "'world'" in out.stderr, out.stderr


def test_without_a_member_the_team_runs_for_a_person(tmp_path: Path, mosquitto) -> None:
    """``--without b``: b is never started; the run says how to take its place and
    waits for b before starting the other members."""
    run = subprocess.Popen(
        teamtree_cmd("run", str(_team(tmp_path, "alone")), "--broker", mosquitto.url,
                     "--without", "b"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )  # fmt: skip
    seen = []
    try:
        assert run.stdout is not None
        for line in run.stdout:
            seen.append(line)
            if "waiting for b to join" in line:
                break
    finally:
        run.terminate()
        seen += run.communicate(timeout=60)[0].splitlines(keepends=True)
    log = "".join(seen)
    assert "not starting b" in log and "teamtree human --id b" in log, log
    assert not any(line.startswith(("a ", "b ")) for line in seen), log
