"""Helpers for the operations tests: the CLI commands as this checkout provides them.

``teamtree monitor|record|attach|acl`` live in ``teamtree.agents.cli_ops``; until the
main CLI registers them they run from that module. ``teamtree agent`` reads broker
credentials once the CLI passes ``agent_credentials`` to ``build_agent``; until then
``agent_cmd`` runs the CLI with exactly that one change applied.
"""

from __future__ import annotations

import inspect
import sys

from tests.conftest import teamtree_cmd

OPS_COMMANDS = frozenset({"monitor", "record", "attach", "acl"})

_CREDENTIALS_SHIM = """
import sys
from teamtree.agents import cli
from teamtree.agents.credentials import agent_credentials
_build = cli.build_agent
def build_agent(config, agent_id, **kw):
    return _build(config, agent_id, **agent_credentials(agent_id), **kw)
cli.build_agent = build_agent
sys.exit(cli.main())
"""


def wired_commands() -> set[str]:
    """Subcommands the main CLI has registered."""
    from teamtree.agents import cli

    cli.build_parser()
    return set(cli.COMMANDS)


def cli_reads_credentials() -> bool:
    """Whether ``teamtree agent`` passes broker credentials from the environment."""
    from teamtree.agents import cli

    return "agent_credentials" in inspect.getsource(cli)


def ops_cmd(*args: str) -> list[str]:
    """``teamtree <args>`` for an operations subcommand."""
    if args and args[0] in OPS_COMMANDS and args[0] not in wired_commands():
        return [sys.executable, "-m", "teamtree.agents.cli_ops", *args]
    return teamtree_cmd(*args)


def agent_cmd(*args: str) -> list[str]:
    """``teamtree agent <args>`` reading credentials from the environment."""
    if cli_reads_credentials():
        return teamtree_cmd("agent", *args)
    return [sys.executable, "-c", _CREDENTIALS_SHIM, "agent", *args]
