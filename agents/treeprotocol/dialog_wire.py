"""The seed-000 dialog and belief bodies between robots and humans (docs/humans.md) as
declared msgspec Structs: ``dialog.ask`` (robot → human request), ``dialog.answer``
(the human's reply), ``dialog.resolved`` (the robot's acknowledgement) and
``tom.belief`` (what a robot believes a human is doing, retained). Receivers decode
them strictly with ``decode_body``: a malformed body raises DialogWireError (a
``ValueError`` naming the field's path, e.g. ``$.node``), which they turn into the
runtime's drop warning. Field order is the senders' key order, so ``to_wire`` of a
Struct encodes to the same msgpack as the dicts built by hand before.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body

__all__ = [
    "BODIES",
    "AnswerWire",
    "AskWire",
    "BeliefWire",
    "DialogWireError",
    "ResolvedWire",
    "decode",
    "to_wire",
]


class DialogWireError(ValueError):
    """A dialog or belief body that does not match its declared type."""


class AskWire(Struct, frozen=True):
    """``dialog.ask``: the robot asks `human` whether they go on with leaf `node`."""

    dialog_id: str
    robot: str
    human: str
    node: str
    label: str
    object: str | None
    question: str
    options: list[str]
    timeout_s: float


class AnswerWire(Struct, frozen=True):
    """``dialog.answer``: ``answer`` is "continue" (the human goes on) or "concede"
    (any other word counts as an invalid answer, as a missing one does)."""

    dialog_id: str
    answer: str


class ResolvedWire(Struct, frozen=True):
    """``dialog.resolved``: how the dialog ended; ``how`` is answered, timeout or
    invalid."""

    dialog_id: str
    robot: str
    human: str
    node: str
    label: str
    answer: str
    how: str
    rtt_ms: float
    robot_continues: bool


class BeliefWire(Struct, frozen=True):
    """``tom.belief``: the robot's model of one human (``ToMModel.belief``)."""

    human: str
    hand: str
    active: str | None
    label: str | None
    intent_object: str | None
    done: list[str]
    conceded: list[str]
    t: float | None


BODIES: dict[str, type[Struct]] = {
    "dialog.ask": AskWire,
    "dialog.answer": AnswerWire,
    "dialog.resolved": ResolvedWire,
    "tom.belief": BeliefWire,
}

T = TypeVar("T", bound=Struct)


def decode(body: Any, typ: type[T]) -> T:
    """`body` as a `typ` of ``BODIES``. Raises DialogWireError naming the kind and the
    field's path."""
    kind = next(k for k, t in BODIES.items() if t is typ)
    return decode_body(body, typ, DialogWireError, kind)


def to_wire(msg: Struct) -> dict[str, Any]:
    """A Struct of ``BODIES`` as the map the agents publish."""
    return msgspec.msgpack.decode(msgspec.msgpack.encode(msg))
