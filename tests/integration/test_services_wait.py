"""A member started by hand waits for the team's services before its first message.

``teamtree agent`` runs as a process against mosquitto: with no recorder online it
waits (printing what for) and gives up with an error naming the missing service; when
the recorder comes up meanwhile, the member starts and the recording holds its first
messages.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import teamtree_cmd

pytestmark = pytest.mark.integration

CONFIG = """
[team]
name = "{team}"

[mission]
kind = "hello"
timeout_s = 60

[[agents]]
id = "alpha"
kind = "hello"
peers = []

[[agents]]
id = "recorder"
kind = "recorder"
role = "service"
path = "rec.jsonl"
required = true  # an optional one is waited for only briefly (test_optional_observers.py)
"""


def _config(tmp_path: Path, team: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(CONFIG.format(team=team))
    return path


def test_a_member_gives_up_naming_the_missing_service(tmp_path: Path, mosquitto, team) -> None:
    config = _config(tmp_path, team)
    started = time.monotonic()
    out = subprocess.run(
        teamtree_cmd("agent", "--config", str(config), "--id", "alpha",
                     "--broker", mosquitto.url, "--wait-services", "2"),
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    took = time.monotonic() - started
    assert out.returncode == 1, out.stdout + out.stderr
    assert "services are not online after 2 s: recorder" in out.stderr, out.stderr
    assert "--wait-services 0" in out.stderr
    print(f"gave up after {took:.1f} s (wait 2 s)")


def test_a_member_waits_for_the_recorder_so_it_records_everything(
    tmp_path: Path, mosquitto, team
) -> None:
    config = _config(tmp_path, team)
    member = subprocess.Popen(
        teamtree_cmd("agent", "--config", str(config), "--id", "alpha",
                     "--broker", mosquitto.url, "--log-format", "plain",
                     "--wait-services", "60"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )  # fmt: skip
    recorder = None
    try:
        assert member.stdout is not None
        lines = []
        for line in member.stdout:  # the member says what it waits for, and waits
            lines.append(line)
            if "waiting for the team's services" in line:
                break
        assert "recorder" in lines[-1], "".join(lines)
        assert member.poll() is None
        recorder = subprocess.Popen(
            teamtree_cmd("agent", "--config", str(config), "--id", "recorder",
                         "--broker", mosquitto.url, "--log-format", "plain"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        rest, _ = member.communicate(timeout=120)
        assert member.returncode == 0, "".join(lines) + rest
        assert "services online: recorder" in rest, rest
        time.sleep(1.0)  # the recorder writes what it has heard
    finally:
        for proc in (member, recorder):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(30)
    records = [json.loads(line) for line in (tmp_path / "rec.jsonl").read_text().splitlines()]
    kinds = [r["kind"] for r in records if r["sender"] == "alpha"]
    # its first message after coming online, and its last, are in the recording
    assert "hello.ping" in kinds and "hello.done" in kinds, kinds
