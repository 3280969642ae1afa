"""Seed 001 (Noormohammadi-Asl et al., "To Lead or to Follow?"): the allocation service,
the cobot and the kitting human.
"""

from teamtree.agents.allocation.allocator import AllocatorAgent, request_allocation
from teamtree.agents.allocation.kitting import CobotAgent, KittingHumanAgent
from teamtree.agents.allocation.owner import owner

__all__ = [
    "AllocatorAgent",
    "CobotAgent",
    "KittingHumanAgent",
    "owner",
    "request_allocation",
]
