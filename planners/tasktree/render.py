"""One tree walker and a unicode renderer (for ``teamtree tree CONFIG``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from teamtree.planners.tasktree.activation import NodeActivation
from teamtree.planners.tasktree.status import NodeStatus
from teamtree.planners.tasktree.tree import TaskNode, TaskTree

__all__ = ["WalkStep", "render_unicode", "walk"]

_MARK = {
    NodeStatus.INACTIVE: "·",
    NodeStatus.ACTIVE: "○",
    NodeStatus.WORKING: "▶",
    NodeStatus.DONE: "✔",
    NodeStatus.SKIPPED: "↷",
}


@dataclass(frozen=True)
class WalkStep:
    """One node met by ``walk``: its depth and, per ancestor level, whether it was last."""

    node: TaskNode
    depth: int
    last: tuple[bool, ...]


def walk(tree: TaskTree) -> Iterator[WalkStep]:
    """Pre-order walk, children left to right; every renderer builds on it."""
    stack: list[tuple[TaskNode, tuple[bool, ...]]] = [(tree.root, ())]
    while stack:
        node, last = stack.pop()
        yield WalkStep(node, len(last), last)
        n = len(node.children)
        for i in range(n - 1, -1, -1):
            stack.append((node.children[i], (*last, i == n - 1)))


def render_unicode(
    tree: TaskTree,
    statuses: Mapping[str, NodeStatus] | None = None,
    activations: Mapping[str, NodeActivation] | None = None,
    *,
    show_ids: bool = True,
) -> str:
    """The tree as box-drawing text, one node a line, with states if given.

    ``✔`` done, ``▶`` working, ``○`` active, ``·`` inactive, ``↷`` skipped; with
    ``activations``, each line also shows level and potential.
    """
    lines = []
    for step in walk(tree):
        prefix = "".join("    " if last else "│   " for last in step.last[:-1])
        if step.depth:
            prefix += "└── " if step.last[-1] else "├── "
        text = step.node.label
        if step.node.name:
            text += f" «{step.node.name}»"
        if show_ids:
            text += f"  [{step.node.id}]"
        if statuses is not None and step.node.id in statuses:
            st = statuses[step.node.id]
            text = f"{_MARK[st]} {text}  {st.value}"
        if activations is not None and step.node.id in activations:
            a = activations[step.node.id]
            text += f"  level={a.level:g} potential={a.potential:.3g}"
        lines.append(prefix + text)
    return "\n".join(lines)
