"""Seed 003 (Zhou et al., "Reactive task allocation and planning for quadrupedal and
wheeled robot teaming"): the LTL planner service and robots.
"""

from teamtree.agents.ltl.planner import LtlPlannerAgent
from teamtree.agents.ltl.robot import LtlRobotAgent

__all__ = [
    "LtlPlannerAgent",
    "LtlRobotAgent",
]
