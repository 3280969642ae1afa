"""Seed 002 (Lee et al., capability matching): factory robots, favors and the job source."""

from teamtree.agents.capability.factory import FactoryRobot, JobSource

__all__ = [
    "FactoryRobot",
    "JobSource",
]
