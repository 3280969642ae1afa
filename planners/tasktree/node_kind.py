"""What a task-tree node is (seed 000 §2.2): its own module, so the tree and the size
limits (``limits``, which the tree imports) both name it."""

from enum import StrEnum

__all__ = ["NodeKind"]


class NodeKind(StrEnum):
    """What a node is: one of the three goal nodes, or a behaviour leaf (§2.2)."""

    THEN = "then"
    """Children in order: child i+1 may start only when child i is done."""
    AND = "and"
    """Children in any order, possibly in parallel; done when all are done."""
    OR = "or"
    """Alternatives: exactly one child is executed; done when that child is done."""
    BEHAVIOR = "behavior"
    """A leaf that one team member executes, e.g. ``PLACE(object=cup)``."""
