"""The peer rule's messages on the wire (docs/protocol.md, "Task trees").

Encoders and decoders for claims, claim replies, node transitions and snapshots,
shared by every agent that runs a ``TaskController`` (the seed 000 robot and the
seed 004 multitask robot). Decoders check every field's type (a body of the wrong
shape never reaches the planner, where it could raise) and raise ``ValueError`` naming
the field on a malformed body; callers drop the message and count it.
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


def _map(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValueError(f"{what} is a {type(body).__name__}, expected a map")
    return body


def _text(body: dict[str, Any], key: str, *, optional: bool = False) -> Any:
    value = body.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 256:
        raise ValueError(f"{key!r} is {value!r}, expected a non-empty string")
    return value


def _number(body: dict[str, Any], key: str, default: float = 0.0) -> float:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError(f"{key!r} is {value!r}, expected a number")
    return float(value)


def _count(body: dict[str, Any], key: str) -> int:
    value = body.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key!r} is {value!r}, expected a whole number >= 0")
    return value


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
    body = _map(body, "claim")
    return Claim(
        claim_id=_text(body, "claim_id"),
        node=_text(body, "node"),
        claimant=_text(body, "claimant"),
        stamp=stamp_from_wire(body.get("stamp")),
        potential=_number(body, "potential"),
        round=_count(body, "round"),
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


def _report(r: Any) -> NodeReport:
    r = _map(r, "report")
    state = r.get("state")
    if not isinstance(state, str):
        raise ValueError(f"report state is {state!r}, expected one of none/claimed/working/done")
    return NodeReport(
        node=_text(r, "node"),
        state=PeerState(state),
        agent=_text(r, "agent", optional=True),
        stamp=stamp_from_wire(r["stamp"]) if r.get("stamp") is not None else None,
        potential=_number(r, "potential"),
    )


def reply_from_wire(body: Any) -> ClaimReply:
    """A ``node.claim_reply`` body as a ClaimReply."""
    body = _map(body, "claim reply")
    reports = body.get("reports")
    if not isinstance(reports, list | tuple):
        raise ValueError(f"'reports' is {reports!r}, expected a list")
    return ClaimReply(
        claim_id=_text(body, "claim_id"),
        node=_text(body, "node"),
        claimant=_text(body, "claimant"),
        replier=_text(body, "replier"),
        round=_count(body, "round"),
        reports=tuple(_report(r) for r in reports),
    )


def transition_from_wire(body: Any) -> Transition:
    """A ``node.transition`` body (extra keys ignored) as a Transition."""
    body = _map(body, "transition")
    status = body.get("status")
    if not isinstance(status, str):
        raise ValueError(f"'status' is {status!r}, expected working/done/inactive")
    return Transition(
        node=_text(body, "node"),
        agent=_text(body, "agent"),
        status=NodeStatus(status),
        stamp=stamp_from_wire(body.get("stamp")),
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
    body = _map(body, "snapshot")
    done = body.get("done")
    if not isinstance(done, list | tuple) or not all(isinstance(n, str) for n in done):
        raise ValueError(f"'done' is {done!r}, expected a list of leaf ids")
    return Snapshot(
        agent=_text(body, "agent"),
        stamp=stamp_from_wire(body.get("stamp")),
        done=tuple(done),
        working=working_leaves(body.get("working")),
    )
