"""Kitting episodes and factory jobs given to running teams with ``teamtree submit``.

Each serving team runs as ``teamtree run`` (a process tree) on mosquitto; the queue
starts the mission's agents (the cobot and the simulated human; the job source and the
factory robots) as processes per mission. Outcomes are judged from ``submit --wait``
(its exit code and line) and ``teamtree missions --json``.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, teamtree_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class ServingTeam:
    """``teamtree run CONFIG`` for a config that serves missions, and the CLI against it."""

    def __init__(self, tmp_path: Path, url: str, config: str, team: str):
        self.tmp_path, self.url, self.team = tmp_path, url, team
        self.log = tmp_path / "team.log"
        self.proc = subprocess.Popen(
            teamtree_cmd("run", str(REPO / "configs" / config), "--broker", url),
            stdout=self.log.open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            teamtree_cmd(*args, "--broker", self.url, "--team", self.team),
            capture_output=True, text=True, timeout=timeout, cwd=self.tmp_path,
        )  # fmt: skip

    def submit(self, name: str, text: str, *flags: str) -> subprocess.CompletedProcess[str]:
        path = self.tmp_path / f"{name}.toml"
        path.write_text(text)
        return self.cli("submit", str(path), "--timeout", "60", *flags)

    def row(self, mission: str) -> dict:
        out = self.cli("missions", "--json", timeout=60)
        assert out.returncode == 0, out.stderr
        return next(r for r in json.loads(out.stdout) if r["id"] == mission)

    def why(self, out: subprocess.CompletedProcess[str]) -> str:
        return out.stdout + out.stderr + self.log.read_text()[-3000:]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(60)


@pytest.mark.timeout(300)
def test_a_kitting_team_takes_an_episode(tmp_path: Path, mosquitto) -> None:
    """Seed 001: an episode submitted to the serving kitting team (allocation service
    up, cobot and human on call) runs to a complete kit; `submit --wait` exits 0 and
    quotes the cobot's own verdict. A wrong pattern is refused naming the key."""
    team = ServingTeam(tmp_path, mosquitto.url, "kitting_queue.toml", "kitting-queue")
    try:
        bad = team.submit("bad", '[mission]\nkind = "kitting"\npattern = ["green", "red"]\n')
        assert bad.returncode == 2 and "[mission.pattern]" in bad.stderr, team.why(bad)
        episode = (REPO / "configs" / "missions" / "kitting_episode.toml").read_text()
        out = team.submit("episode", episode, "--wait")
        assert out.returncode == 0, team.why(out)
        mission, said = out.stdout.strip().splitlines()[0], out.stdout.strip().splitlines()[-1]
        assert said.startswith(f"{mission}: done in ") and "kit complete" in said, said
        row = team.row(mission)
        assert row["kind"] == "kitting" and row["state"] == "done", row
        assert sorted(row["members"]) == ["cobot", "human"], row
        log = team.log.read_text()
        assert "pattern_correct=True" in log, log[-3000:]
        print(said)
    finally:
        team.stop()


@pytest.mark.timeout(300)
def test_a_factory_team_does_its_jobs_and_fails_an_impossible_one(
    tmp_path: Path, mosquitto
) -> None:
    """Seed 002: two jobs submitted to the serving factory (job 1 by assembly, job 4
    solo) are both done and `submit --wait` exits 0; a mission with a job no robot set
    in reach can do (job 3(c), a 9-unit table, and no L robot) exits 1 naming the job
    and why. A job the factory does not know is refused naming the key."""
    team = ServingTeam(tmp_path, mosquitto.url, "factory_queue.toml", "factory-queue")
    head = '[mission]\nkind = "factory"\ntimeout_s = 60\nmethod = 2\ncomm_range = 1.5\nttl = 1\n'
    try:
        bad = team.submit("bad", head + 'jobs = [{ job = "job9" }]\n')
        assert bad.returncode == 2 and "[mission.jobs[0].job]" in bad.stderr, team.why(bad)
        jobs = (REPO / "configs" / "missions" / "factory_jobs.toml").read_text()
        out = team.submit("jobs", jobs, "--wait")
        assert out.returncode == 0, team.why(out)
        mission, said = out.stdout.strip().splitlines()[0], out.stdout.strip().splitlines()[-1]
        assert said.startswith(f"{mission}: done in ") and "2 of 2 jobs done" in said, said
        row = team.row(mission)
        assert row["kind"] == "factory" and row["state"] == "done", row
        assert sorted(row["members"]) == ["jobs", "m1", "o1", "s1", "s2"], row
        print(said)

        impossible = (
            head + 'jobs = [{ job = "job4", robot = "s2" }, { job = "job3c", robot = "s1" }]\n'
        )
        out = team.submit("impossible", impossible, "--wait")
        assert out.returncode == 1, team.why(out)
        mission, said = out.stdout.strip().splitlines()[0], out.stdout.strip().splitlines()[-1]
        assert said.startswith(f"{mission}: failed in "), said
        assert "1 of 2 jobs done" in said and "job3c" in said and "impossible" in said, said
        assert "timed out" not in said, said
        row = team.row(mission)
        assert row["state"] == "failed" and "job3c" in row["reason"], row
        print(said)
    finally:
        team.stop()
