"""The agent runtime: Agent base, config, team view, kinds, launcher, request/reply.

Every agent kind (and every driver) builds on this package; it imports no kind.
"""

from teamtree.agents.runtime.agent import Agent, AgentState
from teamtree.agents.runtime.behaviour_wire import (
    BehaviourWireError,
    CommandRef,
    ExecuteCommand,
    Progress,
    RenewCommand,
    decode_command,
    decode_progress,
)
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
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.pending import PendingRequest, PendingRequests
from teamtree.agents.runtime.presence_wire import (
    HeartbeatBody,
    PresenceBody,
    PresenceWireError,
    decode_heartbeat,
    decode_presence,
)
from teamtree.agents.runtime.registry import (
    KindInfo,
    KindRegistry,
    UnknownKindError,
    installed_kinds,
)
from teamtree.agents.runtime.resync import Resync
from teamtree.agents.runtime.team_view import Member, Presence, TeamView
from teamtree.agents.runtime.wire_decode import decode_body

__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentSpec",
    "AgentState",
    "BehaviourWireError",
    "CommandRef",
    "EchoAgent",
    "ExecuteCommand",
    "HeartbeatBody",
    "HelloAgent",
    "KindInfo",
    "KindRegistry",
    "Launcher",
    "Member",
    "MissionSpec",
    "PendingRequest",
    "PendingRequests",
    "Presence",
    "PresenceBody",
    "PresenceWireError",
    "Progress",
    "RenewCommand",
    "Resync",
    "RuntimeSettings",
    "TeamConfig",
    "TeamView",
    "UnknownKindError",
    "agent_class",
    "build_agent",
    "configure_logging",
    "decode_body",
    "decode_command",
    "decode_heartbeat",
    "decode_params",
    "decode_presence",
    "decode_progress",
    "installed_kinds",
    "load_config",
    "params_dict",
    "parse_config",
    "spec_reader",
    "validate_kinds",
]
