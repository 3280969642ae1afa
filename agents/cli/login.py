"""The broker login of a one-shot client command (``submit``, ``missions``, ``cancel``,
``disturb``): the same flags and environment as ``web`` and ``human``.

``--username`` (default ``$TEAMTREE_USERNAME``) with ``--password``, else the password
found as for an agent (``TEAMTREE_PASSWORD_<USER>``, ``TEAMTREE_PASSWORD``,
``$TEAMTREE_CREDENTIALS_DIR/<user>``). The client then speaks as that login, so under
access control the receiver knows who asks. Without access control ``--as NAME``
names the client instead (unverified: anyone can claim any name).
"""

from __future__ import annotations

import argparse
import os
import uuid

from teamtree.agents.cli.args import ident
from teamtree.agents.runtime.credentials import login_credentials
from teamtree.broker import ConfigError

__all__ = ["add_login_flags", "client_login", "unreachable_hint"]


def add_login_flags(p: argparse.ArgumentParser) -> None:
    """Add ``--username``, ``--password`` and ``--as``."""
    p.add_argument(
        "--username", type=ident, default=os.environ.get("TEAMTREE_USERNAME"),
        help="broker user to log in as (default $TEAMTREE_USERNAME); its password from "
        "--password, TEAMTREE_PASSWORD_<USER>, TEAMTREE_PASSWORD or "
        "$TEAMTREE_CREDENTIALS_DIR/<user>",
    )  # fmt: skip
    p.add_argument("--password", help="the broker user's password")
    p.add_argument(
        "--as", dest="as_name", type=ident, metavar="NAME",
        help="without access control: the name to speak as (recorded as unverified)",
    )  # fmt: skip


def client_login(args: argparse.Namespace, prefix: str) -> tuple[str, dict[str, str]]:
    """The client's agent id and broker credentials: the login's, else ``--as`` or a
    made-up ``<prefix>-`` name without credentials. ConfigError (exit 2) on flags that
    contradict each other."""
    if args.password is not None and not args.username:
        raise ConfigError("--password needs --username")
    if args.username:
        if args.as_name is not None:
            raise ConfigError(
                "--as is for a broker without access control; with --username the "
                "broker user speaks"
            )
        return args.username, login_credentials(args.username, args.password)
    return args.as_name or f"{prefix}-{uuid.uuid4().hex[:8]}", {}


def unreachable_hint(name: str, credentials: dict[str, str]) -> str:
    """What to add to "cannot reach the broker" for this login."""
    if credentials:
        return f" as user {name!r} (does the broker know it? is its password right?)"
    return " (a broker with access control needs --username and a password)"
