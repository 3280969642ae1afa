"""Seed 001's kitting episode messages as declared types (docs/allocation.md, "Messages").

``kitting.human_action``, ``kitting.robot_action``, ``kitting.start``, ``kitting.plan``
and ``kitting.done`` bodies are msgspec Structs. The members (the cobot, the simulated
human) decode what they receive with ``decode_kitting`` (strict), which raises
KittingWireError (a ``ValueError`` naming msgspec's field path, e.g. ``$.task``); the
receiver drops such a message with the runtime's aggregated drop warning. Senders
build the Structs and publish ``to_wire(...)``: the same maps as the hand-made dicts
before (a robot action's ``colour`` is left out of an ``abort``, as before).
Observers (the web view) still read these bodies leniently.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from msgspec import UNSET, Meta, Struct, UnsetType

from teamtree.agents.runtime.wire_decode import decode_kind
from teamtree.agents.runtime.wire_decode import to_wire as to_wire  # re-exported

HUMAN_ACTION = "kitting.human_action"
ROBOT_ACTION = "kitting.robot_action"
START = "kitting.start"
DONE = "kitting.done"
PLAN = "kitting.plan"

T = TypeVar("T")

Task = Annotated[int, Meta(ge=0)]


class KittingWireError(ValueError):
    """A kitting body that does not match its declared type (names the field)."""


class HumanActionBody(Struct, frozen=True, kw_only=True):
    """``kitting.human_action``: what a camera sees the human do (``phase`` ``start``
    when the hand reaches for the block, ``end`` when it is placed)."""

    action: Literal["H1", "H2", "H4"]
    task: Task
    colour: str
    phase: Literal["start", "end"]


class RobotActionBody(Struct, frozen=True, kw_only=True):
    """``kitting.robot_action``: ``cancels`` is ``R5``/``R6`` when the action first takes
    back an assignment; ``colour`` (the pattern's colour of the spot) is left out of an
    ``abort``."""

    action: Literal["R1", "R2", "R3", "R4"]
    task: Task
    cancels: Literal["R5", "R6"] | None
    colour: str | UnsetType = UNSET
    phase: Literal["start", "end", "abort"]


class StartBody(Struct, frozen=True, kw_only=True):
    """``kitting.start``: the episode begins (the human waits for it)."""

    human: str
    time_factor: float
    n: int


class PlanBody(Struct, frozen=True, kw_only=True):
    """``kitting.plan``: one plan the allocation service returned."""

    version: int
    t: float
    alpha_f: float
    alpha_e: float
    assignment: dict[str, str]
    robot: list[str]
    makespan: float
    solver: str
    solve_time: float
    round_trip: float
    replica: str


class DoneBody(Struct, frozen=True, kw_only=True):
    """``kitting.done``: the run's summary (§VI metrics and service figures)."""

    makespan: float
    wrong_human_actions: int
    robot_to_human: int
    human_to_robot: int
    alpha_f: float
    alpha_e: float
    pattern_correct: bool
    pattern: str
    plans: int
    aborts: int
    solve_s_p50: float
    round_trip_s_p50: float
    adaptive: bool


#: message kind -> its body's Struct
BODIES: dict[str, type[Struct]] = {
    HUMAN_ACTION: HumanActionBody,
    ROBOT_ACTION: RobotActionBody,
    START: StartBody,
    PLAN: PlanBody,
    DONE: DoneBody,
}


def decode_kitting(kind: str, body: Any) -> Any:
    """The body of a kitting message of `kind` as its Struct; raises KittingWireError."""
    return decode_kind(BODIES, kind, body, KittingWireError, "kitting")
