"""Argument types shared by the ``teamtree`` subcommands: each turns bad input into a
usage error that says what is wrong (argparse prints it with the usage, exit 2)."""

from __future__ import annotations

import argparse
import math
import os
import tomllib
from typing import Any

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


def _number_of_seconds(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None


def seconds(value: str) -> float:
    """A positive, finite number of seconds."""
    number = _number_of_seconds(value)
    if not 0 < number < math.inf:
        raise argparse.ArgumentTypeError(f"{value!r} must be positive and finite")
    return number


def seconds_or_zero(value: str) -> float:
    """A finite number of seconds, 0 or more."""
    number = _number_of_seconds(value)
    if not 0 <= number < math.inf:
        raise argparse.ArgumentTypeError(f"{value!r}: seconds must be 0 or more")
    return number


def wait_seconds(value: str) -> float:
    """A number of seconds to wait, 0 or more (0: do not wait)."""
    number = _number_of_seconds(value)
    if not 0 <= number < math.inf:
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


def listen_port(value: str) -> int:
    """A TCP port to listen on, 0-65535; 0 lets the system pick a free one."""
    if value == "0":
        return 0
    try:
        return port(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a TCP port (1-65535, or 0 for any free port)"
        ) from None


#: the ``--log-format`` and ``--log-level`` choices every command offers
LOG_FORMATS = ("auto", "plain", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")


def log_flags(p: argparse.ArgumentParser, level: str = "warning") -> None:
    """Add ``--log-format`` (default auto) and ``--log-level`` (default `level`)."""
    p.add_argument(
        "--log-format", choices=LOG_FORMATS, default="auto",
        help="log lines as key=value (plain) or JSON (default: auto)",
    )  # fmt: skip
    p.add_argument("--log-level", choices=LOG_LEVELS, default=level, help=f"default: {level}")


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
#: environment variables naming the broker and the team, after the flags
BROKER_ENV = "TEAMTREE_BROKER"
TEAM_ENV = "TEAMTREE_TEAM"


def find_team(
    command: str, team: str | None, broker: str | None, config_path: str | None = None
) -> tuple[str, Endpoint]:
    """The team and broker a command talks to, found the same way by every command:
    the flags (``--team``, ``--broker``, and ``--config``'s ``[team]``), then the
    environment (``$TEAMTREE_TEAM``, ``$TEAMTREE_BROKER``), then the running
    ``teamtree run`` of this directory (its current-run file; its broker only when it
    runs that team), then the local default broker. ConfigError (exit 2) saying what
    to give when no team is found or the broker URL is bad."""
    if config_path:
        config = load_config(config_path)
        team = team or config.team
        if broker is None and config.broker is not None:
            broker = config.broker.urls
    team = team or os.environ.get(TEAM_ENV) or None
    broker = broker or os.environ.get(BROKER_ENV) or None
    from teamtree.agents.runtime.current_run import read_current_run  # not on an agent's path

    current = read_current_run()
    if current is not None and team in (None, current.team):
        team = current.team
        broker = broker or current.broker
    if team is None:
        raise ConfigError(
            f"{command} needs a team: give --team or set ${TEAM_ENV}, or start "
            "`teamtree run` in this directory"
        )
    try:
        return validate_id(team, "team"), parse_endpoint(broker or DEFAULT_BROKER)
    except (ConfigError, TopicError) as exc:
        raise ConfigError(f"{command}: bad broker or team: {exc}") from None


def resolve_team(args: argparse.Namespace) -> tuple[str, Endpoint]:
    """``find_team`` for parsed arguments (``--team``, ``--broker``, optional
    ``--config``); sets ``args.team`` and ``args.broker`` to what was found."""
    team, endpoint = find_team(
        args.command, args.team, args.broker, getattr(args, "config", None) or None
    )
    args.team, args.broker = team, endpoint.urls
    return team, endpoint


def broker_flags(p: argparse.ArgumentParser) -> None:
    """``--broker`` and ``--team``, both optional: ``find_team`` fills them in."""
    p.add_argument(
        "--broker", type=broker_url,
        help=f"broker URL (default: ${BROKER_ENV}, else the running `teamtree run`'s, else "
        f"{DEFAULT_BROKER})",
    )  # fmt: skip
    p.add_argument(
        "--team", type=team_id,
        help=f"team id (default: ${TEAM_ENV}, else the running `teamtree run`'s)",
    )  # fmt: skip


def client_tls() -> Any:
    """The TLS context for a client from ``TEAMTREE_TLS_*`` (None: plain TCP)."""
    from teamtree.broker.tls import TlsSettings, client_context

    settings = TlsSettings.from_env()
    return client_context(settings) if settings is not None else None
