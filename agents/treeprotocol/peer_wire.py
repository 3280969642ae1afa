"""The peer rule's messages on the wire (docs/protocol.md, "Task trees").

Encoders and decoders for claims, claim replies, node transitions and snapshots,
shared by every agent that runs a ``TaskController`` (the seed 000 robot and the
seed 004 multitask robot) and read by the observers. Each body is a declared msgspec
Struct (ClaimWire, ReplyWire, TransitionWire, SnapshotWire, ...), and each encoder
builds that Struct and writes its fields in order, so what goes out is what comes
in: decoders check every field's type and raise PeerWireError (a ``ValueError``
naming the field's path) on a malformed body; callers drop the message and log it.
A field that is ``UNSET`` is left out of the body (a multitask robot's leaf
transitions carry no ``potential`` once a behaviour is done).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from teamtree.planners.tasktree import (
    Claim,
    ClaimReply,
    Interest,
    InterestAck,
    NodeReport,
    NodeStatus,
    PeerPotentials,
    PeerState,
    Snapshot,
    Stamp,
    Transition,
)

__all__ = [
    "AckedWire",
    "ClaimWire",
    "InterestAckWire",
    "InterestAcksWire",
    "InterestWire",
    "LeafSnapshotWire",
    "LeafTransitionWire",
    "PeerWireError",
    "PotentialsWire",
    "ReplyWire",
    "ReportWire",
    "SnapshotWire",
    "TransitionWire",
    "UnitTransitionWire",
    "claim_from_wire",
    "claim_to_wire",
    "interest_ack_from_wire",
    "interest_ack_to_wire",
    "interest_acks_from_wire",
    "interest_acks_to_wire",
    "interest_from_wire",
    "interest_to_wire",
    "potentials_from_wire",
    "potentials_to_wire",
    "reply_from_wire",
    "reply_to_wire",
    "snapshot_from_wire",
    "snapshot_to_wire",
    "stamp_from_wire",
    "transition_from_wire",
    "transition_to_wire",
    "working_leaves",
]


T = TypeVar("T")

#: ``[wall_ms, logical, agent]``
StampWire = tuple[int, int, str]


class PeerWireError(ValueError):
    """A peer-rule body that does not match its declared type."""


class ClaimWire(Struct, frozen=True):
    """The ``node.claim`` body."""

    claim_id: str
    node: str
    claimant: str
    stamp: StampWire
    potential: float = 0.0
    round: int = 0


class ReportWire(Struct, frozen=True):
    """One node's state in a claim reply."""

    node: str
    state: PeerState
    agent: str | None = None
    stamp: StampWire | None = None
    potential: float = 0.0


class ReplyWire(Struct, frozen=True, kw_only=True):
    """The ``node.claim_reply`` body (fields in the order they go out)."""

    claim_id: str
    node: str
    claimant: str
    replier: str
    round: int = 0
    reports: list[ReportWire]


class TransitionWire(Struct, frozen=True):
    """The ``node.transition`` body; ``potential`` and ``grasp`` are for observers (the
    peer rule does not use them; a seed 000 robot always sends both, null when not
    known), other extra keys are ignored."""

    node: str
    agent: str
    status: NodeStatus
    stamp: StampWire
    potential: float | UnsetType | None = UNSET
    grasp: float | UnsetType | None = UNSET


class UnitTransitionWire(TransitionWire, frozen=True, kw_only=True):
    """A multitask robot's ``unit.transition``: the peer rule's transition of one unit
    (``node``), with the unit's ``leaves``."""

    leaves: list[str]


class LeafTransitionWire(TransitionWire, frozen=True, kw_only=True):
    """A multitask robot's ``node.transition`` of one leaf (docs/multitask.md): the
    round (``step``) and simulated time (``sim_s``) it happened at; a ``working`` one
    adds its potential, ``grasp`` null, its simulated duration, the resources it owns,
    the leaves started with it and its unit."""

    step: int
    sim_s: float
    duration_s: float | UnsetType = UNSET
    resources: list[str] | UnsetType = UNSET
    together: list[str] | UnsetType = UNSET
    unit: str | UnsetType = UNSET


class SnapshotWire(Struct, frozen=True):
    """The ``node.snapshot`` body; ``working`` is null, one leaf id or a list of them."""

    agent: str
    stamp: StampWire
    done: list[str]
    working: str | list[str] | None = None


class LeafSnapshotWire(Struct, frozen=True):
    """A multitask robot's ``node.snapshot`` (docs/multitask.md): its leaves done,
    skipped (their goal already held) and working, each a list."""

    agent: str
    stamp: StampWire
    done: list[str]
    skipped: list[str]
    working: list[str]


