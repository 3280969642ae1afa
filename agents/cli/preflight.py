"""Before a command talks to a broker: is it there? Fail in seconds, naming URL and reason.

MQTT clients retry quietly forever, which keeps a team alive through a broker restart
but made a wrong ``--broker`` look like a hang. Every command that needs a broker
resolves it the way the command will (``find_team``: the flags, the environment, the
running ``teamtree run``'s, the local default) and checks it once, waiting up to
``$TEAMTREE_BROKER_WAIT_S`` seconds (default 2) for a broker that is still starting.
"""

from __future__ import annotations

import argparse
import os

from teamtree.agents.cli.args import resolve_team
from teamtree.agents.runtime.config import load_config
from teamtree.broker import ConfigError
from teamtree.broker.endpoint import Endpoint, parse_endpoint
from teamtree.broker.reach import wait_reachable

#: commands that need a broker before they do anything
BROKER_COMMANDS = frozenset(
    {
        "run", "agent", "attach", "human", "disturb", "tree", "record", "monitor",
        "submit", "missions", "cancel", "ros2-bridge", "echo", "foxglove",
    }
)  # fmt: skip
WAIT_ENV = "TEAMTREE_BROKER_WAIT_S"


#: commands that find their team and broker with ``find_team``
FOUND_COMMANDS = frozenset(
    {
        "human", "disturb", "record", "monitor", "submit", "missions", "cancel", "echo",
        "foxglove", "ros2-bridge",
    }
)  # fmt: skip


def broker_of(args: argparse.Namespace) -> Endpoint | None:
    """The broker `args.command` will use, or None when it starts its own (or needs none)."""
    command = args.command
    if command not in BROKER_COMMANDS or getattr(args, "list_kinds", False):
        return None
    if command in FOUND_COMMANDS or (
        command == "tree" and (getattr(args, "live", False) or args.broker is not None)
    ):
        return resolve_team(args)[1]
    broker = getattr(args, "broker", None)
    config_path = getattr(args, "config", None)
    if isinstance(config_path, str):  # a bad config is reported first (exit 2)
        config = load_config(config_path)
        if command in ("agent", "attach"):
            config.agent(args.id)
        if broker is None and config.broker is not None:
            return config.broker
    if isinstance(broker, str):
        return parse_endpoint(broker)
    return None


def check_broker(args: argparse.Namespace) -> None:
    """Raise ConnectError (URL and reason) if the command's broker cannot be reached."""
    endpoint = broker_of(args)
    if endpoint is None:
        return
    raw = os.environ.get(WAIT_ENV, "2")
    try:
        within = float(raw)
    except ValueError:
        raise ConfigError(f"is {raw!r}; expected a number of seconds", key=WAIT_ENV) from None
    wait_reachable(endpoint, within=max(0.0, within))
