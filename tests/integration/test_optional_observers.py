"""Observers are optional: a recorder that dies, or cannot write its file, is reported
(one line during the run, then in the result block) and the mission goes on, unless
its entry says ``required = true``. Real ``teamtree run`` processes on mosquitto."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, teamtree_cmd
from tests.integration.test_run import _read_until

pytestmark = pytest.mark.integration

HELLO_WITH_RECORDER = """
[team]
name = "{team}"

[runtime]
tick_hz = 10
heartbeat_s = 0.5
keepalive_s = 2
request_timeout_s = 3.0

[mission]
kind = "hello"
timeout_s = 120

[[agents]]
id = "alpha"
kind = "hello"

[[agents]]
id = "beta"
kind = "hello"

[[agents]]
id = "gamma"
kind = "hello"
rounds = 2

[[agents]]
id = "recorder"
kind = "recorder"
role = "service"
path = "{path}"
{extra}
"""


def _config(tmp_path: Path, team: str, *, extra: str = "", path: Path | None = None) -> Path:
    record = path or tmp_path / "runs" / "hello.jsonl"
    config = tmp_path / "hello.toml"
    config.write_text(HELLO_WITH_RECORDER.format(team=team, path=record, extra=extra))
    return config


@contextlib.contextmanager
def _running(*args: str, cwd: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        teamtree_cmd("run", *args, "--broker-kind", "mosquitto"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
    )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=30)
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def _run(config: Path, cwd: Path, *args: str) -> tuple[int, str]:
    """``teamtree run`` to its end: its exit code and output."""
    out = subprocess.run(
        teamtree_cmd("run", str(config), "--broker-kind", "mosquitto", *args),
        capture_output=True, text=True, timeout=240, cwd=cwd,
    )  # fmt: skip
    return out.returncode, out.stdout + out.stderr


def _kill_recorder_as_members_start(proc: subprocess.Popen[str]) -> str:
    """kill -9 the recorder as the members start (the hello mission is over in tens of
    milliseconds once they are online: a later kill could come after it); the output."""
    seen = _read_until(proc, 1, "; starting the members", 120)
    pid = int(re.search(r"started service recorder \(pid (\d+)\)", seen).group(1))
    os.kill(pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=240)
    return seen + rest


def test_a_killed_recorder_is_reported_and_the_hello_mission_completes(
    tmp_path: Path, team: str
) -> None:
    config = _config(tmp_path, team)
    with _running(str(config), cwd=tmp_path) as proc:
        out = _kill_recorder_as_members_start(proc)
    assert proc.returncode == 0, out[-4000:]
    assert "exited early" not in out, out[-4000:]
    said = [line for line in out.splitlines() if "'recorder' exited with code -9" in line]
    assert len(said) == 1, out[-4000:]
    assert "killed by SIGKILL" in said[0] and "the mission goes on" in said[0]
    assert "mission complete: 3 member(s)" in out
    block = out[out.index("==== mission") :]
    assert "SUCCEEDED" in block, block
    assert re.search(r"recording INCOMPLETE: recorder \(recorder\) exited with code -9", block), (
        block
    )
    assert "The recording is incomplete (recorder" in block, block
    # what it wrote before it died is there, whole lines
    for line in (tmp_path / "runs" / "hello.jsonl").read_text().splitlines():
        json.loads(line)


#: repeats of each tea-party fault (the figures of docs/safety.md: CHAOS_RUNS=20)
RUNS = int(os.environ.get("CHAOS_RUNS", "1"))
NEEDED = ("cup", "sugar", "tea_pot", "sandwich", "burger")
EITHER = ("orange", "apple")


def _tea_party(tmp_path: Path, team: str) -> Path:
    """configs/tea_party_s1.toml for `team`, with a second recorder, ``judge``, that
    nothing hurts: its file tells how the world ended."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = text.replace('name = "tea-party-s1"', f'name = "{team}"')
    text += '\n[[agents]]\nid = "judge"\nkind = "recorder"\nrole = "service"\n'
    text += 'path = "runs/judge.jsonl"\n'
    config = tmp_path / "tea.toml"
    config.write_text(text)
    return config


