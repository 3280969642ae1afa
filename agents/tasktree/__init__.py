"""Seed 000 robots (Nicolescu et al., "Simulation theory of mind for heterogeneous human-
robot teams"): the peer rule over a shared task tree. ``RobotAgent`` wires its parts,
one a module (see robot.py). The protocol it speaks with its peers, the humans and the
observers is the shared task-tree room's (``teamtree.agents.treeprotocol``).

Names load on first use (PEP 562).
"""

from teamtree.broker.lazy import lazy_exports as _lazy_exports

_HOMES = {
    "driver_link": ("DriverLink",),
    "grasp_tracker": ("GraspTracker",),
    "human_teammates": ("HumanTeammates",),
    "peer_outbox": ("PeerOutbox",),
    "robot": ("RobotAgent",),
    "robot_host": ("RobotHost",),
    "snapshot_publisher": ("SnapshotPublisher",),
    "stall_check": ("StallCheck",),
    "world_view": ("WorldView",),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
