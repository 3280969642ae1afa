"""LTL missions for robot teams (seed 003, Zhou et al.): parsing, translation to an
automaton by progression (built once per specification and alphabet, `AUTOMATA`),
transition systems, product and team automata, offline allocation, local and global
reallocation (the searches on one Dijkstra, ``shortest``; the team search on a copy of
its loop over int-numbered team states), a joint-trace checker, and the paper's
adversarial study (``adversarial``, Table I). Pure.
"""

from teamtree.planners.ltl.adversarial import (
    PAPER_TABLE_I,
    StudyRow,
    TrialResult,
    Trigger,
    run_trial,
    study_rows,
)
from teamtree.planners.ltl.automaton import AUTOMATA, Automaton, AutomatonCache, Progression
from teamtree.planners.ltl.hospital import (
    FORMULAS,
    HOSPITAL_MAP,
    ROBOT_TYPES,
    hospital_robot,
    hospital_team,
    replicated_team,
)
from teamtree.planners.ltl.model import (
    Edge,
    ModeAction,
    PAState,
    ProductAutomaton,
    RegionMap,
    RobotModel,
    Transition,
    TransitionSystem,
    TSState,
)
from teamtree.planners.ltl.realloc import (
    EnvironmentChange,
    apply_change,
    block_edge,
    fail_robot,
    find_path,
    reallocate_environment_change,
    reallocate_global,
    reallocate_state_change,
)
from teamtree.planners.ltl.shortest import PathStep, shortest_path
from teamtree.planners.ltl.syntax import Formula, LTLSyntaxError, evaluate, parse
from teamtree.planners.ltl.team import (
    Mission,
    RobotPlan,
    TeamAutomaton,
    TeamPlan,
    decomposition_set,
    search_team,
)
from teamtree.planners.ltl.trace import TraceVerdict, check_trace, plan_segments

__all__ = [
    "AUTOMATA",
    "FORMULAS",
    "HOSPITAL_MAP",
    "PAPER_TABLE_I",
    "ROBOT_TYPES",
    "Automaton",
    "AutomatonCache",
    "Edge",
    "EnvironmentChange",
    "Formula",
    "LTLSyntaxError",
    "Mission",
    "ModeAction",
    "PAState",
    "PathStep",
    "ProductAutomaton",
    "Progression",
    "RegionMap",
    "RobotModel",
    "RobotPlan",
    "StudyRow",
    "TSState",
    "TeamAutomaton",
    "TeamPlan",
    "TraceVerdict",
    "Transition",
    "TransitionSystem",
    "TrialResult",
    "Trigger",
    "apply_change",
    "block_edge",
    "check_trace",
    "decomposition_set",
    "evaluate",
    "fail_robot",
    "find_path",
    "hospital_robot",
    "hospital_team",
    "parse",
    "plan_segments",
    "reallocate_environment_change",
    "reallocate_global",
    "reallocate_state_change",
    "replicated_team",
    "run_trial",
    "search_team",
    "shortest_path",
    "study_rows",
]