def _judged(tmp_path: Path, mission: str, out: str) -> tuple[bool, int, int, str]:
    """(completed, duplicates, false completions, detail) from the judge's recording of
    the world's last state: every needed object and one of the OR's at its goal; the
    world's violations (two bodies on one object) as duplicates; a SUCCEEDED run whose
    world shows an object away from its goal as a false completion."""
    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / f"judge.{mission}.jsonl").read_text().splitlines()
    ]
    states = [r["body"] for r in records if r["kind"] == "world.state" and r["sender"] == "world"]
    state = states[-1] if states else {}
    at_goal = {n for n, o in state.get("objects", {}).items() if o.get("at_goal")}
    placed = set(NEEDED) <= at_goal and bool(set(EITHER) & at_goal)
    succeeded = "SUCCEEDED" in out[out.index("==== mission") :]
    violations = int(state.get("violations", 0))
    detail = f"at_goal={sorted(at_goal)} violations={violations} succeeded={succeeded}"
    return succeeded and placed, violations, int(succeeded and not placed), detail


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("fault", ["killed", "disk_full"])
def test_a_tea_party_goes_on_without_its_recorder(
    fault: str, run: int, tmp_path: Path, team: str
) -> None:
    """The recorder is killed -9 once a robot works, or writes to a full device from the
    start: the tea party completes (judged from the world), the run exits 0, and the
    result says the recording is incomplete."""
    config = _tea_party(tmp_path, team)
    mission = f"m{uuid.uuid4().hex[:12]}"
    runs = tmp_path / "runs"
    runs.mkdir()
    if fault == "disk_full":
        (runs / f"tea_party_s1.{mission}.jsonl").symlink_to("/dev/full")
    args = (str(config), "--timeout", "240", "--mission-id", mission)
    with _running(*args, cwd=tmp_path) as proc:
        seen = _read_until(proc, 1, "behaviour.started", 120)
        if fault == "killed":
            pid = int(re.search(r"started service recorder \(pid (\d+)\)", seen).group(1))
            os.kill(pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=300)
    out = seen + rest
    completed, duplicates, false, detail = _judged(tmp_path, mission, out)
    print(f"fault={fault} run={run} completed={completed} {detail}")
    assert proc.returncode == 0, out[-5000:]
    assert completed and duplicates == 0 and false == 0, detail
    block = out[out.index("==== mission") :]
    if fault == "killed":
        assert "'recorder' exited with code -9" in out
        assert "recording INCOMPLETE: recorder (recorder) exited with code -9" in block, block
    else:
        _assert_one_error_line(out)
        assert "recording INCOMPLETE: recorder stopped writing" in block, block
        assert "ENOSPC" in block, block
    assert "judge" not in block, block  # the unhurt recorder's recording is complete


def test_a_required_recorder_that_dies_fails_the_mission_naming_it(
    tmp_path: Path, team: str
) -> None:
    config = _config(tmp_path, team, extra="required = true")
    with _running(str(config), cwd=tmp_path) as proc:
        out = _kill_recorder_as_members_start(proc)
    assert proc.returncode == 1, out[-4000:]
    assert re.search(
        r"service 'recorder' \(required = true\) exited early \(code -9 \(killed by SIGKILL\)\)",
        out,
    ), out[-4000:]
    block = out[out.index("==== mission") :]
    assert "FAILED" in block and "service recorder exited early with code -9" in block, block


def _assert_one_error_line(out: str) -> str:
    """The recorder's single write error; no traceback flood."""
    errors = [line for line in out.splitlines() if "recorder.write_failed" in line]
    assert len(errors) == 1, out[-4000:]
    assert "Traceback" not in out and "handler.failed" not in out, out[-4000:]
    return errors[0]


def test_a_recorder_on_a_full_disk_says_so_once_and_the_mission_succeeds(
    tmp_path: Path, team: str
) -> None:
    """The recording's file is /dev/full: every write fails with ENOSPC."""
    mission = f"m{uuid.uuid4().hex[:12]}"
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / f"hello.{mission}.jsonl").symlink_to("/dev/full")
    config = _config(tmp_path, team)
    code, text = _run(config, tmp_path, "--mission-id", mission)
    assert code == 0, text[-4000:]
    error = _assert_one_error_line(text)
    assert "ENOSPC" in error and f"hello.{mission}.jsonl" in error, error
    assert "cannot record: recorder stopped writing" in text, text[-4000:]
    block = text[text.index("==== mission") :]
    assert "SUCCEEDED" in block, block
    assert re.search(
        rf"recording INCOMPLETE: recorder stopped writing \S*hello\.{mission}\.jsonl "
        r"after 0 message\(s\), [\d.]+ s into the run: ENOSPC: No space left on device",
        block,
    ), block


