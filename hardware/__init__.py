"""What a robot is: geometry, resources, profiles, capability matrices; the simulated world.

The simulated world's ZeroMQ protocol and client (``sim_protocol``, ``sim_client``) are
submodules imported by name, not from here, so planners importing this package load
neither zmq nor asyncio.

Names load on first use (PEP 562): an agent process that needs one robot profile
does not import the simulated world or the capability matrices with it.
"""

from teamtree.broker.lazy import lazy_exports as _lazy_exports

_HOMES = {
    "assembled_team": (
        "AssembledTeam",
        "find_tower",
        "tower_is_feasible",
        "tower_orders",
    ),
    "capability_matrix": (
        "DEFAULT_LEVELS",
        "N_DOMAINS",
        "StrengthCapability",
        "TypeCapability",
        "align_levels",
        "strength_capability",
        "strength_levels",
        "type_capability",
    ),
    "geometry": (
        "ArmModel",
        "GraspOrientation",
        "ShapePrimitive",
        "row_dots",
        "up_axis",
    ),
    "lease_clocks": ("LeaseClocks",),
    "profiles": (
        "BAXTER",
        "PR2",
        "PROFILES",
        "RobotProfileSpec",
        "arm_base_position",
        "arm_model",
        "can_place",
        "drive_to_reach",
        "profile",
    ),
    "robot_types": (
        "DEFAULT_ACTIONS",
        "FACTORY_ORDER",
        "IDLE_BATTERY_THRESHOLD",
        "ROBOT_TYPES",
        "Component",
        "Domain",
        "RobotProfile",
        "RobotType",
        "factory_robots",
        "make_robot",
        "profiles_from_dicts",
    ),
    "world": (
        "GOAL_TOLERANCE",
        "CommandStatus",
        "RobotBody",
        "World",
        "WorldObject",
    ),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
