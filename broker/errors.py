"""The teamtree error hierarchy: a small, flat set of typed errors carrying data.

::

    TeamtreeError
    ├── WireError                 a message that cannot be trusted (dropped, counted)
    │   ├── DecodeError           not msgpack, or truncated
    │   ├── SchemaError           decodes, but fields are missing or of the wrong type
    │   ├── TooLargeError         over the payload cap
    │   ├── TopicError            a topic or id that is not of teamtree's form
    │   └── SenderMismatchError   the envelope's sender is not the topic's agent id
    ├── BrokerError               talking to the broker failed
    │   ├── ConnectError          could not connect (endpoint on the error)
    │   ├── ConnectionLostError   the connection dropped while a call was pending
    │   ├── OutboxFullError       too many QoS 1 messages queued while disconnected
    │   └── BrokerStartError      a local broker could not be started
    ├── RequestError              request/reply did not complete
    │   └── RequestTimeoutError   no reply before the deadline (not granted)
    ├── LifecycleError            an agent or connection used in the wrong state
    ├── PlanningError             a planner could not answer
    │   ├── InfeasibleError
    │   ├── SolverLimitError
    │   ├── NoCapableAgentError
    │   └── SpecificationError
    └── ConfigError               a config file or CLI value is wrong (file, key on the error)

They live here, in the wire package, because every layer raises them; importing this
module does no I/O.
"""

from __future__ import annotations


class TeamtreeError(Exception):
    """Base of every error teamtree raises on purpose."""


class WireError(TeamtreeError):
    """A message could not be trusted; `sender` and `topic` say where it came from."""

    def __init__(self, reason: str, *, topic: str | None = None, sender: str | None = None):
        self.reason = reason
        self.topic = topic
        self.sender = sender
        where = f" on {topic!r}" if topic else ""
        who = f" from {sender!r}" if sender else ""
        super().__init__(f"{reason}{where}{who}")


class DecodeError(WireError):
    """The payload is not a msgpack map, or is truncated."""


class SchemaError(WireError):
    """The payload decodes but a field is missing, unknown or of the wrong type."""


class TooLargeError(WireError):
    """The payload is over the size cap."""


class TopicError(WireError):
    """A topic or an id does not have teamtree's form."""


class SenderMismatchError(WireError):
    """The envelope's sender is not the agent id named in the topic."""


class BrokerError(TeamtreeError):
    """Talking to the broker failed; `endpoint` names it."""

    def __init__(self, message: str, *, endpoint: str | None = None):
        self.endpoint = endpoint
        super().__init__(message)


class ConnectError(BrokerError):
    """The broker could not be reached."""


class ConnectionLostError(BrokerError):
    """The connection dropped while a call was waiting on it."""


class OutboxFullError(BrokerError):
    """The outbox of QoS 1 messages kept while disconnected is full; nothing was queued."""


class BrokerStartError(BrokerError):
    """A local broker (mosquitto or the embedded one) could not be started."""


class RequestError(TeamtreeError):
    """A request/reply exchange did not complete."""

    def __init__(self, message: str, *, kind: str | None = None, correlation: str | None = None):
        self.kind = kind
        self.correlation = correlation
        super().__init__(message)


class RequestTimeoutError(RequestError):
    """No reply arrived before the deadline; by the protocol this means "not granted"."""


class LifecycleError(TeamtreeError, RuntimeError):
    """An agent, connection or broker was used in a state that does not allow it."""


class PlanningError(TeamtreeError):
    """A planner could not produce an answer."""


class InfeasibleError(PlanningError):
    """The problem has no solution (e.g. a MILP is infeasible)."""


class SolverLimitError(PlanningError):
    """A solver hit a limit (time, size licence) before it had a usable answer."""


class NoCapableAgentError(PlanningError):
    """No team member is capable of the job."""


class SpecificationError(PlanningError):
    """A mission specification (tree, graph, LTL formula) is malformed."""


class ConfigError(TeamtreeError):
    """A config file or CLI value is wrong; `path` and `key` say where, the message how to fix."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None):
        self.path = path
        self.key = key
        prefix = ""
        if path:
            prefix += f"{path}: "
        if key:
            prefix += f"[{key}] "
        super().__init__(f"{prefix}{message}")
