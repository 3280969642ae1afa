"""The peer rule's messages on the wire (docs/protocol.md, "Task trees").

Encoders and decoders for claims, claim replies, node transitions and snapshots,
shared by every agent that runs a ``TaskController`` (the seed 000 robot and the
seed 004 multitask robot). Decoders raise ``KeyError``, ``TypeError`` or
``ValueError`` on a malformed body; callers drop the message and log it.
"""

from __future__ import annotations

from typing import Any

from teamtree.planners.tasktree import (
    Claim,
    ClaimReply,
    NodeReport,
    NodeStatus,
    PeerState,
    Snapshot,
    Stamp,
    Transition,
)

__all__ = [
    "claim_from_wire",
    "claim_to_wire",
    "reply_from_wire",
    "reply_to_wire",
    "snapshot_from_wire",
    "snapshot_to_wire",
    "stamp_from_wire",
    "transition_from_wire",
    "working_leaves",
]


def stamp_from_wire(value: Any) -> Stamp:
    """``[wall_ms, logical, agent]`` as a stamp tuple; ValueError otherwise."""
    if (
        isinstance(value, list | tuple)
        and len(value) == 3
        and isinstance(value[0], int)
        and isinstance(value[1], int)
        and isinstance(value[2], str)
    ):
        return (value[0], value[1], value[2])
    raise ValueError(f"not a stamp: {value!r}")


def claim_to_wire(claim: Claim) -> dict[str, Any]:
    """The ``node.claim`` body."""
    return {
        "claim_id": claim.claim_id,
        "node": claim.node,
        "claimant": claim.claimant,
        "stamp": list(claim.stamp),
        "potential": claim.potential,
        "round": claim.round,
    }


def claim_from_wire(body: Any) -> Claim:
    """A ``node.claim`` body as a Claim."""
    return Claim(
        claim_id=str(body["claim_id"]),
        node=str(body["node"]),
        claimant=str(body["claimant"]),
        stamp=stamp_from_wire(body["stamp"]),
        potential=float(body.get("potential", 0.0)),
        round=int(body.get("round", 0)),
    )


def reply_to_wire(reply: ClaimReply) -> dict[str, Any]:
    """The ``node.claim_reply`` body."""
    return {
        "claim_id": reply.claim_id,
        "node": reply.node,
        "claimant": reply.claimant,
        "replier": reply.replier,
        "round": reply.round,
        "reports": [
            {
                "node": r.node,
                "state": r.state.value,
                "agent": r.agent,
                "stamp": list(r.stamp) if r.stamp else None,
                "potential": r.potential,
            }
            for r in reply.reports
        ],
    }


def reply_from_wire(body: Any) -> ClaimReply:
    """A ``node.claim_reply`` body as a ClaimReply."""
    return ClaimReply(
        claim_id=str(body["claim_id"]),
        node=str(body["node"]),
        claimant=str(body["claimant"]),
        replier=str(body["replier"]),
        round=int(body.get("round", 0)),
        reports=tuple(
            NodeReport(
                node=str(r["node"]),
                state=PeerState(r["state"]),
                agent=r.get("agent"),
                stamp=stamp_from_wire(r["stamp"]) if r.get("stamp") is not None else None,
                potential=float(r.get("potential", 0.0)),
            )
            for r in body["reports"]
        ),
    )


def transition_from_wire(body: Any) -> Transition:
    """A ``node.transition`` body (extra keys ignored) as a Transition."""
    return Transition(
        node=str(body["node"]),
        agent=str(body["agent"]),
        status=NodeStatus(body["status"]),
        stamp=stamp_from_wire(body["stamp"]),
    )


def working_leaves(value: Any) -> tuple[str, ...]:
    """A snapshot's ``working``: null, one leaf id, or a list of them (several at once)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"working: expected a leaf id, a list of them or null, got {value!r}")


def snapshot_to_wire(snap: Snapshot) -> dict[str, Any]:
    """The ``node.snapshot`` body. ``working`` stays a leaf id or null for a member that
    works one leaf (seed 000's form) and is a list for one that works several."""
    working = tuple(snap.working)
    return {
        "agent": snap.agent,
        "stamp": list(snap.stamp),
        "done": list(snap.done),
        "working": working[0] if len(working) == 1 else (list(working) or None),
    }


def snapshot_from_wire(body: Any) -> Snapshot:
    """A ``node.snapshot`` body as a Snapshot."""
    return Snapshot(
        agent=str(body["agent"]),
        stamp=stamp_from_wire(body["stamp"]),
        done=tuple(str(n) for n in body["done"]),
        working=working_leaves(body.get("working")),
    )
