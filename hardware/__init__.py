"""What a robot is: geometry, resources, profiles, capability matrices; the simulated world.

The simulated world's ZeroMQ protocol and client (``sim_protocol``, ``sim_client``) are
submodules imported by name, not from here, so planners importing this package load
neither zmq nor asyncio.
"""

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
from teamtree.hardware.geometry import ArmModel, GraspOrientation, ShapePrimitive
from teamtree.hardware.profiles import (
    BAXTER,
    PR2,
    PROFILES,
    RobotProfileSpec,
    arm_base_position,
    arm_model,
    can_place,
    drive_to_reach,
    profile,
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
from teamtree.hardware.world import (
    GOAL_TOLERANCE,
    CommandStatus,
    RobotBody,
    World,
    WorldObject,
)

__all__ = [
    "BAXTER",
    "DEFAULT_ACTIONS",
    "DEFAULT_LEVELS",
    "FACTORY_ORDER",
    "GOAL_TOLERANCE",
    "IDLE_BATTERY_THRESHOLD",
    "N_DOMAINS",
    "PR2",
    "PROFILES",
    "ROBOT_TYPES",
    "ArmModel",
    "AssembledTeam",
    "CommandStatus",
    "Component",
    "Domain",
    "GraspOrientation",
    "RobotBody",
    "RobotProfile",
    "RobotProfileSpec",
    "RobotType",
    "ShapePrimitive",
    "StrengthCapability",
    "TypeCapability",
    "World",
    "WorldObject",
    "align_levels",
    "arm_base_position",
    "arm_model",
    "can_place",
    "drive_to_reach",
    "factory_robots",
    "find_tower",
    "make_robot",
    "profile",
    "profiles_from_dicts",
    "strength_capability",
    "strength_levels",
    "tower_is_feasible",
    "tower_orders",
    "type_capability",
]
