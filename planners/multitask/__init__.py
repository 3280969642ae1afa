"""Single-robot multitasking by dynamic resource allocation over task trees (seed 004).

Pure: the pick-and-place world and behaviours (``model``), the tree mechanics with
FindCompatible, skips and hand-offs (``allocator``; its vocabulary in
``allocator_types``, each leaf's place in the tree in ``leaf_links``, what a leaf asks
of a round in ``leaf_requests``), the one round loop as a stepper
(``rounds``, driven by the simulator and by the multitask agent), the round loop under
a policy (``policy``), a discrete simulator with the one-at-a-time baseline
(``simulate``), and exhaustive and lookahead planners
over orderings (``search``). Resources and robot profiles are in
``teamtree.hardware.resources``.
"""

from teamtree.planners.multitask.allocator import (
    Allocation,
    AndRule,
    Mode,
    MultitaskAllocator,
    MultitaskState,
    Request,
    find_compatible,
    max_total_compatible,
)
from teamtree.planners.multitask.leaf_links import LeafLinks
from teamtree.planners.multitask.leaf_requests import LeafRequests
from teamtree.planners.multitask.model import (
    DEFAULT_TOLERANCE,
    Behaviour,
    BehaviourKind,
    Durations,
    MultitaskProblem,
    ObjectSpec,
    Point,
    World,
    distance,
    pick_and_place_tree,
    problem_from_mission,
)
from teamtree.planners.multitask.policy import RoundPolicy, run_policy
from teamtree.planners.multitask.rounds import (
    OpenRound,
    Round,
    RoundStepper,
    RunResult,
    check_state,
    round_duration,
)
from teamtree.planners.multitask.search import (
    Plan,
    exhaustive_plan,
    greedy_plan,
    lookahead_plan,
    lower_bound_steps,
    plan_policy,
    transition,
)
from teamtree.planners.multitask.simulate import simulate
from teamtree.planners.multitask.units import (
    UNIT_BEHAVIOR,
    adopt_peer_unit,
    co_located_units,
    unit_of,
    unit_tree,
)

__all__ = [
    "DEFAULT_TOLERANCE",
    "UNIT_BEHAVIOR",
    "Allocation",
    "AndRule",
    "Behaviour",
    "BehaviourKind",
    "Durations",
    "LeafLinks",
    "LeafRequests",
    "Mode",
    "MultitaskAllocator",
    "MultitaskProblem",
    "MultitaskState",
    "ObjectSpec",
    "OpenRound",
    "Plan",
    "Point",
    "Request",
    "Round",
    "RoundPolicy",
    "RoundStepper",
    "RunResult",
    "World",
    "adopt_peer_unit",
    "check_state",
    "co_located_units",
    "distance",
    "exhaustive_plan",
    "find_compatible",
    "greedy_plan",
    "lookahead_plan",
    "lower_bound_steps",
    "max_total_compatible",
    "pick_and_place_tree",
    "plan_policy",
    "problem_from_mission",
    "round_duration",
    "run_policy",
    "simulate",
    "transition",
    "unit_of",
    "unit_tree",
]
