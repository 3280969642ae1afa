"""``teamtree human --id alice --team T``: a real person takes a human's place in a
running team from a terminal (seed 000 §2.3). Commands and output: agents/humans/terminal.py;
wire: docs/humans.md.

Exit codes: 0 the task is done or the person quit, 1 the broker cannot be reached,
2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from teamtree.agents.cli.args import broker_flags, log_flags, resolve_team
from teamtree.agents.humans.terminal import TerminalHuman, stdin_reader
from teamtree.agents.runtime.config import RuntimeSettings
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.agents.runtime.event_loop import run_main
from teamtree.broker import ConfigError, TopicError
from teamtree.broker.tls import TlsSettings, client_context
from teamtree.broker.topics import validate_id

__all__ = ["main", "register", "run_human"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]


def _ident(value: str) -> str:
    try:
        return validate_id(value, "id")
    except TopicError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def register(subparsers: Any) -> dict[str, Handler]:
    """Add the ``human`` subcommand to `subparsers` (from ``add_subparsers``); returns
    ``{"human": handler}``, the handler taking the parsed args and returning the exit
    code."""
    p = subparsers.add_parser(
        "human",
        help="take a human's place in a running team from this terminal",
        description="Join a running team as a human teammate. Type `start OBJECT` when "
        "you begin a subtask and `finish` when you place it; answer the robots' "
        "questions with yes (you continue) or no (the robot takes it). With a simulated "
        "world your hand moves in it, so the robots infer what you do (seed 000 §2.3).",
    )
    p.add_argument("--id", required=True, type=_ident, help="your agent id, e.g. alice")
    broker_flags(p)
    p.add_argument("--config", help="team config (.toml) to read the team and broker from")
    p.add_argument("--hand", type=_ident, help="your hand in the world (default: your id)")
    p.add_argument("--world", type=_ident, help="the world agent's id (default: any)")
    p.add_argument("--no-world", action="store_true", help="do not move a simulated hand")
    p.add_argument(
        "--stay", action="store_true", help="keep running after the task is done (until quit)"
    )
    log_flags(p)
    return {"human": run_human}


async def run_human(args: argparse.Namespace) -> int:
    """The ``human`` handler: resolve team and broker, then run the terminal session."""
    team, endpoint = resolve_team(args)
    tls = TlsSettings.from_env()
    agent = TerminalHuman(
        args.id,
        team=team,
        endpoint=endpoint,
        runtime=RuntimeSettings(heartbeat_s=1.0, keepalive_s=2),
        reader=await stdin_reader(),
        hand=args.hand,
        world=args.world,
        use_world=not args.no_world,
        exit_when_done=not args.stay,
        tls_context=client_context(tls) if tls else None,
        **agent_credentials(args.id),  # as `teamtree agent` does, for protected brokers
    )
    async with agent:
        try:
            await agent.wait_connected(10.0)
        except TimeoutError:
            print(
                f"teamtree human: cannot reach the broker at {endpoint.url} (is it running? "
                f"does it know user {args.id!r}? its password comes from "
                f"TEAMTREE_PASSWORD_<ID>, TEAMTREE_PASSWORD or $TEAMTREE_CREDENTIALS_DIR)",
                flush=True,
            )
            return 1
        return await agent.run_until_stopped()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``human`` on its own: ``python -m teamtree.agents.cli.human --id alice ...``."""
    from teamtree.agents.runtime.log_setup import configure_logging

    parser = argparse.ArgumentParser(prog="teamtree")
    handlers = register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["human", *(sys.argv[1:] if argv is None else argv)])
    configure_logging(args.log_format, level=args.log_level, agent=args.id)
    try:
        return run_main(handlers[args.command](args))
    except ConfigError as exc:  # TEAMTREE_EVENT_LOOP
        print(f"teamtree: config error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
