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

from teamtree.broker.lazy import lazy_exports

# where each public name lives; loaded on first use (an agent's start-up reads few)
_HOMES: dict[str, tuple[str, ...]] = {
    "runtime.agent": (
        "Agent",
        "AgentState",
    ),
    "runtime.config": (
        "AgentSpec",
        "MissionSpec",
        "RuntimeSettings",
        "TeamConfig",
        "load_config",
        "parse_config",
        "spec_reader",
    ),
    "runtime.echo": ("EchoAgent",),
    "runtime.hello": ("HelloAgent",),
    "runtime.kinds": (
        "AGENT_KINDS",
        "agent_class",
        "build_agent",
        "validate_kinds",
    ),
    "runtime.launcher": ("Launcher",),
    "runtime.log_setup": ("configure_logging",),
    "runtime.pending": (
        "PendingRequest",
        "PendingRequests",
    ),
    "runtime.registry": (
        "KindInfo",
        "KindRegistry",
        "UnknownKindError",
        "installed_kinds",
    ),
    "runtime.team_view": (
        "Member",
        "Presence",
        "TeamView",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _HOMES)
