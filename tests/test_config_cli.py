"""Configs and the CLI: bad input gets exit code 2 and a message naming what is wrong."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from teamtree.agents import load_config, validate_kinds
from teamtree.agents.cli.args import seconds, seconds_or_zero, wait_seconds
from teamtree.broker import ConfigError
from tests.conftest import scaled

REPO = Path(__file__).resolve().parent.parent
GOOD = """
[team]
name = "t"
[mission]
kind = "hello"
[[agents]]
id = "a"
kind = "hello"
"""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "teamtree.agents", *args],
        capture_output=True, text=True, timeout=scaled(60), cwd=cwd,
    )  # fmt: skip


def test_shipped_configs_load() -> None:
    for path in sorted((REPO / "configs").glob("*.toml")):
        validate_kinds(load_config(path))


@pytest.mark.parametrize(
    ("text", "key", "fix"),
    [
        (GOOD.replace('name = "t"', 'name = "a/b"'), "team.name", "letters"),
        (GOOD.replace('name = "t"', "name = 3"), "team.name", "expected an id string"),
        (GOOD + "[runtime]\ntick_hz = -1\n", "runtime.tick_hz", "positive"),
        (GOOD + "[runtime]\ntickhz = 5\n", "runtime", "unknown key(s) tickhz"),
        (GOOD + "[runtime]\nnice = 20\n", "runtime.nice", "from -20 (ahead of other work) to 19"),
        (GOOD + "[runtime]\nnice = -21\n", "runtime.nice", "from -20"),
        (GOOD + "[runtime]\nnice = -2.5\n", "runtime.nice", "a whole number"),
        (GOOD + "[runtime]\nnice = \"high\"\n", "runtime.nice", "a whole number"),
        (GOOD.replace('kind = "hello"\n[[', 'kind = "hello"\ntimeout_s = "soon"\n[['), "mission.timeout_s", "positive"),
        (GOOD + '[[agents]]\nid = "a"\nkind = "hello"\n', "agents[1].id", "used twice"),
        (GOOD.replace('id = "a"\nkind = "hello"', 'id = "a"\nkind = "robot9"'), "agents[0].kind", "unknown agent kind"),
        (GOOD.replace('id = "a"\nkind = "hello"', 'id = "a"\nkind = "hello"\nrounds = 0'), "agents[0].rounds", ">= 1"),
        (GOOD.replace('name = "t"', 'name = "t"\nbroker = "http://x"'), "team.broker", "mqtt://"),
        (GOOD + "[extra]\n", "extra", "unknown top-level"),
        ("[team\n", None, "not valid TOML"),
    ],
)  # fmt: skip
def test_bad_config_names_key_and_fix(tmp_path: Path, text: str, key: str | None, fix: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        validate_kinds(load_config(path))
    assert info.value.key == key
    assert fix in str(info.value) and str(path) in str(info.value)


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(GOOD + "[runtime]\nkeepalive_s = 0\n")
    out = cli("run", str(path))
    assert out.returncode == 2
    assert "runtime.keepalive_s" in out.stderr and "Traceback" not in out.stderr
    out = cli("agent", "--config", str(tmp_path / "missing.toml"), "--id", "a")
    assert out.returncode == 2 and "file not found" in out.stderr


def test_agent_without_broker_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(GOOD)
    out = cli("agent", "--config", str(path), "--id", "a")
    assert out.returncode == 2 and "--broker" in out.stderr
    out = cli("agent", "--config", str(path), "--id", "zz", "--broker", "mqtt://127.0.0.1:1")
    assert out.returncode == 2 and "no agent 'zz'" in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--frobnicate"],
        ["run"],
        ["run", "x.toml", "--bogus"],
        ["agent", "--config", "x.toml", "--id", "a/b"],
        ["agent", "--config", "x.toml", "--id", "a", "--broker", "localhost"],
        ["broker", "--port", "99999"],
        ["broker", "--port", "0"],
        ["web", "--port", "-1"],
        ["nosuchcommand"],
    ],
)
def test_bad_cli_gives_usage_never_a_traceback(args: list[str]) -> None:
    out = cli(*args)
    assert out.returncode == 2
    assert "usage:" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("kind", [seconds, seconds_or_zero, wait_seconds])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "soon"])
def test_a_number_of_seconds_must_be_a_finite_number(kind, value: str) -> None:
    """A NaN timeout never expires and an infinite one never ends: both are refused
    with the value named, as a negative or a word is."""
    with pytest.raises(argparse.ArgumentTypeError, match=repr(value)):
        kind(value)


def test_seconds_flags_take_what_they_name() -> None:
    assert seconds("2.5") == 2.5 and seconds_or_zero("0") == 0.0 and wait_seconds("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match="positive"):
        seconds("0")


def test_a_nan_timeout_is_a_usage_error() -> None:
    out = cli("missions", "--timeout", "nan")
    assert out.returncode == 2 and "'nan' must be positive and finite" in out.stderr


def test_help_explains_every_subcommand() -> None:
    out = cli("--help")
    assert out.returncode == 0
    for command in ("run", "agent", "broker"):
        assert command in out.stdout
        sub = cli(command, "--help")
        assert sub.returncode == 0 and "usage: teamtree" in sub.stdout


def test_one_entry_is_checked_alone(tmp_path: Path) -> None:
    """``teamtree agent --id X`` checks X's entry only (validate_kinds(only=X)): another
    entry's mistake is that entry's own process's error, not every process's."""
    path = tmp_path / "team.toml"
    path.write_text(GOOD + '[[agents]]\nid = "b"\nkind = "hello"\nrounds = 0\n')
    config = load_config(path)
    validate_kinds(config, only="a")
    with pytest.raises(ConfigError) as info:
        validate_kinds(config, only="b")
    assert info.value.key == "agents[1].rounds"
    with pytest.raises(ConfigError) as info:
        validate_kinds(config)
    assert info.value.key == "agents[1].rounds"
    with pytest.raises(ConfigError, match="no agent 'c'"):
        validate_kinds(config, only="c")


def test_a_config_read_again_unchanged_is_not_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text(GOOD)
    first = load_config(path)
    assert load_config(path) is first
    path.write_text(GOOD.replace('name = "t"', 'name = "u"'))  # same size, new text
    assert load_config(path).team == "u"
    path.write_text("[team\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
