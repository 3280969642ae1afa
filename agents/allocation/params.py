"""The ``allocator``, ``kitting_human`` and ``cobot`` kinds' ``[[agents]]`` keys as
declared types (see configs/kitting.toml for each key's meaning)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from teamtree.agents.runtime.params import ID

Probability = Annotated[float, Meta(ge=0, le=1, description="a probability between 0 and 1")]
Positive = Annotated[float, Meta(gt=0, description="a positive number")]


class AllocatorParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the allocation service."""

    shared: Annotated[bool, Meta(description="true (join the shared subscription) or false")] = (
        False
    )
    group: Annotated[str, Meta(description="an id string", extra=ID)] = "allocators"
    workers: Annotated[
        int, Meta(ge=1, le=16, description="a whole number of solver threads (1-16)")
    ] = 1
    cache_size: Annotated[
        int, Meta(ge=0, description="a whole number of remembered answers (>= 0)")
    ] = 512
    margin_ms: Annotated[int, Meta(ge=0, description="milliseconds kept for the reply (>= 0)")] = 30
    reuse_models: Annotated[
        bool, Meta(description="true (keep Gurobi models between requests) or false")
    ] = False


class KittingHumanParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the simulated kitting human."""

    p_follow: Probability = 0.6
    p_error: Probability = 0.1
    seed: Annotated[int, Meta(description="a whole number")] = 0
    cobot: Annotated[str, Meta(description="an id string", extra=ID)] = "cobot"
    service_timeout_s: Positive = 30.0


class CobotParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of the kitting cobot."""

    human: Annotated[str, Meta(description="an id string", extra=ID)] = "human"
    adaptive: Annotated[bool, Meta(description="true (beliefs) or false (fixed)")] = True
    fixed_p_follow: Probability = 1.0
    fixed_p_error: Probability = 0.0
    follow_prior: Annotated[Literal["code", "text"], Meta(description="'code' or 'text'")] = "code"
    solver: Annotated[
        Literal["auto", "gurobi", "highs"], Meta(description="auto, gurobi or highs")
    ] = "auto"
    allocation_time_limit: Positive = 3.0
    schedule_time_limit: Positive = 4.0
    schedule_gap: Annotated[
        float, Meta(ge=0, le=1, description="a relative MIP gap between 0 and 1")
    ] = 0.004
    request_timeout: Positive = 10.0
    attempts: Annotated[int, Meta(ge=1, le=10, description="a whole number of tries (1-10)")] = 3
    idle_grace: Annotated[float, Meta(gt=0, description="scenario seconds (positive)")] = 1.0
    h2_fraction: Probability = 0.5
    start_timeout: Positive = 30.0
    service_timeout_s: Positive = 30.0
