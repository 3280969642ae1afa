"""The ``teamtree`` command line.

Exit codes: 0 done, 1 the mission or an agent failed, 2 bad config or usage,
130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from teamtree.agents.config import load_config
from teamtree.agents.kinds import AGENT_KINDS, build_agent, validate_kinds
from teamtree.agents.launcher import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, Launcher
from teamtree.agents.log_setup import configure_logging
from teamtree.broker import ConfigError, TeamtreeError, TopicError
from teamtree.broker.endpoint import parse_endpoint
from teamtree.broker.local_broker import BrokerKind, make_local_broker
from teamtree.broker.topics import validate_id

LOG_FORMATS = ("auto", "plain", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")


def _team_id(value: str) -> str:
    try:
        return validate_id(value, "team")
    except TopicError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def _agent_id(value: str) -> str:
    try:
        return validate_id(value, "agent id")
    except TopicError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def _broker_url(value: str) -> str:
    try:
        parse_endpoint(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("[broker] ")) from None
    return value


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be positive")
    return number


def _port(value: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise argparse.ArgumentTypeError(f"{value!r} is not a TCP port (1-65535)")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``teamtree`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="teamtree",
        description="Run heterogeneous human-robot teams as agent processes over MQTT.",
        epilog="Start with: teamtree run configs/hello.toml",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def logging_flags(p: argparse.ArgumentParser, default_format: str) -> None:
        p.add_argument(
            "--log-format", choices=LOG_FORMATS, default=default_format,
            help=f"log lines as key=value (plain) or JSON (default: {default_format})",
        )  # fmt: skip
        p.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="default: info")

    run = sub.add_parser(
        "run",
        help="run a whole team from a config on this machine",
        description="Start a broker (unless the config or --broker names one), the services "
        "and every member agent as child processes; exit 0 when the mission ends.",
    )
    run.add_argument("config", help="team config (.toml), e.g. configs/hello.toml")
    run.add_argument("--broker", type=_broker_url, help="use this broker instead of starting one")
    run.add_argument(
        "--broker-kind", choices=[k.value for k in BrokerKind],
        help="local broker to start: mosquitto if installed (auto), mosquitto, or embedded",
    )  # fmt: skip
    run.add_argument("--timeout", type=_positive, help="mission timeout in seconds")
    logging_flags(run, "plain")

    agent = sub.add_parser(
        "agent",
        help="run one agent of a config (what compose and attach use)",
        description="Run the agent --id from --config until its mission ends or it is stopped.",
    )
    agent.add_argument("--config", required=True, help="team config (.toml)")
    agent.add_argument("--id", required=True, type=_agent_id, help="the agent's id in the config")
    agent.add_argument("--broker", type=_broker_url, help="broker URL, e.g. mqtt://127.0.0.1:1883")
    agent.add_argument("--team", type=_team_id, help="team id (default: the config's [team] name)")
    logging_flags(agent, "auto")

    broker = sub.add_parser(
        "broker",
        help="start a local MQTT broker",
        description="Start mosquitto (when installed) or the embedded amqtt broker and "
        "serve until Ctrl-C.",
    )
    broker.add_argument(
        "--kind", choices=[k.value for k in BrokerKind], default="auto", help="default: auto"
    )
    broker.add_argument("--port", type=_port, default=1883, help="default: 1883")
    broker.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    logging_flags(broker, "auto")
    return parser


async def _run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    validate_kinds(config)
    launcher = Launcher(
        config,
        broker=parse_endpoint(args.broker) if args.broker else None,
        broker_kind=BrokerKind(args.broker_kind) if args.broker_kind else None,
        timeout_s=args.timeout,
        log_format="json" if args.log_format == "json" else "plain",
        log_level=args.log_level,
    )
    return await launcher.run()


async def _agent(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    validate_kinds(config)
    endpoint = parse_endpoint(args.broker) if args.broker else config.broker
    if endpoint is None:
        raise ConfigError(
            "no broker given: pass --broker mqtt://HOST:PORT or set broker in [team]",
            path=str(config.path),
            key="team.broker",
        )
    agent = build_agent(config, args.id, endpoint=endpoint, team=args.team)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, agent.request_stop)
    loop.add_signal_handler(signal.SIGINT, agent.request_stop)
    async with agent:
        return await agent.run_until_stopped()


async def _broker(args: argparse.Namespace) -> int:
    broker = make_local_broker(args.kind, args.port, host=args.host)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    async with broker:
        print(f"{broker.kind.value} broker listening at {broker.endpoint.url}", flush=True)
        await stop.wait()
    return 0


COMMANDS = {"run": _run, "agent": _agent, "broker": _broker}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``teamtree`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_format, level=args.log_level, agent=getattr(args, "id", None))
    try:
        return asyncio.run(COMMANDS[args.command](args))
    except ConfigError as exc:
        print(f"teamtree: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except TeamtreeError as exc:
        print(f"teamtree: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _exit() -> None:
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())


__all__ = ["AGENT_KINDS", "build_parser", "main"]
