"""The ``robot`` kind's ``[[agents]]`` keys as a declared type (seed 000's peer robot)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from teamtree.planners.tasktree import LeaseTerms

_LEASE = LeaseTerms()  # the lease keys' defaults are the body's lease terms'


class RobotParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of a task-tree robot, kept whole by the agent; ``driver`` defaults to
    ``<id>-driver`` (given by the kind).

    ``profile`` (robot body, e.g. "pr2"), ``driver`` (its driver agent's id), ``metric``
    ("distance" or "distance+grasp"), ``w_d``, ``w_g``, ``rule`` ("earliest" or
    "potential"), ``seed``, ``start_timeout_s`` (how long to wait for the config's other
    robots), ``min_grasp`` (grasp scores below it count as 0: seed 000's tables round
    to whole numbers, and an off-centre chord of a too-wide sphere scores a fraction
    of 1), ``grasp_scorer`` ("primitive": ``GraspScorer`` on the object's shape
    primitive; "mesh": ``MeshGraspScorer``, surviving antipodal grasps on the object's
    mesh model, built once per model and hand in a worker thread: under
    distance+grasp the robot claims no leaf before its grasp is scored), ``humans``
    (extra human teammates' ids, e.g. ones at a terminal; every ``human`` agent of
    the config is one already), ``dialog_timeout_s`` (how long a
    question waits for its answer; then the robot yields), ``service_timeout_s`` (how
    long the robot waits for a lost driver or world to come back before it ends its
    mission with an error, exit code 2), ``stall_timeout_s`` (how long the team may go
    without progress, no leaf newly done and no claim holding its node throughout,
    while leaves are open, before the robot ends its mission with an error naming
    them and what its attempts met, exit code 2; 0: never), ``lease_s``,
    ``lease_renew_s``, ``lease_margin_s`` (the body's lease, ``LeaseTerms``, whose
    defaults they are), ``avoid_contention`` (publish potentials and claim the leaf
    the team's greedy matching gives this robot, with jittered backoff; false: seed
    000's selection, the highest activation), ``declared_interest`` (declare the leaves
    this robot may claim, acknowledged by every online peer, so that a claim asks only
    the peers whose declaration meets it; false: every claim asks every online peer,
    as seed 000 does; planners/tasktree/interest.py) and ``interest_prefetch`` (how
    many next-best leaves a declaration adds).
    """

    profile: Annotated[str, Meta(description="a robot profile such as 'pr2'")]
    driver: Annotated[str, Meta(description="the driver agent's id")]
    metric: Annotated[
        Literal["distance", "distance+grasp"], Meta(description="'distance' or 'distance+grasp'")
    ] = "distance+grasp"
    w_d: Annotated[float, Meta(description="a number (distance weight)")] = 1.0
    w_g: Annotated[float, Meta(description="a number (grasp weight)")] = 0.001
    rule: Annotated[
        Literal["earliest", "potential"], Meta(description="'earliest' or 'potential'")
    ] = "earliest"
    seed: Annotated[int, Meta(description="a whole number")] = 0
    start_timeout_s: Annotated[float, Meta(description="seconds")] = 10.0
    min_grasp: Annotated[float, Meta(description="a grasp score (0-100)")] = 1.0
    grasp_scorer: Annotated[
        Literal["primitive", "mesh"], Meta(description="'primitive' or 'mesh'")
    ] = "primitive"
    humans: Annotated[
        list[Annotated[str, Meta(min_length=1)]], Meta(description="a list of human agent ids")
    ] = []
    dialog_timeout_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = 5.0
    service_timeout_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = (
        30.0
    )
    stall_timeout_s: Annotated[float, Meta(ge=0, description="seconds (0: never give up)")] = 60.0
    lease_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = (
        _LEASE.lease_s
    )
    lease_renew_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = (
        _LEASE.renew_s
    )
    lease_margin_s: Annotated[float, Meta(ge=0, description="seconds (0 or more)")] = (
        _LEASE.margin_s
    )
    avoid_contention: Annotated[bool, Meta(description="true or false")] = True
    declared_interest: Annotated[bool, Meta(description="true or false")] = True
    interest_prefetch: Annotated[int, Meta(ge=0, description="a whole number (0 or more)")] = 4

    def lease(self) -> LeaseTerms:
        """The body's lease these keys give; ValueError when ``lease_renew_s`` is not
        below ``lease_s``."""
        return LeaseTerms(self.lease_s, self.lease_renew_s, self.lease_margin_s)
