"""The peer rule's vocabulary: the events a ``TaskController`` consumes and the actions
it returns (``peer.py`` holds the rule itself).

The events come from peers (``Claim``, ``ClaimReply``, ``Transition``, ``Snapshot``,
``PeerPotentials``, ``Interest``, ``InterestAck``), from the agent's own loop and body
(``Tick``, ``Want``, ``BehaviourFinished``, ``ConnectionChanged``,
``PresenceChanged``, ``PotentialsChanged``) and from its observation of the world
(``EffectConfirmed``, ``EffectUndone``, ``EvidenceChanged``, ``WorldShown``). The
actions publish (``PublishClaim``, ``PublishReply``, ``PublishTransition``,
``PublishSnapshot``, ``PublishPotentials``, ``PublishInterest``,
``PublishInterestAck``), drive a behaviour (``StartBehaviour``, ``PauseBehaviour``,
``ResumeBehaviour``, ``AbortBehaviour``) or inform (``ClaimDecided``: for logs and
claim-latency figures). They live apart from the controller so that its parts
(``claims``, ``peer_reports``, ``interest_exchange``) build them without importing it.

Events and actions are frozen msgspec Structs (cheaper to make than dataclasses, and
a robot makes several per message); copy one with ``msgspec.structs.replace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from msgspec import Struct
from msgspec.structs import force_setattr

from teamtree.planners.tasktree.contention import PeerPotentials, PublishPotentials
from teamtree.planners.tasktree.interest import (
    Interest,
    InterestAck,
    PublishInterest,
    PublishInterestAck,
)
from teamtree.planners.tasktree.status import NodeStatus

__all__ = [
    "AbortBehaviour",
    "BehaviourFinished",
    "Claim",
    "ClaimDecided",
    "ClaimReply",
    "ClaimRule",
    "ConnectionChanged",
    "ControllerAction",
    "EffectConfirmed",
    "EffectUndone",
    "Event",
    "EvidenceChanged",
    "NodeReport",
    "PauseBehaviour",
    "PeerState",
    "PotentialsChanged",
    "PresenceChanged",
    "PublishClaim",
    "PublishReply",
    "PublishSnapshot",
    "PublishTransition",
    "ResumeBehaviour",
    "Snapshot",
    "Stamp",
    "StartBehaviour",
    "Tick",
    "Transition",
    "Want",
    "WorldShown",
]

Stamp = tuple[int, int, str]
"""A hybrid-logical-clock reading ``(wall_ms, logical, agent_id)``; tuples order it."""


class ClaimRule(StrEnum):
    """How two competing claims are ordered (rule 3 of ``peer.py``)."""

    EARLIEST = "earliest"
    """Earliest stamp wins, ties by agent id (seed 000 Fig. 8)."""
    POTENTIAL = "potential"
    """Higher activation potential wins, then earliest stamp (an option, not the paper)."""


class PeerState(StrEnum):
    """A replier's own state for one node, as carried in a ``NodeReport``."""

    NONE = "none"
    """Nothing known: not done, nobody working, no claim of the replier's."""
    CLAIMED = "claimed"
    """The replier has a pending claim on the node (``stamp``, ``potential`` set)."""
    WORKING = "working"
    """``agent`` (the replier or a peer it heard from) executes the node."""
    DONE = "done"
    """The node is done (by anyone the replier knows of)."""


# ------------------------------------------------------------------ messages (events)


class Claim(Struct, frozen=True):
    """A member's announcement that it is about to activate ``node`` (§2.3 step 1).

    ``round`` counts re-asks of the same claim (rule 4); the stamp never changes.
    """

    claim_id: str
    node: str
    claimant: str
    stamp: Stamp
    potential: float = 0.0
    round: int = 0


class NodeReport(Struct, frozen=True):
    """One node's state as a replier knows it (§2.3 step 2)."""

    node: str
    state: PeerState
    agent: str | None = None
    stamp: Stamp | None = None
    potential: float = 0.0


class ClaimReply(Struct, frozen=True):
    """A peer's answer to ``claim_id``: reports for the claimed node and its conflict set.

    The first report is always for the claimed node itself (``none`` if nothing known).
    """

    claim_id: str
    node: str
    claimant: str
    replier: str
    reports: tuple[NodeReport, ...]
    round: int = 0


class Transition(Struct, frozen=True):
    """``agent`` moved ``node`` to ``status``: working, done, or inactive (released)."""

    node: str
    agent: str
    status: NodeStatus
    stamp: Stamp


