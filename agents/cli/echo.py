"""``teamtree echo``: the team's messages decoded live to JSON lines, like ``ros2 topic
echo``; filtered by kind, agent, mission or topic.

- ``teamtree echo [--broker URL --team T] [--kind K]... [--agent ID]... [--mission ID]...
  [--topic FILTER]... [--count N] [--duration S] [--no-retained]``
- ``teamtree echo --list-kinds``

One JSON object a line on stdout (``teamtree.agents.observers.wire_json``: the
recorders' records); a malformed message is one line on stderr naming its topic and
what is wrong, and echo goes on. A passive observer: it never joins the team.
Exit codes: 0 done, 1 the broker cannot be reached, 2 a bad filter.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from teamtree.agents.cli.args import broker_flags, client_tls, log_flags, resolve_team
from teamtree.agents.cli.args import ident as _ident
from teamtree.agents.cli.args import seconds as _seconds
from teamtree.agents.observers.echo_filter import EchoFilter
from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.observers.wire_json import message_record, record_json
from teamtree.agents.observers.wire_kinds import KNOWN_KINDS
from teamtree.agents.runtime.credentials import agent_credentials, observer_credentials
from teamtree.broker import ConfigError, ConnectError, WireError
from teamtree.broker.connection import Incoming
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

__all__ = ["register", "run_echo"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of messages >= 1")
    return number


def _checked(sort: str) -> Callable[[str], str]:
    """An argparse type checking one `sort` filter as ``EchoFilter.parse`` does, so a
    bad one is refused (exit 2) before anything connects."""

    def check(value: str) -> str:
        try:
            EchoFilter.parse(**{sort: [value]})
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"[{exc.key}] ")) from None
        return value

    return check


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``echo`` to `subparsers`; returns ``{"echo": handler}``."""
    echo = subparsers.add_parser(
        "echo",
        help="print the team's messages live as JSON lines (filter by kind, agent, ...)",
        description="Decode every message of the team to one JSON object a line, as the "
        "recorders write them ({topic, kind, sender, ts, hlc, body, ...}), until Ctrl-C, "
        "--count or --duration. Filters of one sort are alternatives, of different sorts "
        "all must hold; a filter that can match nothing is refused. Echo does not join "
        "the team (no presence, read-only rights).",
    )
    broker_flags(echo)
    echo.add_argument(
        "--kind", action="append", default=[], type=_checked("kinds"), metavar="KIND",
        help="a message kind or a pattern of them, e.g. node.transition or 'node.*' "
        "(repeatable)",
    )  # fmt: skip
    echo.add_argument(
        "--agent", action="append", default=[], type=_checked("agents"), metavar="ID",
        help="messages sent by, or addressed to, this agent (repeatable)",
    )  # fmt: skip
    echo.add_argument(
        "--mission", action="append", default=[], type=_checked("missions"), metavar="ID",
        help="messages of this mission (repeatable)",
    )  # fmt: skip
    echo.add_argument(
        "--topic", action="append", default=[], type=_checked("topics"), metavar="FILTER",
        help="an MQTT topic filter below the team: '+/state', '_/mission', 'pr2/#' "
        "(repeatable)",
    )  # fmt: skip
    echo.add_argument("--count", type=_count, help="exit after printing this many messages")
    echo.add_argument("--duration", type=_seconds, help="exit after this many seconds")
    echo.add_argument(
        "--no-retained", dest="retained", action="store_false",
        help="skip the retained messages the broker holds from before (presence, "
        "snapshots, the mission tree)",
    )  # fmt: skip
    echo.add_argument(
        "--list-kinds", action="store_true", help="list the kinds teamtree sends, and exit"
    )
    echo.add_argument(
        "--user", type=_ident, default=None,
        help="broker user whose credentials to use (default: echo, else monitor)",
    )  # fmt: skip
    log_flags(echo)
    return {"echo": run_echo}


async def run_echo(args: argparse.Namespace) -> int:
    """The ``echo`` handler."""
    if args.list_kinds:
        with contextlib.suppress(BrokenPipeError):
            print("\n".join(sorted(KNOWN_KINDS)), flush=True)
        return 0
    keep = EchoFilter.parse(args.kind, args.agent, args.mission, args.topic)
    _, endpoint = resolve_team(args)
    printed = 0
    enough = asyncio.Event()

    def show(env: Envelope, topic: Topic, message: Incoming) -> None:
        nonlocal printed
        if enough.is_set() or (message.retain and not args.retained) or not keep(env, topic):
            return
        line = record_json(message_record(env, topic, retained=bool(message.retain)))
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the reader has all it wants
            enough.set()
            return
        printed += 1
        if args.count is not None and printed >= args.count:
            enough.set()

    def malformed(message: Incoming, exc: WireError) -> None:
        print(
            f"teamtree echo: dropped a malformed message on {message.topic}: {exc.reason}",
            file=sys.stderr,
            flush=True,
        )

    login = agent_credentials(args.user) if args.user else observer_credentials("echo")
    observer = TeamObserver(
        endpoint,
        args.team,
        sys_topics=False,
        on_message=show,
        on_malformed=malformed,
        client_prefix="echo",
        tls_context=client_tls(),
        **login,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, enough.set)
    try:
        async with observer:
            await observer.wait_connected()
            print(f"echoing team {args.team} at {args.broker}", file=sys.stderr, flush=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(enough.wait(), args.duration)
    except ConnectError as exc:
        print(f"teamtree echo: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0
