"""The robot <-> driver contract on the wire (docs/protocol.md, "Task trees" and
"The simulated world"): behaviour commands in on ``<robot>/command/<driver>``,
progress out on ``<driver>/progress``.

Every body is a declared msgspec Struct; ``decode_command`` and ``decode_progress``
check each field's type and raise BehaviourWireError (a ``ValueError`` naming the
field's path, e.g. ``$.lease_ms``) on a malformed body, so the receiver drops it with
the runtime's aggregated drop warning instead of acting on a half-read one. Unknown
keys are ignored (a newer sender may add some). The runtime (not a kind) holds these
types because both sides build on it: robot kinds and drivers.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body
from teamtree.agents.runtime.wire_decode import to_wire as to_wire  # re-exported

COMMAND_CHANNEL = "command"
"""``<robot>/command/<driver>``: behaviour commands."""
PROGRESS_CHANNEL = "progress"
"""``<driver>/progress``: what became of them."""
OBSERVATION_CHANNEL = "observation"
"""``<driver>/observation``: what the body sees."""


class BehaviourWireError(ValueError):
    """A behaviour command or progress body that does not match its declared type."""


class ExecuteCommand(Struct, frozen=True):
    """``behaviour.execute``: run `behaviour` with `params` for tree node `node`.
    ``lease_ms``: milliseconds on the sender's clock by which the body stops unless
    renewed; ``sent_ms``: that clock when the command was sent, and ``clock``: an id
    of that clock (the body reads the deadline on its own clock from them, so the
    clocks need not agree; without them ``lease_ms`` is UTC ms); ``token``: the
    sender's fencing token (the stamp the node was won at), for the record. Null
    ``lease_ms``: no lease."""

    command_id: str
    behaviour: str
    node: str | None = None
    params: dict[str, Any] = {}
    lease_ms: int | None = None
    token: Any = None
    sent_ms: int | None = None
    clock: str | None = None


class RenewCommand(Struct, frozen=True):
    """``behaviour.renew``: move the running command's lease on to ``lease_ms``
    (``sent_ms``, ``clock``: as for ``ExecuteCommand``)."""

    command_id: str
    lease_ms: int
    node: str | None = None
    token: Any = None
    sent_ms: int | None = None
    clock: str | None = None


class CommandRef(Struct, frozen=True):
    """``behaviour.cancel|pause|resume``: the command meant (null: the current one)."""

    command_id: str | None = None
    node: str | None = None


BehaviourCommand = ExecuteCommand | RenewCommand | CommandRef

COMMAND_BODIES: dict[str, type[BehaviourCommand]] = {
    "behaviour.cancel": CommandRef,
    "behaviour.execute": ExecuteCommand,
    "behaviour.pause": CommandRef,
    "behaviour.renew": RenewCommand,
    "behaviour.resume": CommandRef,
}
"""Command kind -> its body type."""


class Progress(Struct, frozen=True):
    """``behaviour.started|paused|resumed|finished|failed``: ``ok`` is false only for
    ``failed``, whose ``reason`` says why; ``t`` is the body's time (simulated seconds
    for the simulated world, UTC seconds for a real one), null when unknown."""

    command_id: str | None
    node: str | None
    robot: str
    ok: bool
    reason: str | None = None
    t: float | None = None


PROGRESS_KINDS = ("started", "paused", "resumed", "finished", "failed")
"""The ``behaviour.<kind>`` progress kinds."""


def _decode(body: Any, typ: type[Any], what: str) -> Any:
    return decode_body(body, typ, BehaviourWireError, what)


def decode_command(kind: str, body: Any) -> BehaviourCommand:
    """The body of command `kind` as its Struct; raises BehaviourWireError (also for a
    kind that is not a behaviour command)."""
    typ = COMMAND_BODIES.get(kind)
    if typ is None:
        known = ", ".join(sorted(COMMAND_BODIES))
        raise BehaviourWireError(f"unknown command kind {kind!r}; expected one of {known}")
    return _decode(body, typ, kind)


def decode_progress(body: Any) -> Progress:
    """A progress body as a Progress; raises BehaviourWireError."""
    return _decode(body, Progress, "progress")
