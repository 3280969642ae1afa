"""The wire: topics, envelope codec, hybrid logical clock, errors, connection, brokers.

This is the ground floor: it imports nothing else of teamtree. Names are loaded on
first use (PEP 562), so ``from teamtree.broker import ConfigError`` loads the errors
module only, never the MQTT client: planners import their errors from here.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES: dict[str, tuple[str, ...]] = {
    "connection": ("Connection", "ConnectionState"),
    "broker_kind": ("BrokerKind",),
    "endpoint": ("Endpoint", "parse_endpoint"),
    "envelope": ("MAX_PAYLOAD", "SCHEMA_VERSION", "Envelope", "decode", "encode"),
    "errors": (
        "BrokerError",
        "BrokerStartError",
        "ConfigError",
        "ConnectError",
        "ConnectionLostError",
        "DecodeError",
        "InfeasibleError",
        "LifecycleError",
        "NoCapableAgentError",
        "OutboxFullError",
        "PlanningError",
        "RequestError",
        "RequestTimeoutError",
        "SchemaError",
        "SenderMismatchError",
        "SolverLimitError",
        "SpecificationError",
        "TeamtreeError",
        "TooLargeError",
        "TopicError",
        "WireError",
    ),
    "failover": ("NodeRing",),
    "hlc": ("HlcStamp", "HybridLogicalClock", "wall_ms"),
    "local_broker": (
        "EmbeddedBroker",
        "MosquittoBroker",
        "find_mosquitto",
        "free_port",
        "make_local_broker",
        "wait_for_port",
    ),
    "messages": ("Incoming", "Outgoing"),
    "mosquitto_conf": ("MosquittoSettings", "render_mosquitto_conf"),
    "reach": ("check_reachable", "wait_reachable"),
    "topics": ("Topic", "validate_id"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

# ruff's RUF022 order: CONSTANTS, then Classes, then functions.
__all__ = sorted(_MODULE_OF, key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n))


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'teamtree.broker' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"teamtree.broker.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
