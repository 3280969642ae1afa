"""``teamtree web --broker URL --team T [--port 8080]``: serve the team page and the
people's pages.

Exit codes: 0 stopped, 1 the broker cannot be reached or the port is taken, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from teamtree.agents.cli.args import broker_flags, client_tls, listen_port, log_flags, resolve_team
from teamtree.agents.runtime.credentials import login_credentials, observer_credentials
from teamtree.broker import ConnectError

__all__ = ["register", "run_web"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]


def register(subparsers: Any) -> dict[str, Handler]:
    """Add the ``web`` subcommand to `subparsers`; returns ``{"web": handler}``."""
    p = subparsers.add_parser(
        "web",
        help="serve a live web view of a team, and pages for the people in it",
        description="Serve the team page (agents, presence, the task tree as a tree, a "
        "live timeline with the people's work, alerts, broker health) at / and a "
        "person's page at /human/<id> (their subtasks, start / finish taps, the robots' "
        "questions with a countdown). Reads the team from the broker alone and does not "
        "join it; a person's page joins as that person (kind human).",
    )
    broker_flags(p)
    p.add_argument(
        "--port", type=listen_port, default=8080,
        help="HTTP port (default 8080; 0 picks a free one, printed when the page is up)",
    )  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--username", help="broker user of the team view (default: the web user's, else "
        "the monitor user's credentials from the environment, if any)",
    )  # fmt: skip
    p.add_argument("--password", help="its broker password (or set TEAMTREE_PASSWORD_<USERNAME>)")
    p.add_argument(
        "--any-person", action="store_true",
        help="let /human/<id> join any id (default: only people the team's robots model, "
        "as listed in their factsheets)",
    )  # fmt: skip
    p.add_argument(
        "--login", action="store_true",
        help="ask each browser to sign in with a broker user and password, and show it what "
        "that user may read (the default when no credentials are given and the broker "
        "refuses anonymous clients)",
    )  # fmt: skip
    p.add_argument(
        "--missions-dir", type=Path, default=None,
        help="mission files (*.toml with a [mission] table) the team page offers to submit "
        "(default: ./configs/missions when it exists)",
    )  # fmt: skip
    log_flags(p)
    return {"web": run_web}


def _credentials(args: argparse.Namespace) -> dict[str, str]:
    if args.username is not None:
        return login_credentials(args.username, args.password)
    return observer_credentials("web")


async def run_web(args: argparse.Namespace) -> int:
    """The ``web`` handler: connect to the broker, then serve until Ctrl-C."""
    if args.password is not None and args.username is None:
        print("teamtree web: --password needs --username", file=sys.stderr)
        return 2
    if args.login and args.username is not None:
        print("teamtree web: --login asks each browser for a user; drop --username",
              file=sys.stderr)  # fmt: skip
        return 2
    from teamtree.agents.observers.web.server import WebServer
    from teamtree.agents.observers.web.watch import refuses_anonymous

    missions_dir = args.missions_dir
    if missions_dir is None and Path("configs/missions").is_dir():
        missions_dir = Path("configs/missions").resolve()
    elif missions_dir is not None and not missions_dir.is_dir():
        print(f"teamtree web: --missions-dir {missions_dir}: no such directory", file=sys.stderr)
        return 2
    tls = client_tls()
    _, endpoint = resolve_team(args)
    credentials = {} if args.login else _credentials(args)
    login = args.login
    if not login and args.username is None and "password" not in credentials:
        login = await refuses_anonymous(endpoint, tls_context=tls)
        if login:
            print(f"the broker at {args.broker} refuses anonymous clients: each browser will "
                  "sign in with a broker user (--login)", flush=True)  # fmt: skip
    web = WebServer(
        endpoint,
        args.team,
        tls_context=tls,
        any_person=args.any_person,
        missions_dir=missions_dir,
        login=login,
        **({} if login else credentials),
    )
    try:
        async with web:
            if web.observer is not None:
                await web.observer.wait_connected(10.0)

            def ready(url: str) -> None:
                print(f"web view of team {args.team} at {url} (people: {url}human/<id>)",
                      flush=True)  # fmt: skip

            await web.serve(args.host, args.port, ready=ready)
    except ConnectError as exc:
        print(f"teamtree web: {exc}", file=sys.stderr, flush=True)
        return 1
    except OSError as exc:
        print(f"teamtree web: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