class PotentialsWire(Struct, frozen=True):
    """The ``node.potentials`` body: ``agent``'s activation potentials in thousandths.
    With ``index``, of the leaves at those positions of the tree's leaf order
    (pre-order, from 0; the others 0): a robot sends its best open ones only
    (``contention.top_count``). Without, of every leaf, in that order."""

    agent: str
    milli: list[Annotated[int, Meta(ge=0)]]
    index: list[Annotated[int, Meta(ge=0)]] | None = None


class InterestWire(Struct, frozen=True):
    """The ``node.interest`` body: the leaves ``agent`` may claim (declared interest)."""

    agent: str
    stamp: StampWire
    leaves: list[str]


class InterestAckWire(Struct, frozen=True):
    """The ``node.interest_ack`` body: ``agent`` recorded ``declarer``'s declaration of
    ``stamp``; ``own`` is ``agent``'s current declaration (null before its first)."""

    agent: str
    declarer: str
    stamp: StampWire
    own: InterestWire | None = None


class AckedWire(Struct, frozen=True):
    """One entry of a ``node.interest_acks`` body: the declaration of ``stamp`` by
    ``declarer`` was recorded."""

    declarer: str
    stamp: StampWire


MAX_BATCHED_ACKS = 4096
"""The most entries a ``node.interest_acks`` body may hold (a team far larger than
any this runtime serves); a longer one is malformed."""


class InterestAcksWire(Struct, frozen=True):
    """The ``node.interest_acks`` body: ``agent`` recorded every declaration in ``acks``,
    sent once to the team in place of one ``node.interest_ack`` to each declarer (a
    burst of declarations, as at a mission's start); ``own`` as in
    ``node.interest_ack``."""

    agent: str
    acks: Annotated[list[AckedWire], Meta(min_length=1, max_length=MAX_BATCHED_ACKS)]
    own: InterestWire | None = None


def _encode(msg: Struct) -> dict[str, Any]:
    """`msg` as the map that goes out (fields in order; an ``UNSET`` one left out).
    Encoders build their Struct with each stamp as a list, the form a decoded body has
    (``to_builtins`` keeps a tuple; msgpack writes both as the same array)."""
    return msgspec.to_builtins(msg)


def _s(stamp: Stamp) -> Any:
    """A stamp as it goes out: ``[wall_ms, logical, agent]``."""
    return list(stamp)


def _decode(body: Any, typ: type[T]) -> T:
    try:
        return msgspec.convert(body, typ, strict=True)
    except msgspec.ValidationError as exc:
        raise PeerWireError(
            f"bad {typ.__name__.removesuffix('Wire').lower()} body: {exc}"
        ) from None


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
    return _encode(
        ClaimWire(
            claim.claim_id,
            claim.node,
            claim.claimant,
            _s(claim.stamp),
            claim.potential,
            claim.round,
        )
    )


def claim_from_wire(body: Any) -> Claim:
    """A ``node.claim`` body as a Claim; raises PeerWireError."""
    w = _decode(body, ClaimWire)
    return Claim(w.claim_id, w.node, w.claimant, w.stamp, w.potential, w.round)


def reply_to_wire(reply: ClaimReply) -> dict[str, Any]:
    """The ``node.claim_reply`` body."""
    return _encode(
        ReplyWire(
            claim_id=reply.claim_id,
            node=reply.node,
            claimant=reply.claimant,
            replier=reply.replier,
            round=reply.round,
            reports=[
                ReportWire(r.node, r.state, r.agent, _s(r.stamp) if r.stamp else None, r.potential)
                for r in reply.reports
            ],
        )
    )


def reply_from_wire(body: Any) -> ClaimReply:
    """A ``node.claim_reply`` body as a ClaimReply; raises PeerWireError."""
    w = _decode(body, ReplyWire)
    return ClaimReply(
        claim_id=w.claim_id,
        node=w.node,
        claimant=w.claimant,
        replier=w.replier,
        round=w.round,
        reports=tuple(
            NodeReport(r.node, r.state, r.agent, r.stamp, r.potential) for r in w.reports
        ),
    )


def transition_to_wire(
    transition: Transition,
    potential: float | UnsetType | None = UNSET,
    grasp: float | UnsetType | None = UNSET,
) -> dict[str, Any]:
    """The ``node.transition`` body of a seed 000 robot (its potential and grasp score
    for the observers, each null when not known)."""
    t = transition
    return _encode(TransitionWire(t.node, t.agent, t.status, _s(t.stamp), potential, grasp))


def transition_from_wire(body: Any) -> Transition:
    """A ``node.transition`` body (extra keys ignored) as a Transition; raises
    PeerWireError."""
    w = _decode(body, TransitionWire)
    return Transition(node=w.node, agent=w.agent, status=w.status, stamp=w.stamp)


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
    one = working[0] if len(working) == 1 else (list(working) or None)
    return _encode(SnapshotWire(snap.agent, _s(snap.stamp), list(snap.done), one))


