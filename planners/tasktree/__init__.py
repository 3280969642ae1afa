"""Shared THEN/AND/OR task trees with activation spreading and the peer rule (seed 000).

Pure: tree model and parser (``tree``) and how big a tree may be (``limits``), node
states (``status``), activation spreading (``activation``), the peer rule as a state
machine (``peer``; its events and actions in ``peer_messages``, its parts: claims and
their replies in ``claims``, peers' transitions and snapshots in ``peer_reports``, the
next leaf to claim in ``selection``, peers' dones checked against the world in
``done_trust``, when a silent or releasing holder's leaf is free in ``handover``) and
its contention avoidance for big teams (``contention``) and declared interest, so a
claim asks only the peers that may claim what it conflicts with (``interest``, sent and
acknowledged by ``interest_exchange``), behaviours that ended unheard (``body_watch``),
whether the team makes progress (``stall``), whether finished leaves meet the tree
(``outcome``), nodes started more than once, by why, from their published transitions
(``starts``), activation metrics and the grasp pipeline (``metrics``, pose factors in
``grasp_pose``, grasps sampled on object meshes in ``grasp_mesh`` from the models in
``grasp_models``, one calling convention for both scorers in ``grasp_scoring``), a text
renderer (``render``), a discrete-event simulation of a team (``peer_sim``), a PLACE
mission in the simulated world in one process (``place_trial``, seed 000 §4), and the
theory of mind: intent from hand tracks and simulated human controllers
(``theory_of_mind``, §2.3).

Names load on first use (PEP 562): a robot agent does not import the simulation,
the PLACE trials (and the simulated world with them) or the renderer's helpers it
never calls.
"""

from teamtree.broker.lazy import lazy_exports as _lazy_exports

_HOMES = {
    "activation": (
        "NodeActivation",
        "node_statuses",
        "select_behaviour",
        "spread_activation",
    ),
    "body_watch": ("BodyWatch",),
    "claims": (
        "ClaimExchange",
        "PendingClaim",
    ),
    "contention": (
        "ContentionAvoider",
        "PeerPotentials",
        "PublishPotentials",
        "greedy_choice",
    ),
    "done_trust": (
        "DOUBT_LIMIT",
        "DoneTrust",
    ),
    "grasp_mesh": (
        "MeshGraspScorer",
        "grasp_candidates",
    ),
    "grasp_models": (
        "MODEL_NAMES",
        "ObjectModel",
        "Part",
        "object_model",
    ),
    "grasp_scoring": (
        "GRASP_SCORERS",
        "GraspScoring",
        "grasp_scorer",
    ),
    "grasp_pose": (
        "bearing_factor",
        "coverage_factor",
        "reach_factor",
    ),
    "handover": ("Handover",),
    "interest": (
        "Interest",
        "InterestAck",
        "InterestBook",
        "PublishInterest",
        "PublishInterestAck",
    ),
    "interest_exchange": ("InterestExchange",),
    "lease": ("LeaseTerms",),
    "limits": (
        "check_tree_limits",
        "check_tree_shape",
        "tree_depth",
        "tree_wire_bytes",
    ),
    "metrics": (
        "ActivationMetric",
        "ArmModel",
        "GraspCandidate",
        "GraspOrientation",
        "GraspResult",
        "GraspScorer",
        "LeafScore",
        "ShapePrimitive",
        "distance_score",
        "distance_scores",
        "leaf_potentials",
        "orientation_ok",
    ),
    "outcome": (
        "leaves_still_needed",
        "satisfied_nodes",
    ),
    "starts": (
        "RepeatedStarts",
        "repeated_starts",
    ),
    "peer": (
        "TaskController",
        "conflict_set",
    ),
    "peer_messages": (
        "AbortBehaviour",
        "BehaviourFinished",
        "Claim",
        "ClaimDecided",
        "ClaimReply",
        "ClaimRule",
        "ConnectionChanged",
        "ControllerAction",
        "EffectConfirmed",
        "EffectUndone",
        "EvidenceChanged",
        "Event",
        "NodeReport",
        "PauseBehaviour",
        "PeerState",
        "PotentialsChanged",
        "PresenceChanged",
        "PublishClaim",
        "PublishReply",
        "PublishSnapshot",
        "PublishTransition",
        "ResumeBehaviour",
        "Snapshot",
        "Stamp",
        "StartBehaviour",
        "Tick",
        "Transition",
        "Want",
        "WorldShown",
    ),
    "peer_reports": ("PeerReports",),
    "peer_sim": (
        "CrashSpec",
        "Execution",
        "JoinSpec",
        "NetworkModel",
        "SimConfig",
        "SimResult",
        "check_invariants",
        "simulate",
    ),
    "place_trial": (
        "Placement",
        "TrialMember",
        "TrialResult",
        "run_place_trial",
    ),
    "render": (
        "WalkStep",
        "render_unicode",
        "walk",
    ),
    "selection": ("LeafSelection",),
    "stall": ("StallWatch",),
    "status": ("NodeStatus",),
    "theory_of_mind": (
        "HandSample",
        "HumanModel",
        "IntentChange",
        "IntentParams",
        "IntentTracker",
        "ModelUpdate",
        "approach_geometry",
        "fit_motion",
    ),
    "node_kind": ("NodeKind",),
    "tree": (
        "TaskNode",
        "TaskTree",
        "parse_tree",
        "tree_from_dict",
    ),
}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
