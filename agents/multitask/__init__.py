"""Seed 004 (Becker et al., "Single robot multitasking through dynamic resource
allocation"): multitasking robots.
"""

from teamtree.agents.multitask.progress import ProgressReports
from teamtree.agents.multitask.robot import MultitaskRobot
from teamtree.agents.multitask.unit_claims import UnitClaims

__all__ = [
    "MultitaskRobot",
    "ProgressReports",
    "UnitClaims",
]
