"""Seed 003 (Zhou et al., "Reactive task allocation and planning for quadrupedal and
wheeled robot teaming"): the LTL planner service and robots. The robots execute on
py_trees (``behaviours``: checks at a rate, coroutines as actions, recoveries) and
take injected disturbances (``disturbances``).
"""

from teamtree.agents.ltl.behaviours import CheckAtRate, Recovery, RunCoroutine, render_tree
from teamtree.agents.ltl.corridors import BlockedCorridors
from teamtree.agents.ltl.disturbances import DisturbanceHandling
from teamtree.agents.ltl.planner import LtlPlannerAgent
from teamtree.agents.ltl.reallocation import Reallocation
from teamtree.agents.ltl.robot import LtlRobotAgent
from teamtree.agents.ltl.strategies import Strategies

__all__ = [
    "BlockedCorridors",
    "CheckAtRate",
    "DisturbanceHandling",
    "LtlPlannerAgent",
    "LtlRobotAgent",
    "Reallocation",
    "Recovery",
    "RunCoroutine",
    "Strategies",
    "render_tree",
]
