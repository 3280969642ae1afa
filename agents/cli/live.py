"""``teamtree foxglove``: the team live in Foxglove or Lichtblick.

- ``teamtree foxglove [--broker URL --team T] [--host 127.0.0.1] [--port 8765]``

Serves the Foxglove WebSocket protocol (``teamtree.agents.observers.foxglove_server``)
until Ctrl-C; in Foxglove: Open connection, Foxglove WebSocket, ``ws://HOST:PORT``.
Exit codes: 0 stopped, 1 the broker or the port cannot be had, 2 foxglove-sdk is not
installed (the message says how to install it).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from teamtree.agents.cli.args import broker_flags, client_tls, log_flags, resolve_team
from teamtree.agents.cli.args import ident as _ident
from teamtree.agents.runtime.credentials import agent_credentials, observer_credentials
from teamtree.broker import ConnectError

__all__ = ["register", "run_foxglove"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]

INSTALL = "pip install 'teamtree[foxglove]' (or: pip install foxglove-sdk)"


def _port(value: str) -> int:
    """A TCP port to serve on, or 0 for any free one."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a TCP port (0-65535; 0: any free one)")
    return number


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``foxglove`` to `subparsers`; returns ``{"foxglove": handler}``."""
    live = subparsers.add_parser(
        "foxglove",
        help="serve the team live to Foxglove or Lichtblick (3D world, tree, messages, log)",
        description="Serve the Foxglove WebSocket protocol at ws://HOST:PORT: every message "
        "of the team as JSON on its channel (/pr2/state/node.transition), the world as a 3D "
        "scene (/scene), the task tree and mission state (/tree), the monitor's view "
        "(/team) and the team's events (/log). Any number of viewers; none joins the team "
        f"or can publish into it. Needs foxglove-sdk: {INSTALL}.",
    )
    broker_flags(live)
    live.add_argument(
        "--host", default="127.0.0.1", help="address to serve on (default: 127.0.0.1)"
    )
    live.add_argument(
        "--port", type=_port, default=8765, help="port to serve on (default 8765; 0: any free one)"
    )
    live.add_argument(
        "--mission", type=_ident, default=None,
        help="the mission whose state /tree shows (default: the team's current one)",
    )  # fmt: skip
    live.add_argument(
        "--user", type=_ident, default=None,
        help="broker user whose credentials to use (default: foxglove, else monitor)",
    )  # fmt: skip
    log_flags(live)
    return {"foxglove": run_foxglove}


async def run_foxglove(args: argparse.Namespace) -> int:
    """The ``foxglove`` handler."""
    try:
        from teamtree.agents.observers.foxglove_server import LiveServer
    except ImportError as exc:
        print(
            f"teamtree foxglove: the foxglove-sdk package is missing ({exc}); install it: "
            f"{INSTALL}",
            file=sys.stderr,
            flush=True,
        )
        return 2
    _, endpoint = resolve_team(args)
    login = agent_credentials(args.user) if args.user else observer_credentials("foxglove")
    server = LiveServer(
        {
            "endpoint": endpoint,
            "team": args.team,
            "tls_context": client_tls(),
            "mission_id": args.mission,
            **login,
        },
        host=args.host,
        port=args.port,
        name=f"teamtree {args.team}",
    )
    try:
        port = server.start()
    except RuntimeError as exc:
        print(
            f"teamtree foxglove: cannot serve on {args.host}:{args.port}: {exc}; pick another "
            "--port (0: any free one)",
            file=sys.stderr,
            flush=True,
        )
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(
        f"serving team {args.team} at {args.broker} to Foxglove at ws://{args.host}:{port} "
        "(in Foxglove: Open connection, Foxglove WebSocket, this URL)",
        flush=True,
    )
    try:
        await server.run(stop)
    except ConnectError as exc:
        print(f"teamtree foxglove: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        server.stop()
    print(f"served {server.served} messages", flush=True)
    return 0
