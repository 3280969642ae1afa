"""Agent kinds as plugins: the example package under examples/ is pip-installed into
this test environment, `teamtree kinds` lists it, and a config naming its kind runs a
mission through `teamtree run` against mosquitto. A config naming a kind nobody
installed fails with an error naming it and the installed kinds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, teamtree_cmd
from tests.vda5050_support import read_records, team_config

pytestmark = [pytest.mark.integration, pytest.mark.vda5050]

PLUGIN = REPO / "examples" / "teamtree-dwell-driver"

AGENTS = """
[[agents]]
id = "r1"
kind = "robot"
profile = "pr2"
driver = "r1-driver"
metric = "distance"
start_timeout_s = 1.0

[[agents]]
id = "r1-driver"
kind = "{kind}"
role = "service"
dwell_s = 0.3
objects = {{ crate = [0.3, 0.0, 0.8], box = [0.5, 0.2, 0.8] }}
"""


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def dwell_plugin() -> Iterator[None]:
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    done = _pip("install", "--no-deps", *isolation, str(PLUGIN))
    assert done.returncode == 0, done.stderr
    try:
        yield
    finally:
        _pip("uninstall", "-y", "teamtree-dwell-driver")


def test_kinds_lists_builtin_and_plugin_kinds(dwell_plugin) -> None:
    out = subprocess.run(teamtree_cmd("kinds", "--check"), capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert "teamtree_dwell.driver:DwellDriverAgent" in lines["dwell_driver"]
    assert "(teamtree-dwell-driver 0.1.0)" in lines["dwell_driver"]
    for kind in ("robot", "sim_driver", "vda5050_driver", "world", "recorder"):
        assert lines[kind].endswith("ok"), lines[kind]


def test_config_with_plugin_kind_runs(dwell_plugin, mosquitto, team, tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl"
    config = team_config(tmp_path / "team.toml", team, "THEN(crate, box)",
                         AGENTS.format(kind="dwell_driver"), record)  # fmt: skip
    run = subprocess.run(teamtree_cmd("run", str(config), "--broker", mosquitto.url),
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    records = read_records(record)
    done = [r["body"]["node"] for r in records
            if r.get("kind") == "node.transition" and r["body"]["status"] == "done"]  # fmt: skip
    assert len(done) == 2
    finished = [r for r in records if r.get("kind") == "behaviour.finished"]
    assert {r["sender"] for r in finished} == {"r1-driver"} and len(finished) == 2


def test_unknown_kind_names_it_and_the_installed_ones(team, tmp_path: Path) -> None:
    config = team_config(tmp_path / "team.toml", team, "crate",
                         AGENTS.format(kind="dwel_driver"), tmp_path / "run.jsonl")  # fmt: skip
    run = subprocess.run(teamtree_cmd("run", str(config)), capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == 2
    assert "[r1-driver.kind]" in run.stderr, run.stderr  # the entry named by its id
    assert "unknown agent kind 'dwel_driver'" in run.stderr
    assert "installed kinds: " in run.stderr and "robot" in run.stderr