class Snapshot(Struct, frozen=True):
    """What a member knows, published retained so a late joiner can catch up.

    ``done``: leaves done by anyone it knows of; ``working``: the leaves it executes
    (a leaf id or None is read as a tuple of zero or one).
    """

    agent: str
    stamp: Stamp
    done: tuple[str, ...]
    working: tuple[str, ...] | str | None = ()

    def __post_init__(self) -> None:
        w = self.working
        if w is None:
            force_setattr(self, "working", ())
        elif isinstance(w, str):
            force_setattr(self, "working", (w,))
        else:
            force_setattr(self, "working", tuple(w))


class Tick(Struct, frozen=True):
    """One cycle of the update loop (§2.2): may start a claim."""


class Want(Struct, frozen=True):
    """Claim ``node`` now (members with ``auto_select=False``; works for any member).

    Answered by the same ``ClaimDecided`` as a claim from a tick: at once and lost when
    the claim cannot start (another pending, at capacity, not synced, not allowed).
    """

    node: str
    potential: float | None = None


class PresenceChanged(Struct, frozen=True):
    """Presence of ``agent`` changed (retained ONLINE, or OFFLINE / Last Will)."""

    agent: str
    online: bool


class PotentialsChanged(Struct, frozen=True):
    """World facts: new activation potentials (eq. 1) for some leaves."""

    potentials: Mapping[str, float]


class BehaviourFinished(Struct, frozen=True):
    """The driver reports the behaviour on ``node`` ended (``succeeded`` or not)."""

    node: str
    succeeded: bool = True


class ConnectionChanged(Struct, frozen=True):
    """This member lost (``connected=False``) or regained the broker.

    On regaining it, ``online_peers`` are the peers presence says are online; the
    controller waits for each one's snapshot before claiming again.
    """

    connected: bool
    online_peers: frozenset[str] = frozenset()


class EffectConfirmed(Struct, frozen=True):
    """The world (the driver's observation) shows ``node``'s effect, e.g. its object at
    its goal: the leaf is done whoever brought it there ("done means done")."""

    node: str


class EvidenceChanged(Struct, frozen=True):
    """The world's keyframe says which leaves it can show done (``evidence_leaves``,
    rule 7). A leaf that left the set is done on a peer's word again: the peer dones
    it was refused meanwhile are believed now."""

    leaves: frozenset[str]


class WorldShown(Struct, frozen=True):
    """A keyframe of this member's world was observed (every object), after the
    ``EffectConfirmed`` and ``EffectUndone`` it showed: the leaves held back on a
    peer's unconfirmed done (rule 7's doubt) may be claimed again."""


class EffectUndone(Struct, frozen=True):
    """The world shows ``node``'s effect gone after it was done, e.g. its object moved
    away from its goal: the leaf is open again ("undone means undone")."""

    node: str


Event = (
    Tick
    | Want
    | Claim
    | ClaimReply
    | Transition
    | Snapshot
    | PresenceChanged
    | PotentialsChanged
    | BehaviourFinished
    | ConnectionChanged
    | EffectConfirmed
    | EffectUndone
    | EvidenceChanged
    | WorldShown
    | PeerPotentials
    | Interest
    | InterestAck
)

# ------------------------------------------------------------------ actions


class PublishClaim(Struct, frozen=True):
    """Publish ``claim`` to every peer, or only to ``to`` when set (QoS 1)."""

    claim: Claim
    to: str | None = None


class PublishReply(Struct, frozen=True):
    """Send ``reply`` to the claimant (``reply.claimant``), QoS 1."""

    reply: ClaimReply


class PublishTransition(Struct, frozen=True):
    """Publish this member's node transition to every peer (QoS 1)."""

    transition: Transition


class PublishSnapshot(Struct, frozen=True):
    """Publish ``snapshot`` retained, replacing the previous one."""

    snapshot: Snapshot


class StartBehaviour(Struct, frozen=True):
    """Tell the driver to execute the behaviour of ``node``."""

    node: str


class PauseBehaviour(Struct, frozen=True):
    """Tell the driver to pause ``node`` (the broker is lost; fencing)."""

    node: str


class ResumeBehaviour(Struct, frozen=True):
    """Tell the driver to resume the paused ``node`` (its re-claim won)."""

    node: str


class AbortBehaviour(Struct, frozen=True):
    """Tell the driver to cancel ``node``: someone else took or finished it."""

    node: str
    reason: str


class ClaimDecided(Struct, frozen=True):
    """Informational: ``claim`` was won or lost, and why."""

    claim: Claim
    won: bool
    reason: str


ControllerAction = (
    PublishClaim
    | PublishReply
    | PublishTransition
    | PublishSnapshot
    | StartBehaviour
    | PauseBehaviour
    | ResumeBehaviour
    | AbortBehaviour
    | ClaimDecided
    | PublishPotentials
    | PublishInterest
    | PublishInterestAck
)
"""What a ``TaskController`` asks its agent to do: publish, drive a behaviour, or
report how a claim was decided."""
