"""The ``human`` kind's ``[[agents]]`` keys as a declared type."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from teamtree.agents.runtime.params import ID


class HumanParams(Struct, frozen=True, forbid_unknown_fields=True):
    """Keys of a simulated human; ``hand`` defaults to the agent's id (given by the kind)."""

    hand: Annotated[str, Meta(description="an id string", extra=ID)]
    world: Annotated[str | None, Meta(description="the world agent's id")] = None
    policy: Annotated[
        Literal["nearest", "random", "scripted", "preferences"],
        Meta(description="nearest | random | scripted | preferences"),
    ] = "nearest"
    script: Annotated[list[str], Meta(description="a list of object names")] = []
    preferences: Annotated[list[str], Meta(description="a list of object names")] = []
    answer: Annotated[
        Literal["always_continue", "always_concede", "probability", "scripted"],
        Meta(description="always_continue | always_concede | probability | scripted"),
    ] = "always_continue"
    p_continue: Annotated[float, Meta(ge=0, le=1, description="a probability 0-1")] = 0.5
    answers: Annotated[
        list[Literal["continue", "concede"]], Meta(description='a list of "continue" / "concede"')
    ] = []
    answer_delay_s: Annotated[float, Meta(description="seconds")] = 0.3
    start_delay_s: Annotated[float, Meta(description="seconds")] = 0.0
    wait_for_robots: Annotated[bool, Meta(description="true or false")] = False
    think_s: Annotated[float, Meta(description="seconds")] = 0.2
    seed: Annotated[int, Meta(description="a whole number")] = 0
    poll_hz: Annotated[float, Meta(gt=0, description="a positive rate (Hz)")] = 20.0
