"""What a robot is: resources, profiles, capability matrices; the simulated world."""

from teamtree.hardware.assembled_team import (
    AssembledTeam,
    find_tower,
    tower_is_feasible,
    tower_orders,
)
from teamtree.hardware.capability_matrix import (
    DEFAULT_LEVELS,
    N_DOMAINS,
    StrengthCapability,
    TypeCapability,
    align_levels,
    strength_capability,
    strength_levels,
    type_capability,
)
from teamtree.hardware.robot_types import (
    DEFAULT_ACTIONS,
    FACTORY_ORDER,
    IDLE_BATTERY_THRESHOLD,
    ROBOT_TYPES,
    Component,
    Domain,
    RobotProfile,
    RobotType,
    factory_robots,
    make_robot,
    profiles_from_dicts,
)

__all__ = [
    "DEFAULT_ACTIONS",
    "DEFAULT_LEVELS",
    "FACTORY_ORDER",
    "IDLE_BATTERY_THRESHOLD",
    "N_DOMAINS",
    "ROBOT_TYPES",
    "AssembledTeam",
    "Component",
    "Domain",
    "RobotProfile",
    "RobotType",
    "StrengthCapability",
    "TypeCapability",
    "align_levels",
    "factory_robots",
    "find_tower",
    "make_robot",
    "profiles_from_dicts",
    "strength_capability",
    "strength_levels",
    "tower_is_feasible",
    "tower_orders",
    "type_capability",
]
