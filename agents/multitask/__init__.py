"""Seed 004 (Becker et al., "Single robot multitasking through dynamic resource
allocation"): multitasking robots.
"""

from teamtree.agents.multitask.robot import MultitaskRobot

__all__ = [
    "MultitaskRobot",
]
