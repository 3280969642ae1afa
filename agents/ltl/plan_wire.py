"""The LTL plan codec (docs/ltl.md, ``ltl.plan``): a projected RobotPlan as a declared
msgspec Struct, so a robot checks every field's type when it takes a plan and a
malformed one is dropped naming the field's path, and a digest that lets robots prove
they got the planner's plan."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body
from teamtree.planners.ltl import RobotPlan, TSState


class PlanWireError(ValueError):
    """An ``ltl.plan`` body's plan that does not match its declared type or shape."""


class PlanWire(Struct, frozen=True):
    """``plan``: n TS states ``[region, mode]``, n-1 actions and weights, n automaton
    states, whom to wait for; ``cost`` and ``digest`` are for readers (not checked)."""

    robot: str
    states: list[tuple[str, str]]
    actions: list[str]
    weights: list[float]
    automaton_states: list[int]
    waits_for: list[str]
    cost: float = 0.0
    digest: str = ""


def plan_digest(plan: RobotPlan) -> str:
    """A short hash of a plan's content, so robots can prove they got the planner's plan."""
    data = [
        plan.robot,
        [list(s) for s in plan.states],
        list(plan.actions),
        [round(w, 6) for w in plan.weights],
        list(plan.automaton_states),
        list(plan.waits_for),
    ]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:16]


def plan_to_wire(plan: RobotPlan) -> dict[str, Any]:
    """A RobotPlan as a msgpack-able map (see docs/ltl.md, ``ltl.plan``)."""
    wire = PlanWire(
        plan.robot,
        [[s[0], s[1]] for s in plan.states],  # type: ignore[misc]  # lists, as before
        list(plan.actions),
        [float(w) for w in plan.weights],
        [int(q) for q in plan.automaton_states],
        list(plan.waits_for),
        plan.cost,
        plan_digest(plan),
    )
    return msgspec.to_builtins(wire)


def plan_from_wire(body: Any) -> RobotPlan:
    """Decode ``plan_to_wire``'s map. Raises PlanWireError (a ValueError) naming the
    field's path, or the shape rule broken."""
    w = decode_body(body, PlanWire, PlanWireError, "plan")
    states = tuple(TSState(r, m) for r, m in w.states)
    if not states or len(w.actions) != len(states) - 1 or len(w.weights) != len(w.actions):
        raise PlanWireError("plan needs n states, n-1 actions and n-1 weights")
    if len(w.automaton_states) != len(states):
        raise PlanWireError("plan needs one automaton state per TS state")
    return RobotPlan(
        w.robot, states, tuple(w.actions), tuple(w.weights), tuple(w.automaton_states),
        tuple(w.waits_for),
    )  # fmt: skip


def states_from_wire(raw: Sequence[tuple[str, str]]) -> list[TSState]:
    """A trace segment's ``[region, mode]`` pairs as TS states."""
    return [TSState(r, m) for r, m in raw]
