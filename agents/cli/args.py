"""Argument types shared by the ``teamtree`` subcommands: each turns bad input into a
usage error that says what is wrong (argparse prints it with the usage, exit 2)."""

from __future__ import annotations

import argparse
import os
import tomllib

from teamtree.agents.runtime.config import load_config
from teamtree.broker import ConfigError, TopicError
from teamtree.broker.endpoint import Endpoint, parse_endpoint
from teamtree.broker.topics import validate_id


def ident(value: str, what: str = "id") -> str:
    """A team or agent id."""
    try:
        return validate_id(value, what)
    except TopicError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def team_id(value: str) -> str:
    return ident(value, "team")


def agent_id(value: str) -> str:
    return ident(value, "agent id")


def mission_id(value: str) -> str:
    return ident(value, "mission id")


def agent_ids(value: str) -> list[str]:
    """A comma-separated list of agent ids, e.g. ``pr2,baxter``."""
    return [ident(part.strip(), "agent id") for part in value.split(",") if part.strip()]


def broker_url(value: str) -> str:
    """A broker URL such as ``mqtt://127.0.0.1:1883`` (returned as given)."""
    try:
        parse_endpoint(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("[broker] ")) from None
    return value


def seconds(value: str) -> float:
    """A positive number of seconds."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be positive")
    return number


def wait_seconds(value: str) -> float:
    """A number of seconds to wait, 0 or more (0: do not wait)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not number >= 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} must be 0 (do not wait) or more seconds")
    return number


#: environment variable with the default of ``--wait-services``
WAIT_SERVICES_ENV = "TEAMTREE_WAIT_SERVICES_S"


def wait_services_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--wait-services S``: how long a member waits for the team's services."""
    default = os.environ.get(WAIT_SERVICES_ENV, "60")  # a string: argparse checks it
    parser.add_argument(
        "--wait-services", type=wait_seconds, default=default, metavar="S",
        help="seconds a member waits for the config's services (world, drivers, recorder) "
        f"to be online before it starts, so the recording misses nothing (default "
        f"${WAIT_SERVICES_ENV} or 60; 0: do not wait)",
    )  # fmt: skip


def port(value: str) -> int:
    """A TCP port, 1-65535."""
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise argparse.ArgumentTypeError(f"{value!r} is not a TCP port (1-65535)")
    return int(value)


def setting(value: str) -> tuple[str, object]:
    """``KEY=VALUE``; the value is read as TOML (numbers, booleans, strings), else text."""
    key, sep, raw = value.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{value!r} is not KEY=VALUE")
    try:
        parsed: object = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = raw
    return key.strip(), parsed


DEFAULT_BROKER = "mqtt://127.0.0.1:1883"


def team_and_broker(
    command: str, team: str | None, broker: str | None, config_path: str | None
) -> tuple[str, Endpoint] | str:
    """Resolve ``--team``/``--broker``, falling back on ``--config``'s ``[team]``, then on
    the team of the last ``teamtree run`` here (its current-run file), then on the local
    default broker. Returns (team, endpoint), or an error line."""
    if config_path:
        try:
            config = load_config(config_path)
        except ConfigError as exc:
            return f"teamtree {command}: {exc}"
        team = team or config.team
        if broker is None and config.broker is not None:
            broker = config.broker.urls
    from teamtree.agents.runtime.current_run import read_current_run  # not on an agent's path

    current = read_current_run()
    if current is not None and team in (None, current.team):
        team = current.team
        broker = broker or current.broker
    if team is None:
        return f"teamtree {command}: give --team (or --config with a [team] name)"
    try:
        return team, parse_endpoint(broker or DEFAULT_BROKER)
    except ConfigError as exc:
        return f"teamtree {command}: bad --broker: {exc}"
