"""Helpers for the operations tests: the CLI commands they run."""

from __future__ import annotations

from tests.conftest import teamtree_cmd


def ops_cmd(*args: str) -> list[str]:
    """``teamtree <args>`` (monitor, record, attach, acl, ...)."""
    return teamtree_cmd(*args)


def agent_cmd(*args: str) -> list[str]:
    """``teamtree agent <args>``; it reads broker credentials from the environment."""
    return teamtree_cmd("agent", *args)