def snapshot_from_wire(body: Any) -> Snapshot:
    """A ``node.snapshot`` body as a Snapshot; raises PeerWireError."""
    w = _decode(body, SnapshotWire)
    return Snapshot(
        agent=w.agent, stamp=w.stamp, done=tuple(w.done), working=working_leaves(w.working)
    )


def potentials_to_wire(agent: str, potentials: Mapping[str, float], leaves: Sequence[str]) -> dict:
    """The ``node.potentials`` body of the leaves in `potentials` (other leaves of the
    tree, `leaves` in its leaf order, count as 0), by position in that order."""
    position = {leaf: i for i, leaf in enumerate(leaves)}
    index = sorted(position[leaf] for leaf in potentials if leaf in position)
    milli = [max(0, round(1000 * float(potentials[leaves[i]]))) for i in index]
    return _encode(PotentialsWire(agent, milli, index))


def potentials_from_wire(body: Any, leaves: Sequence[str]) -> PeerPotentials:
    """A ``node.potentials`` body as PeerPotentials over `leaves` (the values above 0);
    raises PeerWireError, also for a position outside the tree or, without ``index``,
    a value count other than the tree's leaf count."""
    w = _decode(body, PotentialsWire)
    if w.index is None:
        if len(w.milli) != len(leaves):
            raise PeerWireError(
                f"bad potentials body: {len(w.milli)} values for a tree of {len(leaves)} "
                "leaves (is the sender on another mission tree?)"
            )
        pairs = zip(leaves, w.milli, strict=True)
        return PeerPotentials(w.agent, {leaf: m / 1000 for leaf, m in pairs if m})
    if len(w.index) != len(w.milli):
        raise PeerWireError(
            f"bad potentials body: {len(w.index)} positions for {len(w.milli)} values"
        )
    if w.index and max(w.index) >= len(leaves):
        raise PeerWireError(
            f"bad potentials body: leaf position {max(w.index)} in a tree of {len(leaves)} "
            "leaves (is the sender on another mission tree?)"
        )
    pairs = zip(w.index, w.milli, strict=True)
    return PeerPotentials(w.agent, {leaves[i]: m / 1000 for i, m in pairs if m})


def interest_to_wire(interest: Interest) -> dict[str, Any]:
    """The ``node.interest`` body."""
    return _encode(_interest(interest))


def _interest(interest: Interest) -> InterestWire:
    return InterestWire(interest.agent, _s(interest.stamp), list(interest.leaves))


def interest_from_wire(body: Any) -> Interest:
    """A ``node.interest`` body as an Interest; raises PeerWireError."""
    w = _decode(body, InterestWire)
    return Interest(w.agent, w.stamp, tuple(w.leaves))


def interest_ack_to_wire(ack: InterestAck) -> dict[str, Any]:
    """The ``node.interest_ack`` body."""
    own = None if ack.own is None else _interest(ack.own)
    return _encode(InterestAckWire(ack.agent, ack.declarer, _s(ack.stamp), own))


def interest_ack_from_wire(body: Any) -> InterestAck:
    """A ``node.interest_ack`` body as an InterestAck; raises PeerWireError (also when
    the declaration it carries is not the acknowledger's own)."""
    w = _decode(body, InterestAckWire)
    own = None if w.own is None else Interest(w.own.agent, w.own.stamp, tuple(w.own.leaves))
    if own is not None and own.agent != w.agent:
        raise PeerWireError("bad interest_ack body: $.own.agent is not $.agent")
    return InterestAck(w.agent, w.declarer, w.stamp, own)


def interest_acks_to_wire(acks: Sequence[InterestAck]) -> dict[str, Any]:
    """The ``node.interest_acks`` body of `acks`, all made by one agent; the last one's
    ``own`` goes out (declarations only grow, so it holds every earlier one's)."""
    if not acks:
        raise ValueError("no acknowledgements to batch")
    agent, own = acks[-1].agent, acks[-1].own
    if any(a.agent != agent for a in acks):
        raise ValueError("acknowledgements of more than one agent in one batch")
    entries = [AckedWire(a.declarer, _s(a.stamp)) for a in acks]
    return _encode(InterestAcksWire(agent, entries, None if own is None else _interest(own)))


def interest_acks_from_wire(body: Any, declarer: str) -> InterestAck | None:
    """The acknowledgement a ``node.interest_acks`` body holds for `declarer`'s
    declaration (the latest stamp if it names it twice), or None if it holds none;
    raises PeerWireError on a malformed body, whoever it acknowledges."""
    w = _decode(body, InterestAcksWire)
    own = None if w.own is None else Interest(w.own.agent, w.own.stamp, tuple(w.own.leaves))
    if own is not None and own.agent != w.agent:
        raise PeerWireError("bad interest_acks body: $.own.agent is not $.agent")
    stamps = [a.stamp for a in w.acks if a.declarer == declarer]
    if not stamps:
        return None
    return InterestAck(w.agent, declarer, max(stamps), own)
