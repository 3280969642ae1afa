"""Agent runtime, robot and human agents, services, launcher and CLI."""

from teamtree.agents.agent import Agent, AgentState
from teamtree.agents.config import (
    AgentSpec,
    MissionSpec,
    RuntimeSettings,
    TeamConfig,
    load_config,
    parse_config,
    spec_reader,
)
from teamtree.agents.echo import EchoAgent
from teamtree.agents.hello import HelloAgent
from teamtree.agents.kinds import AGENT_KINDS, agent_class, build_agent, validate_kinds
from teamtree.agents.launcher import Launcher
from teamtree.agents.log_setup import configure_logging
from teamtree.agents.pending import PendingRequest, PendingRequests
from teamtree.agents.team_view import Member, Presence, TeamView

__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentSpec",
    "AgentState",
    "EchoAgent",
    "HelloAgent",
    "Launcher",
    "Member",
    "MissionSpec",
    "PendingRequest",
    "PendingRequests",
    "Presence",
    "RuntimeSettings",
    "TeamConfig",
    "TeamView",
    "agent_class",
    "build_agent",
    "configure_logging",
    "load_config",
    "parse_config",
    "spec_reader",
    "validate_kinds",
]
