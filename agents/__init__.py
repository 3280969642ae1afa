"""Agents: the runtime, the command line, observers and each paper's agent kinds.

Rooms (one subpackage each):

- ``runtime``      Agent base, config, team view, kinds, launcher, request/reply
- ``cli``          the ``teamtree`` command line
- ``observers``    monitor, recorder, timeline (they never join a team)
- ``world``        the simulated world service
- ``tasktree``     seed 000 robots sharing a THEN/AND/OR tree by the peer rule
- ``humans``       seed 000 humans: simulated, or a person at a terminal
- ``allocation``   seed 001 allocation service, cobot and kitting human
- ``capability``   seed 002 factory robots, favors and the job source
- ``ltl``          seed 003 LTL planner service and robots
- ``multitask``    seed 004 multitasking robots

This package re-exports the runtime's public names.
"""

from __future__ import annotations

from teamtree.agents.runtime import _HOMES as _RUNTIME_HOMES
from teamtree.broker.lazy import lazy_exports as _lazy_exports

# the runtime's own table (its __init__ is lazy too): one list of names to keep
_HOMES: dict[str, tuple[str, ...]] = {
    f"runtime.{module}": names for module, names in _RUNTIME_HOMES.items()
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
