"""The LTL messages between planner and robots (docs/ltl.md) as declared msgspec
Structs: every body a robot or the planner reads is decoded strictly with
``decode_body``, so a malformed one is dropped naming the field's path
(``bad ltl.step body: Expected `int`, got `str` - at `$.epoch```), never a traceback.

Field order is each sender's key order, and optional fields are left out when unset
(``omit_defaults``), so ``to_wire`` of a Struct encodes to the same msgpack as the
dicts the agents built by hand. The plan itself is ``plan_wire``; the verdict is read
through ``VerdictWire``, a view of the fields robots use (the rest pass through).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body

__all__ = [
    "BODIES",
    "DisturbAckWire",
    "DisturbWire",
    "DoneWire",
    "LtlWireError",
    "MapWire",
    "PlanMessageWire",
    "PlanReceivedWire",
    "ReplanResultWire",
    "ReplanWire",
    "StepWire",
    "SyncReplyWire",
    "SyncWire",
    "VerdictWire",
    "decode",
    "to_wire",
]

State = tuple[str, str]  # [region, mode]
Edge = tuple[str, str]  # [a, b]


class LtlWireError(ValueError):
    """An LTL body that does not match its declared type."""


class PlanMessageWire(Struct, frozen=True):
    """``ltl.plan`` (planner → robot): ``plan`` is ``plan_wire``'s map."""

    run: str
    epoch: int
    seq: int
    strategy: str
    dropped: list[str]
    plan: dict[str, Any]


class PlanReceivedWire(Struct, frozen=True):
    """``ltl.plan_received`` (robot status): the robot's own digest of what it got."""

    run: str
    epoch: int
    seq: int
    digest: str
    sent_digest: str | None
    plan: dict[str, Any]


class StepWire(Struct, frozen=True):
    """``ltl.step`` (robot trace): one executed action and the state it led to."""

    run: str
    epoch: int
    seq: int
    index: int
    action: str
    state: State


class DoneWire(Struct, frozen=True):
    """``ltl.done`` (robot status): the plan ``(epoch, seq)`` is done; ``segments`` maps
    each epoch (a decimal string) to the states the robot went through in it."""

    run: str
    epoch: int
    seq: int
    state: State
    segments: dict[str, list[State]]


class ReplanWire(Struct, frozen=True, omit_defaults=True):
    """``ltl.replan`` (robot → planner request): R3/R4 add ``executed``, R4 ``edges``
    and, for corridors blocked for this robot only, ``private``."""

    run: str
    strategy: str
    epoch: int
    seq: int
    executed: list[State] | None = None
    edges: list[Edge] | None = None
    private: list[Edge] | None = None


class ReplanResultWire(Struct, frozen=True, omit_defaults=True):
    """``ltl.replan_result`` (the planner's reply to ``ltl.replan``)."""

    outcome: str
    epoch: int | None = None
    seq: int | None = None
    took_ms: float | None = None
    detail: str | None = None


class SyncWire(Struct, frozen=True):
    """``ltl.sync`` (planner → every robot request): stop and report epoch ``epoch``."""

    run: str
    epoch: int


class SyncReplyWire(Struct, frozen=True):
    """``ltl.sync_reply``: the robot's segment of the epoch, where it is, and whether
    it has failed."""

    segment: list[State]
    state: State
    failed: bool


class MapWire(Struct, frozen=True):
    """``ltl.map`` (planner, retained): every corridor reported blocked for the map."""

    run: str
    blocked: list[Edge]


class DisturbWire(Struct, frozen=True, omit_defaults=True):
    """``ltl.disturb`` (``teamtree disturb`` → robot request)."""

    kind: str
    mode: str | None = None
    region: str | None = None
    edge: Edge | None = None
    scope: str | None = None


class DisturbAckWire(Struct, frozen=True):
    """``ltl.disturb_ack``: the robot's answer to ``ltl.disturb``."""

    accepted: bool
    detail: str


class VerdictWire(Struct, frozen=True):
    """``ltl.verdict`` (planner, retained) as robots read it: the fields every verdict
    has (the rest, e.g. ``segments``, are ignored here)."""

    run: str
    satisfied: bool
    impossible: bool
    reason: str


BODIES: dict[str, type[Struct]] = {
    "ltl.plan": PlanMessageWire,
    "ltl.plan_received": PlanReceivedWire,
    "ltl.step": StepWire,
    "ltl.done": DoneWire,
    "ltl.replan": ReplanWire,
    "ltl.replan_result": ReplanResultWire,
    "ltl.sync": SyncWire,
    "ltl.sync_reply": SyncReplyWire,
    "ltl.map": MapWire,
    "ltl.disturb": DisturbWire,
    "ltl.disturb_ack": DisturbAckWire,
    "ltl.verdict": VerdictWire,
}

T = TypeVar("T", bound=Struct)


def decode(body: Any, typ: type[T]) -> T:
    """`body` as a `typ` of ``BODIES``. Raises LtlWireError naming the kind and the
    field's path (and, for ``ltl.done``, a segment key that is not an epoch)."""
    kind = next(k for k, t in BODIES.items() if t is typ)
    msg = decode_body(body, typ, LtlWireError, kind)
    if isinstance(msg, DoneWire):
        for key in msg.segments:
            if not key.isdigit():
                where = "- at `$.segments`"
                raise LtlWireError(f"bad {kind} body: key {key!r} is not an epoch {where}")
    return msg


def to_wire(msg: Struct) -> dict[str, Any]:
    """A Struct of ``BODIES`` as the map the agents publish, with lists (not tuples)
    for arrays: exactly what a receiver decodes from the wire."""
    return msgspec.msgpack.decode(msgspec.msgpack.encode(msg))
