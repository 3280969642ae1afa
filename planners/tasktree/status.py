"""Node states as the paper names them (seed 000 §2.2, Figs. 12-14); wire names are lowercase."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["NodeStatus"]


class NodeStatus(StrEnum):
    """The state of a node in one team member's copy of the task tree.

    The value is the wire name (and the timeline colour key). Statuses are from the
    holder's point of view: ``working`` means *this* member executes the behaviour; a
    behaviour a peer executes is ``inactive`` here (it is not available to this
    member) and the peer's own copy shows it ``working``.
    """

    INACTIVE = "inactive"
    """The constraints do not allow the node now: a THEN predecessor is not done, an OR
    sibling was chosen or is done (not needed), or a peer is working on it."""
    ACTIVE = "active"
    """The constraints allow the node (it has activation level) and nobody works on it;
    this member may be claiming it (§2.3, "aims to activate")."""
    WORKING = "working"
    """This member executes the behaviour (for a goal node: some leaf below it)."""
    DONE = "done"
    """Completed by any team member (for a goal node: its constraint is satisfied)."""
    SKIPPED = "skipped"
    """Reserved for seed 004: a THEN child whose effect already holds is skipped."""