def _tiny_tmpfs(where: Path, free_bytes: int) -> bool:
    """Mount a 64 KiB tmpfs at `where` and fill it but `free_bytes` (False: cannot)."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        return False
    stat = os.statvfs(where)
    (where / "filler").write_bytes(b"x" * (stat.f_bavail * stat.f_frsize - free_bytes))
    return True


def test_a_recorder_whose_disk_fills_keeps_what_it_wrote(tmp_path: Path, team: str) -> None:
    """A file system with room for a few lines: they stay, whole; the rest is reported."""
    disk = tmp_path / "disk"
    if not _tiny_tmpfs(disk, 4096):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        config = _config(tmp_path, team, path=disk / "hello.jsonl")
        code, text = _run(config, tmp_path)
        assert code == 0, text[-4000:]
        _assert_one_error_line(text)
        block = text[text.index("==== mission") :]
        found = re.search(r"stopped writing (\S+) after (\d+) message\(s\)", block)
        assert found, block
        lines = Path(found.group(1)).read_text().splitlines()
        assert len(lines) == int(found.group(2)) >= 1, (len(lines), block)
        for line in lines:  # whole lines only: no half line at the end
            json.loads(line)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_member_started_by_hand_goes_on_without_an_absent_optional_recorder(
    tmp_path: Path, mosquitto, team: str
) -> None:
    """No recorder online: the member waits its --wait-services, says in one line that it
    starts without the optional observer, and does its mission (a required recorder
    stops it instead: tests/integration/test_services_wait.py)."""
    config = tmp_path / "solo.toml"
    config.write_text(
        f'[team]\nname = "{team}"\n\n[mission]\nkind = "hello"\ntimeout_s = 60\n\n'
        '[[agents]]\nid = "alpha"\nkind = "hello"\npeers = []\n\n'
        '[[agents]]\nid = "recorder"\nkind = "recorder"\nrole = "service"\npath = "r.jsonl"\n'
    )
    out = subprocess.run(
        teamtree_cmd("agent", "--config", str(config), "--id", "alpha",
                     "--broker", mosquitto.url, "--wait-services", "2"),
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    said = [line for line in out.stdout.splitlines() if "starting without" in line]
    assert said == [
        "alpha: starting without the optional observer(s) recorder (not online after 2 s): "
        "they miss this member's messages until they are back"
    ], out.stdout
    assert "agent.online" in out.stderr, out.stderr[-2000:]


def test_teamtree_record_on_a_full_disk_says_so_once_and_keeps_watching(
    tmp_path: Path, mosquitto, team: str
) -> None:
    """``teamtree record`` (compose's recorder) writes to /dev/full beside a chatty echo
    service: one line, no traceback, and the end says the recording is incomplete."""
    config = tmp_path / "echo.toml"
    config.write_text(
        f'[team]\nname = "{team}"\n\n[[agents]]\nid = "e1"\nkind = "echo"\n'
        'role = "service"\ncount_hz = 20\n'
    )
    output = tmp_path / "full.jsonl"
    output.symlink_to("/dev/full")
    echo = subprocess.Popen(
        teamtree_cmd("agent", "--config", str(config), "--id", "e1", "--broker", mosquitto.url),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        out = subprocess.run(
            teamtree_cmd("record", "--broker", mosquitto.url, "--team", team,
                         "-o", str(output), "--duration", "3"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        echo.terminate()
        echo.wait(30)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    said = [line for line in out.stderr.splitlines() if "cannot write" in line]
    assert said == [
        f"teamtree record: cannot write {output}: ENOSPC: No space left on device; "
        "0 message(s) written, recording no more"
    ], out.stderr[-3000:]
    found = re.search(r"recording INCOMPLETE: 0 of (\d+) messages written", out.stdout)
    assert found and int(found.group(1)) > 1, out.stdout


def test_a_required_recorder_that_cannot_open_its_file_fails_the_mission(
    tmp_path: Path, team: str
) -> None:
    """Its path lies under a file (/dev/full): the recorder stays up and says why once;
    the run stops and fails, as its entry asks for a complete recording."""
    config = _config(tmp_path, team, extra="required = true", path=Path("/dev/full/r.jsonl"))
    code, text = _run(config, tmp_path)
    assert code == 1, text[-4000:]
    error = _assert_one_error_line(text)
    assert "/dev/full" in error and "EEXIST" in error, error
    assert "EEXIST: File exists; stopping (its entry says required = true)" in text, text[-4000:]
    assert "mission complete" not in text
    block = text[text.index("==== mission") :]
    assert "Mission FAILED: the required recording is incomplete (recorder stopped" in block, block
