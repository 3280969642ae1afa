"""Seed 000 robots (Nicolescu et al., "Simulation theory of mind for heterogeneous human-
robot teams"): the peer rule over a shared task tree. ``RobotAgent`` wires its parts,
one a module (see robot.py).

Names load on first use (PEP 562): a robot process imports the mission tree's wire
codec only when it publishes the tree, after it is ONLINE.
"""

from teamtree.broker.lazy import lazy_exports as _lazy_exports

_HOMES = {
    "driver_link": ("DriverLink",),
    "grasp_tracker": ("GraspTracker",),
    "human_teammates": ("HumanTeammates",),
    "mission_config": ("mission_tree",),
    "mission_wire": (
        "MissionTreeBody",
        "MissionWireError",
        "TreeNodeWire",
        "decode_mission_tree",
        "mission_tree_body",
        "tree_from_body",
    ),
    "peer_member": ("PeerRuleMember", "claim_limits"),
    "peer_outbox": ("PeerOutbox",),
    "robot": ("RobotAgent",),
    "robot_host": ("RobotHost",),
    "snapshot_publisher": ("SnapshotPublisher",),
    "stall_check": ("StallCheck",),
    "world_view": ("WorldView",),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
