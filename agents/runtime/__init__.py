"""The agent runtime: Agent base, config, team view, kinds, launcher, request/reply.

Every agent kind (and every driver) builds on this package; it imports no kind.
"""

from __future__ import annotations

from teamtree.broker.lazy import lazy_exports as _lazy_exports

# where each public name lives; loaded on first use (an agent's start-up reads few)
_HOMES: dict[str, tuple[str, ...]] = {
    "agent": ("Agent",),
    "agent_state": ("AgentState",),
    "clock_skew": ("SkewWatch",),
    "config": (
        "AccessSpec",
        "AgentSpec",
        "MissionSpec",
        "RuntimeSettings",
        "TeamConfig",
        "load_config",
        "parse_config",
        "spec_reader",
    ),
    "behaviour_wire": (
        "BehaviourWireError",
        "CommandRef",
        "ExecuteCommand",
        "Progress",
        "RenewCommand",
        "decode_command",
        "decode_progress",
    ),
    "drop_log": ("DropLog",),
    "echo": ("EchoAgent",),
    "event_loop": (
        "EVENT_LOOP_ENV",
        "loop_name",
        "run_main",
        "running_loop_name",
    ),
    "hello": ("HelloAgent",),
    "kinds": (
        "AGENT_KINDS",
        "agent_class",
        "build_agent",
        "validate_kinds",
    ),
    "launcher": ("Launcher",),
    "log_setup": ("configure_logging",),
    "mission_status": (
        "MissionBoard",
        "MissionStatus",
        "MissionStatusError",
        "StatusReporter",
        "decode_status",
    ),
    "observation_wire": (
        "HandView",
        "ObjectView",
        "ObservationBody",
        "ObservationWireError",
        "RobotView",
        "WorldStateBody",
        "decode_observation",
        "decode_world_state",
        "merge_objects",
    ),
    "own_presence": ("OwnPresence",),
    "params": (
        "decode_params",
        "params_dict",
    ),
    "pending": (
        "PendingRequest",
        "PendingRequests",
    ),
    "priority": (
        "apply_nice",
        "current_nice",
    ),
    "processes": (
        "AgentProcess",
        "LinePrinter",
        "agent_command",
        "start_process",
        "stop_processes",
    ),
    "presence_wire": (
        "HeartbeatBody",
        "PresenceBody",
        "PresenceWireError",
        "decode_heartbeat",
        "decode_presence",
    ),
    "receiver": (
        "DedupWindow",
        "Receiver",
    ),
    "recording": (
        "RECORDING_FIELD",
        "ObserverLosses",
        "RecordingState",
        "RecordingWireError",
        "exit_phrase",
        "recording_of",
    ),
    "registry": (
        "KindInfo",
        "KindRegistry",
        "UnknownKindError",
        "installed_kinds",
    ),
    "rate_limit": (
        "SenderBuckets",
        "TokenBucket",
    ),
    "request_reply": ("RequestReply",),
    "resync": ("Resync",),
    "ros_thread": ("RosNodeThread",),
    "routes": (
        "RouteTable",
        "Routing",
    ),
    "run_output": (
        "PresenceLines",
        "fit_line",
    ),
    "run_observers": ("RunObservers",),
    "run_watch": ("RunWatch",),
    "sessions": (
        "SessionBook",
        "Spoken",
        "Verdict",
    ),
    "team_view": (
        "Member",
        "Presence",
        "RefusedState",
        "TeamView",
    ),
    "wire_decode": ("decode_body",),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
