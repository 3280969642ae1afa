"""The world service's broker messages as declared msgspec Structs (docs/protocol.md,
"The simulated world"): the ``world.move_object`` request it takes, and the
``world.violation`` events it publishes (the world's own violation records, which
``tests/test_world_wire.py`` checks against the type). A malformed request is dropped with the
runtime's aggregated drop warning naming the field, and answered ``bad_params`` when
it asked for a reply."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body


class WorldWireError(ValueError):
    """A world message body that does not match its declared type."""


class MoveObject(Struct, frozen=True):
    """``world.move_object``: put `object` at `position` (and turn it to `yaw`)."""

    object: str
    position: tuple[float, float, float]
    yaw: float | None = None


class Violation(Struct, frozen=True):
    """``world.violation``: a coordination error the world saw (``double_hold``,
    ``placed_twice``, ``double_run``); ``robots`` are the bodies (robots or hands)."""

    seq: int
    t: float
    kind: str
    object: str
    robots: list[str]
    command_id: str
    node: str | None = None


def decode_move_object(body: Any) -> MoveObject:
    """A ``world.move_object`` body; raises WorldWireError naming the field."""
    return decode_body(body, MoveObject, WorldWireError, "world.move_object")
