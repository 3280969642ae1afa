"""Seed 000 robots (Nicolescu et al., "Simulation theory of mind for heterogeneous human-
robot teams"): the peer rule over a shared task tree.
"""

from teamtree.agents.tasktree.mission_wire import (
    MissionTreeBody,
    MissionWireError,
    TreeNodeWire,
    decode_mission_tree,
    mission_tree_body,
    tree_from_body,
)
from teamtree.agents.tasktree.peer_member import PeerRuleMember
from teamtree.agents.tasktree.robot import RobotAgent, mission_tree

__all__ = [
    "MissionTreeBody",
    "MissionWireError",
    "PeerRuleMember",
    "RobotAgent",
    "TreeNodeWire",
    "decode_mission_tree",
    "mission_tree",
    "mission_tree_body",
    "tree_from_body",
]
