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

from teamtree.agents.runtime.agent import Agent, AgentState
from teamtree.agents.runtime.config import (
    AgentSpec,
    MissionSpec,
    RuntimeSettings,
    TeamConfig,
    load_config,
    parse_config,
    spec_reader,
)
from teamtree.agents.runtime.echo import EchoAgent
from teamtree.agents.runtime.hello import HelloAgent
from teamtree.agents.runtime.kinds import AGENT_KINDS, agent_class, build_agent, validate_kinds
from teamtree.agents.runtime.launcher import Launcher
from teamtree.agents.runtime.log_setup import configure_logging
from teamtree.agents.runtime.pending import PendingRequest, PendingRequests
from teamtree.agents.runtime.registry import (
    KindInfo,
    KindRegistry,
    UnknownKindError,
    installed_kinds,
)
from teamtree.agents.runtime.team_view import Member, Presence, TeamView

__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentSpec",
    "AgentState",
    "EchoAgent",
    "HelloAgent",
    "KindInfo",
    "KindRegistry",
    "Launcher",
    "Member",
    "MissionSpec",
    "PendingRequest",
    "PendingRequests",
    "Presence",
    "RuntimeSettings",
    "TeamConfig",
    "TeamView",
    "UnknownKindError",
    "agent_class",
    "build_agent",
    "configure_logging",
    "installed_kinds",
    "load_config",
    "parse_config",
    "spec_reader",
    "validate_kinds",
]
