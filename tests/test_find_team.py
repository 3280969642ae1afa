"""Every command finds broker and team one way (``find_team``), and each run keeps its
own current-run file (``teamtree.agents.runtime.current_run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from teamtree.agents.cli.args import find_team
from teamtree.agents.runtime.config import load_config
from teamtree.agents.runtime.current_run import (
    CurrentRun,
    clear_current_run,
    read_current_run,
    write_current_run,
)
from teamtree.agents.runtime.kinds import check_overrides
from teamtree.broker import ConfigError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("TEAMTREE_BROKER", "TEAMTREE_TEAM", "TEAMTREE_RUN_FILE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_flags_then_environment_then_the_current_run(here: Path, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="needs a team"):
        find_team("monitor", None, None)
    write_current_run(CurrentRun("mqtt://127.0.0.1:1999", "ran", "m1", pid=os.getpid()))
    team, endpoint = find_team("monitor", None, None)
    assert (team, endpoint.url) == ("ran", "mqtt://127.0.0.1:1999")
    monkeypatch.setenv("TEAMTREE_TEAM", "envteam")
    monkeypatch.setenv("TEAMTREE_BROKER", "mqtt://127.0.0.1:1888")
    team, endpoint = find_team("submit", None, None)
    assert (team, endpoint.url) == ("envteam", "mqtt://127.0.0.1:1888")
    team, endpoint = find_team("submit", "flagteam", "mqtt://127.0.0.1:1777")
    assert (team, endpoint.url) == ("flagteam", "mqtt://127.0.0.1:1777")
    monkeypatch.delenv("TEAMTREE_BROKER")
    # another team than the current run's: not the run's broker, the default one
    assert find_team("web", None, None)[1].url == "mqtt://127.0.0.1:1883"


def test_a_run_ending_leaves_the_other_runs_file(here: Path) -> None:
    mine = CurrentRun("mqtt://127.0.0.1:1", "a", "m1", pid=os.getpid())
    gone = _dead_pid()
    write_current_run(mine)
    write_current_run(CurrentRun("mqtt://127.0.0.1:2", "b", "m2", pid=gone))
    # the newest file's run is dead: the current run is the live one
    assert read_current_run() == mine
    clear_current_run(gone)
    assert read_current_run() == mine
    assert (here / ".teamtree" / "runs" / f"{os.getpid()}.json").exists()
    clear_current_run(os.getpid())
    assert read_current_run() is None
    assert not (here / ".teamtree" / "current.json").exists()


def test_a_set_key_nobody_accepts_names_who_accepts_what() -> None:
    config = load_config(REPO / "configs" / "tea_party_s1.toml")
    check_overrides(config, {"time_factor": 1.0, "metric": "distance"})
    with pytest.raises(ConfigError) as caught:
        check_overrides(config, {"bogus": 1})
    assert caught.value.key == "--set bogus"
    assert "metric (pr2, baxter); time_factor (world)" in str(caught.value)


def test_config_errors_name_agents_by_id(here: Path, capsys) -> None:
    from teamtree.agents.cli.app import main

    config = here / "team.toml"
    config.write_text(
        '[team]\nname = "t"\n[[agents]]\nid = "alpha"\nkind = "hello"\n'
        '[[agents]]\nid = "pr2"\nkind = "hello"\nrounds = 0\n'
    )
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert "[pr2.rounds]" in err and "agents[1]" not in err, err


def test_every_team_command_parses_without_team_or_broker(here: Path) -> None:
    """Team and broker are resolved after parsing, in one place, for every command."""
    from teamtree.agents.cli.app import build_parser

    parser = build_parser()
    for argv in (["web"], ["monitor"], ["record", "-o", "r.jsonl"], ["missions"],
                 ["cancel", "m1"], ["submit", "m.toml"], ["human", "--id", "alice"]):  # fmt: skip
        args = parser.parse_args(argv)
        assert args.team is None and args.broker is None, argv
