"""Seed 000 robots (Nicolescu et al., "Simulation theory of mind for heterogeneous human-
robot teams"): the peer rule over a shared task tree.
"""

from teamtree.agents.tasktree.peer_member import PeerRuleMember
from teamtree.agents.tasktree.robot import RobotAgent, mission_tree

__all__ = [
    "PeerRuleMember",
    "RobotAgent",
    "mission_tree",
]
