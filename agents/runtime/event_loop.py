"""The event loop a teamtree process runs on: uvloop's where it is installed, else
asyncio's.

Why: at 32 robots and their drivers in two processes, a claim waits mostly for event
loops that both cores keep busy (a peer's reply, then the claimant's decision, each a
pass or two of a loop that runs thirty-odd agents). uvloop runs the same callbacks on
libuv, with less overhead per pass, so those claims are decided sooner (measured in
docs/results/2026-11-tasktree-claims.md). Nothing in teamtree depends on which loop
runs; the choice is the environment's:

- ``TEAMTREE_EVENT_LOOP`` unset or ``auto``: uvloop if it imports, else asyncio's;
- ``uvloop``: uvloop, or a clear error if it is not installed;
- ``asyncio``: the standard library's loop (a debugger, a platform without uvloop).

``run_main`` runs a process's main coroutine on it, as ``asyncio.run`` would.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

from teamtree.broker import ConfigError

__all__ = ["EVENT_LOOP_ENV", "loop_name", "run_main", "running_loop_name"]

EVENT_LOOP_ENV = "TEAMTREE_EVENT_LOOP"
_CHOICES = ("auto", "uvloop", "asyncio")

T = TypeVar("T")


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: the loop ``run_main`` will use here (ConfigError for a
    value of ``TEAMTREE_EVENT_LOOP`` it does not know, or ``uvloop`` not installed)."""
    choice = os.environ.get(EVENT_LOOP_ENV, "").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ConfigError(
            f"{EVENT_LOOP_ENV}={os.environ[EVENT_LOOP_ENV]!r}: expected auto, uvloop or asyncio"
        )
    if choice == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if choice == "uvloop":
            raise ConfigError(
                f"{EVENT_LOOP_ENV}=uvloop but uvloop is not installed: "
                f"pip install uvloop, or set {EVENT_LOOP_ENV}=asyncio"
            ) from None
        return "asyncio"
    return "uvloop"


def run_main(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion on a new event loop (as ``asyncio.run`` does), of the
    kind ``loop_name`` gives (its ConfigError closes `main` unstarted)."""
    try:
        name = loop_name()
    except ConfigError:
        main.close()
        raise
    if name == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: the loop running now (an agent logs it at start)."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
