"""The LTL mission's channel names (docs/ltl.md), shared by the planner, the robots and
``teamtree disturb``; a module of their own so the planner's helpers can name them
without importing the planner."""

from __future__ import annotations

__all__ = [
    "DISTURB",
    "EVENT",
    "MAP",
    "MISSION",
    "PLAN",
    "REPLAN",
    "STATUS",
    "SYNC",
    "TRACE",
    "VERDICT",
]

MISSION = "ltl.mission"  # <planner>/ltl.mission            retained
PLAN = "ltl.plan"  # <planner>/ltl.plan/<robot>          retained, directed
EVENT = "ltl.event"  # <planner|robot>/ltl.event          strategies, replans
VERDICT = "ltl.verdict"  # <planner>/ltl.verdict          retained
MAP = "ltl.map"  # _/ltl.map  retained: corridors known blocked (every robot's map)
REPLAN = "ltl.replan"  # _/ltl.replan  request to the planner
SYNC = "ltl.sync"  # _/ltl.sync      request to every robot (global reallocation)
DISTURB = "ltl.disturb"  # _/ltl.disturb request to one robot (teamtree disturb)
TRACE = "ltl.trace"  # <robot>/ltl.trace  one executed step
STATUS = "ltl.status"  # <robot>/ltl.status ltl.plan_received, ltl.done
