"""The ``multitask_robot`` kind's ``[[agents]]`` keys as a declared type."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct


class MultitaskParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of a multi-task robot (the problem itself comes from ``[mission]``)."""

    planner: Annotated[
        Literal["greedy", "lookahead", "optimal", "sequential"],
        Meta(description="one of greedy, lookahead, optimal, sequential"),
    ] = "greedy"
    time_factor: Annotated[
        float, Meta(ge=0, description="wall seconds per simulated second (>= 0)")
    ] = 0.1
    start_timeout_s: Annotated[float, Meta(gt=0, description="a positive number of seconds")] = 10.0
    max_expansions: Annotated[
        int, Meta(ge=1, description="a whole number of search nodes (>= 1)")
    ] = 200_000
    rule: Annotated[
        Literal["earliest", "potential"], Meta(description="'earliest' or 'potential'")
    ] = "earliest"
    bundle: Annotated[bool, Meta(description="true or false")] = True
    takeover_s: Annotated[float, Meta(ge=0, description="seconds (0 or more)")] = 4.0
    start: Annotated[tuple[float, float] | None, Meta(description="[x, y] in metres")] = None
