"""Missions on a broker that outlives them: identity, resume, honest failure, no hangs.

Every test runs ``teamtree`` commands as processes against a real mosquitto and
judges them by their exit codes, their output and the recordings.
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

pytestmark = pytest.mark.integration

#: two leaves of seed 000's tea party, so a mission takes seconds, not a minute
SMALL_TREE = 'tree = "AND(cup, sandwich)"'


def small_tea_party(tmp_path: Path) -> Path:
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = re.sub(r"^tree = .*$", SMALL_TREE, text, count=1, flags=re.M)
    path = tmp_path / "tea.toml"
    path.write_text(text)
    return path


def run(tmp_path: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        teamtree_cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=tmp_path
    )


def mission_id(stdout: str) -> str:
    match = re.search(r"(?:starting|resuming) mission (\S+)", stdout)
    assert match, stdout[-3000:]
    return match.group(1)


def done_leaves(recording: Path) -> list[tuple[str, str]]:
    """(agent, node) of every leaf a member finished, in the order the recorder saw."""
    out = []
    for line in recording.read_text().splitlines():
        rec = json.loads(line)
        if rec["kind"] == "node.transition" and rec["body"].get("status") == "done":
            out.append((rec["body"]["agent"], rec["body"]["node"]))
    return out


def working(lines: list[str]) -> list[dict]:
    recs = [json.loads(line) for line in lines]
    return [
        r for r in recs if r["kind"] == "node.transition" and r["body"].get("status") == "working"
    ]


@pytest.mark.slow
def test_a_second_mission_does_its_full_work_and_resume_continues_the_first(
    tmp_path: Path, mosquitto
) -> None:
    config = small_tea_party(tmp_path)
    first = run(tmp_path, "run", str(config), "--broker", mosquitto.url)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    m1 = mission_id(first.stdout)
    assert f"==== mission {m1}: SUCCEEDED" in first.stdout, first.stdout[-3000:]
    rec1 = tmp_path / "runs" / f"tea_party_s1.{m1}.jsonl"
    assert sorted(n for _, n in done_leaves(rec1)) == ["root/0", "root/1"]

    # resuming continues from the state the mission left: nothing is done twice
    lines_before = len(rec1.read_text().splitlines())
    resumed = run(tmp_path, "run", str(config), "--broker", mosquitto.url, "--resume", m1)
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-2000:]
    assert mission_id(resumed.stdout) == m1
    appended = rec1.read_text().splitlines()[lines_before:]
    assert appended, "the resumed mission appends to its own recording"
    assert working(appended) == [], "resuming a finished mission re-ran behaviours"

    # a new mission on the same broker starts from nothing and does its full work
    second = run(tmp_path, "run", str(config), "--broker", mosquitto.url)
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-2000:]
    m2 = mission_id(second.stdout)
    assert m2 != m1
    rec2 = tmp_path / "runs" / f"tea_party_s1.{m2}.jsonl"
    assert sorted(n for _, n in done_leaves(rec2)) == ["root/0", "root/1"]
    assert rec1.exists(), "the first mission's recording was overwritten"
    assert os.readlink(tmp_path / "runs" / "tea_party_s1.jsonl") == rec2.name

    # the first mission's kept state is gone now: resuming it is refused, not faked
    again = run(tmp_path, "run", str(config), "--broker", mosquitto.url, "--resume", m1)
    assert again.returncode == 2, again.stdout[-3000:] + again.stderr[-2000:]
    assert f"cannot resume mission {m1}" in again.stderr and m2 in again.stderr, again.stderr


@pytest.mark.slow
def test_an_interrupted_mission_resumed_finishes_without_redoing_its_done_leaf(
    tmp_path: Path, mosquitto
) -> None:
    """Ctrl-C after the first leaf is done: ``run`` exits 130 (not done, not claimed
    done); ``run --resume ID`` finishes the mission, works only the leaf left, and
    exits 0."""
    config = small_tea_party(tmp_path)
    # in sequence (THEN), the world at 2x: the second leaf is still to do when the first
    # is done
    text = config.read_text().replace(SMALL_TREE, 'tree = "THEN(cup, sandwich)"')
    config.write_text(text.replace("time_factor = 8.0", "time_factor = 2.0"))
    out = tmp_path / "first.log"
    with out.open("w") as log:
        first = subprocess.Popen(
            teamtree_cmd("run", str(config), "--broker", mosquitto.url),
            stdout=log, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        done: list[tuple[str, str]] = []
        while not done:
            assert first.poll() is None, out.read_text()[-4000:]
            assert time.monotonic() < deadline, out.read_text()[-4000:]
            time.sleep(0.2)
            if re.search(r"starting mission \S+", out.read_text()):
                m1 = mission_id(out.read_text())
                recording = tmp_path / "runs" / f"tea_party_s1.{m1}.jsonl"
                done = done_leaves(recording) if recording.exists() else []
        first.send_signal(signal.SIGINT)
        assert first.wait(60) == 130, out.read_text()[-4000:]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    text = out.read_text()
    assert "SUCCEEDED" not in text, text[-3000:]
    done_first = {n for _, n in done_leaves(recording)}
    assert len(done_first) == 1, done_first  # interrupted before the second was done

    lines_before = len(recording.read_text().splitlines())
    resumed = run(tmp_path, "run", str(config), "--broker", mosquitto.url, "--resume", m1)
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-2000:]
    assert mission_id(resumed.stdout) == m1
    assert f"==== mission {m1}: SUCCEEDED" in resumed.stdout, resumed.stdout[-3000:]
    appended = recording.read_text().splitlines()[lines_before:]
    redone = {r["body"]["node"] for r in working(appended)}
    assert not redone & done_first, f"resuming re-ran {redone & done_first}"
    done_after = {n for _, n in done_leaves(recording)}
    assert done_after == {"root/0", "root/1"}, done_after


def test_a_typo_under_mission_exits_2_naming_file_table_and_key(tmp_path: Path) -> None:
    config = small_tea_party(tmp_path)
    config.write_text(config.read_text().replace("timeout_s = 240", "timeout_s = 240\ntre = 1"))
    out = run(tmp_path, "run", str(config), timeout=60)
    assert out.returncode == 2
    assert str(config) in out.stderr and "[mission.tre]" in out.stderr, out.stderr


UNREACHABLE = "mqtt://127.0.0.1:1"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{config}", "--broker", UNREACHABLE],
        ["agent", "--config", "{config}", "--id", "pr2", "--broker", UNREACHABLE],
        ["attach", "--config", "{config}", "--id", "pr2", "--broker", UNREACHABLE],
        ["human", "--id", "alice", "--team", "t", "--broker", UNREACHABLE],
        ["disturb", "A1", "blocked_edge", "--edge", "a,b", "--team", "t", "--broker", UNREACHABLE],
        ["tree", "{config}", "--broker", UNREACHABLE],
        ["record", "--team", "t", "-o", "r.jsonl", "--broker", UNREACHABLE],
        ["monitor", "--team", "t", "--broker", UNREACHABLE],
        ["submit", "{config}", "--team", "t", "--broker", UNREACHABLE],
        ["missions", "--team", "t", "--broker", UNREACHABLE],
        ["cancel", "m1", "--team", "t", "--broker", UNREACHABLE],
    ],
    ids=lambda a: a[0],
)
def test_an_unreachable_broker_is_reported_within_seconds(tmp_path: Path, args: list[str]) -> None:
    config = small_tea_party(tmp_path)
    argv = [a.format(config=config) for a in args]
    started = time.monotonic()
    out = run(tmp_path, *argv, timeout=30)
    took = time.monotonic() - started
    assert out.returncode not in (0, None), out.stdout + out.stderr
    assert f"cannot reach the broker at {UNREACHABLE}" in out.stderr, out.stderr
    assert "refused" in out.stderr
    print(f"{args[0]}: exit {out.returncode} after {took:.1f} s")


def test_a_tree_whose_only_robot_dies_fails_with_the_reason(tmp_path: Path, mosquitto) -> None:
    text = small_tea_party(tmp_path).read_text()
    # only the PR2 and its driver: the Baxter, its driver and its world body go
    text = re.sub(r'\[\[agents\]\]\nid = "baxter"\n.*?(?=\n\[\[agents\]\])', "", text, flags=re.S)
    text = re.sub(
        r'\[\[agents\]\]\nid = "baxter-driver"\n.*?(?=\n\[\[agents\]\])', "", text, flags=re.S
    )
    text = re.sub(r"\[agents\.robots\.baxter\]\n(?:.+\n)+", "", text)
    config = tmp_path / "solo.toml"
    config.write_text(text)
    proc = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert proc.stdout is not None
    lines, pid = [], None
    for line in proc.stdout:
        lines.append(line)
        if m := re.search(r"started member pr2 \(pid (\d+)\)", line):
            pid = int(m.group(1))
        if pid and "mission.started" in line:
            os.kill(pid, 9)  # the only robot that can do the tree dies
            break
    rest, err = proc.communicate(timeout=120)
    out = "".join(lines) + rest
    assert pid is not None, out[-3000:]
    assert proc.returncode == 1, out[-3000:] + err[-2000:]
    assert "Mission FAILED" in out and "member pr2 exited with code -9" in out, out[-3000:]
    assert re.search(r"==== mission \S+: FAILED", out), out[-3000:]


@pytest.mark.slow
def test_an_ltl_mission_made_impossible_by_a_blocked_edge_fails_saying_why(
    tmp_path: Path, mosquitto
) -> None:
    """Study 1 needs a delivery to p3, whose only corridor is c3-p3. Blocked for every
    robot (``teamtree disturb``) while the team works, no plan completes the formula:
    ``run`` exits 1 and its summary names the impossibility and the corridor."""
    text = (REPO / "configs" / "hospital_study1.toml").read_text()
    # slower than the config's 25x, so the block lands well before anyone reaches p3
    text = re.sub(r"^time_factor = .*$", "time_factor = 5.0", text, count=1, flags=re.M)
    config = tmp_path / "study1.toml"
    config.write_text(text)
    proc = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "ltl.plan_received" in line:  # the team is at work
            break
    disturb = run(
        tmp_path, "disturb", "DR", "blocked_edge", "--edge", "c3,p3",
        "--broker", mosquitto.url, "--team", "hospital-study1", timeout=60,
    )  # fmt: skip
    rest, err = proc.communicate(timeout=120)
    out = "".join(lines) + rest
    assert disturb.returncode == 0, disturb.stdout + disturb.stderr + out[-3000:]
    assert proc.returncode == 1, out[-3000:] + err[-2000:]
    assert re.search(r"==== mission \S+: FAILED", out), out[-3000:]
    summary = out[out.index("Mission FAILED") :]
    assert "impossible" in summary and "blocked corridors: c3-p3" in summary, summary
