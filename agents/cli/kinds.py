"""``teamtree kinds``: the agent kinds this installation can run, built-in and plugins.

Exit codes: 0 listed, 2 the installed kinds conflict (two packages register one name).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from teamtree.agents.cli.args import log_flags
from teamtree.agents.runtime.kinds import AGENT_KINDS
from teamtree.agents.runtime.registry import ENTRY_POINT_GROUP

__all__ = ["register"]

Handler = Callable[[argparse.Namespace], Awaitable[int]]


def register(subparsers: Any) -> dict[str, Handler]:
    """Add the ``kinds`` subcommand to `subparsers`; returns ``{"kinds": handler}``."""
    p = subparsers.add_parser(
        "kinds",
        help="list the agent kinds a config can name (built-in and plugins)",
        description=f"List the installed agent kinds (entry-point group {ENTRY_POINT_GROUP!r}) "
        "with the package that registers each. --check also imports each kind's class.",
    )
    p.add_argument("--check", action="store_true", help="import every kind's class")
    log_flags(p)
    return {"kinds": _kinds}


async def _kinds(args: argparse.Namespace) -> int:
    try:
        infos = AGENT_KINDS.infos
    except LookupError as exc:
        print(f"teamtree: {exc}", file=sys.stderr)
        return 2
    width = max((len(k) for k in infos), default=4)
    failed = 0
    for kind in sorted(infos):
        info = infos[kind]
        status = ""
        if args.check:
            try:
                AGENT_KINDS[kind]
                status = "  ok"
            except LookupError as exc:
                status, failed = f"  FAILED: {exc}", failed + 1
        print(f"{kind:<{width}}  {info.target}  ({info.distribution} {info.version}){status}")
    print(f"({len(infos)} kinds; plugins register in entry-point group {ENTRY_POINT_GROUP!r})")
    return 1 if failed else 0
