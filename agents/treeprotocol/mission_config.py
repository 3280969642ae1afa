"""The task tree of a ``[mission] kind = "tasktree"`` config, read where a process
needs it before it joins a team: the robots and simulated humans as they start, the
CLI's ``tree``. Apart from the tree's wire codec (mission_wire.py), which a robot
loads only when it publishes the tree, after it is ONLINE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamtree.broker import ConfigError, SpecificationError
from teamtree.planners.tasktree import TaskTree, tree_from_dict

if TYPE_CHECKING:
    from teamtree.agents.runtime.config import TeamConfig

__all__ = ["mission_tree"]


def mission_tree(config: TeamConfig) -> TaskTree:
    """The task tree of a ``[mission] kind = "tasktree"`` config. Raises ConfigError."""
    raw = config.mission.params.get("tree")
    if raw is None:
        raise ConfigError(
            'is missing; give the task tree, e.g. tree = "THEN(cup, AND(sugar, tea_pot))"',
            path=str(config.path),
            key="mission.tree",
        )
    try:
        return tree_from_dict(raw, where="mission.tree")
    except SpecificationError as exc:
        raise ConfigError(str(exc), path=str(config.path), key="mission.tree") from None
