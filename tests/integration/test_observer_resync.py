"""The passive readers' re-sync on mosquitto: with the team in cluster mode (so its
members answer every reader's ``sync.request`` by re-publishing their retained state),
``monitor --once --json``, ``tree --broker`` and ``record`` started mid-mission still
read the team exactly once (re-published copies are dropped as duplicates; what the
broker kept is recorded as retained) and never show up as members. (On a RabbitMQ
cluster, where the re-sync is the only way in: tests/cluster.)
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, teamtree_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AGENTS = {"pr2", "baxter", "world", "recorder", "pr2-driver", "baxter-driver"}


def wait_for(path: Path, pattern: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not re.search(pattern, path.read_text(), re.M):
        assert proc.poll() is None, f"run ended before {pattern!r}:\n{path.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {pattern!r}:\n{path.read_text()[-3000:]}"
        time.sleep(0.1)


def test_readers_see_the_team_once_on_mosquitto_with_members_answering_resyncs(
    mosquitto, tmp_path: Path
) -> None:
    team = f"ors{int(time.time() * 1000) % 10**8}"
    config = tmp_path / "tea.toml"
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = text.replace('name = "tea-party-s1"', f'name = "{team}"')
    text = text.replace("[runtime]\n", "[runtime]\ncluster = true\n", 1)
    # the world at real time (not 8x): the readers start while work remains
    config.write_text(text.replace("time_factor = 8.0", "time_factor = 1.0"))
    out = tmp_path / "run.out"
    run = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        cwd=tmp_path, stdout=out.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    record = tmp_path / "late.jsonl"
    readers: list[subprocess.Popen] = []
    try:
        wait_for(out, r"^(pr2|baxter) .*behaviour\.finished", run, 120)
        common = ["--broker", mosquitto.url, "--team", team]
        readers += [
            subprocess.Popen(
                teamtree_cmd(*command, *common),
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for command in (
                ("monitor", "--once", "--json", "--wait", "1"),
                ("tree", str(config), "--wait", "1"),
                ("record", "-o", str(record), "--duration", "4"),
            )
        ]
        monitor, tree = (r.communicate(timeout=60) for r in readers[:2])
        assert run.wait(150) == 0, out.read_text()[-4000:]
        recorded = readers[2].communicate(timeout=60)
    finally:
        for proc in [run, *readers]:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(20)
    snap = json.loads(monitor[0])
    assert set(snap["agents"]) == AGENTS, snap["agents"].keys()  # no reader among them
    assert all(row["kind"] for row in snap["agents"].values()), snap["agents"]
    assert snap["mission"]["kind"] == "tasktree" and snap["mission"]["leaves"] == 7
    assert "(2 robot snapshot(s) read from" in tree[0], tree
    assert readers[2].returncode == 0 and "recorded" in recorded[0], recorded
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    keys = [(r["topic"], tuple(r["hlc"]), r["sender"]) for r in lines]
    assert len(keys) == len(set(keys)), "a re-published message was recorded twice"
    kept = [r for r in lines if r["retained"]]
    assert any(r["kind"] == "mission.tree" for r in kept), "the mission tree is kept state"
    presence = {r["sender"] for r in lines if r["topic"].split("/")[4] == "connection"}
    assert presence <= AGENTS, f"presence from non-members: {presence - AGENTS}"
    run_records = [json.loads(x) for x in (tmp_path / "runs" / "tea_party_s1.jsonl").open()]
    # the members answered the readers' requests (cluster mode on mosquitto) ...
    answers = {r["topic"].rsplit("/", 1)[1] for r in run_records if r["kind"] == "sync.done"}
    assert any(a.startswith("monitor-") for a in answers), answers
    assert any(a.startswith("tree-") for a in answers), answers
    # ... and the run's recorder, there from the start, saw the readers only as requests
    # (the launcher, `run`, publishes only its verdict: a mission.status)
    assert {r["kind"] for r in run_records if r["sender"] == "run"} <= {"mission.status"}
    readers_seen = {r["sender"] for r in run_records} - AGENTS - {"run"}
    assert readers_seen and all(
        r["kind"] == "sync.request" for r in run_records if r["sender"] in readers_seen
    ), readers_seen
