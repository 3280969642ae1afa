"""Names a config uses across its entries, checked before ``run`` starts anything.

Each kind checks its own keys (``validate_kinds``); what no single entry can check is
that the names one entry uses exist in another: the objects of the mission's task
tree in the world, the robot a simulated driver drives among the world's robots. A
misspelt ``suger`` in the tree would otherwise show only as a mission that makes no
progress until its timeout. The tree's objects are checked only when every driver is
a simulated one: a real robot's driver (VDA 5050) handles loads and places the world
does not know.
"""

from __future__ import annotations

from typing import Any

from teamtree.agents.missions.protocol import tree_objects
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.broker import ConfigError, SpecificationError

__all__ = ["check_names"]


def _table_keys(spec: AgentSpec, key: str) -> set[str] | None:
    table = spec.params.get(key)
    return set(table) if isinstance(table, dict) else None


def _error(config: TeamConfig, key: str, message: str) -> ConfigError:
    return ConfigError(message, path=str(config.path), key=key)


def _entry_key(config: TeamConfig, spec: AgentSpec, name: str) -> str:
    return f"agents[{config.agents.index(spec)}].{name}"


def check_names(config: TeamConfig) -> None:
    """ConfigError (exit 2) naming the first object or robot that `config` uses
    but does not have, and what it has instead."""
    worlds = [spec for spec in config.agents if spec.kind == "world"]
    objects: set[str] | None = None
    robots: set[str] | None = None
    for world in worlds:
        found, bodies = _table_keys(world, "objects"), _table_keys(world, "robots")
        if found is not None:
            objects = (objects or set()) | found
        if bodies is not None:
            robots = (robots or set()) | bodies
    outside = [s.id for s in config.agents if s.kind.endswith("driver") and s.kind != "sim_driver"]
    if objects is not None and not outside:  # another driver's robot handles what it has
        try:
            needed = tree_objects(config.mission)
        except SpecificationError:
            needed = frozenset()  # the tree's own error is the members' to report
        for obj in sorted(needed - objects):
            raise _error(
                config,
                "mission.tree",
                f"names object {obj!r}, which the world lacks (it has: "
                f"{', '.join(sorted(objects)) or 'no objects'})",
            )
    for spec in config.agents:
        robot: Any = spec.params.get("robot")
        known = robots is not None and spec.kind == "sim_driver"
        if known and isinstance(robot, str) and robot not in robots:  # type: ignore[operator]
            raise _error(
                config,
                _entry_key(config, spec, "robot"),
                f"is {robot!r}, which the world lacks (its robots: "
                f"{', '.join(sorted(robots or ())) or 'none'})",
            )
