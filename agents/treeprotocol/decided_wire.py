"""``node.claim_decided`` on ``<me>/events`` (docs/protocol.md, "Task trees"): a seed 000
robot's claim won or lost, why, and how long it took. The robot publishes it from
``ClaimDecidedWire``; the monitor, the web view and the timeline read it back with
``claim_decided_from_wire``, which raises PeerWireError (naming the field's path) on a
malformed body, and they leave such a body out.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from teamtree.agents.treeprotocol.peer_wire import PeerWireError

__all__ = ["ClaimDecidedWire", "claim_decided_from_wire", "claim_decided_to_wire", "lost_claim"]


class ClaimDecidedWire(Struct, frozen=True, kw_only=True):
    """The ``node.claim_decided`` body (fields in the order they go out). ``elapsed_ms``
    runs from the claim's first publish to its decision, by the claimant's clock; it is
    left out for a claim decided before it was published."""

    claim_id: str
    node: str
    won: bool
    elapsed_ms: float | UnsetType = UNSET
    reason: str


def claim_decided_to_wire(
    claim_id: str, node: str, won: bool, reason: str, elapsed_ms: float | UnsetType = UNSET
) -> dict[str, Any]:
    """The ``node.claim_decided`` body."""
    body = ClaimDecidedWire(
        claim_id=claim_id, node=node, won=won, elapsed_ms=elapsed_ms, reason=reason
    )
    return msgspec.to_builtins(body)


def claim_decided_from_wire(body: Any) -> ClaimDecidedWire:
    """A ``node.claim_decided`` body; raises PeerWireError naming the field."""
    try:
        return msgspec.convert(body, ClaimDecidedWire, strict=True)
    except msgspec.ValidationError as exc:
        raise PeerWireError(f"bad claim_decided body: {exc}") from None


def lost_claim(body: Any) -> ClaimDecidedWire | None:
    """`body` decoded when it tells of a lost claim; None when the claim was won or the
    body is malformed (an observer shows nothing for either)."""
    try:
        decided = claim_decided_from_wire(body)
    except PeerWireError:
        return None
    return None if decided.won else decided
