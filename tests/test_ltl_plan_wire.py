"""The LTL plan codec is typed: any body decodes to a RobotPlan or raises
PlanWireError (a ValueError) naming the field or shape rule, never anything else."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.ltl.plan_wire import PlanWireError, plan_from_wire, plan_to_wire
from teamtree.planners.ltl import RobotPlan, TSState
from tests.wire_strategies import WIRE_INTS

PLAN = RobotPlan(
    "DR",
    (TSState("r1", "walk"), TSState("r2", "walk")),
    ("goto_r2",),
    (2.5,),
    (0, 1),
    ("QR",),
)


def test_a_plan_round_trips_and_keeps_its_wire_shape() -> None:
    wire = plan_to_wire(PLAN)
    assert set(wire) == {"robot", "states", "actions", "weights", "automaton_states",
                         "waits_for", "cost", "digest"}  # fmt: skip
    assert wire["states"] == [["r1", "walk"], ["r2", "walk"]] and wire["cost"] == 2.5
    assert plan_from_wire(wire) == PLAN


def test_errors_name_the_field() -> None:
    with pytest.raises(PlanWireError, match=r"\$\.weights\[0\]"):
        plan_from_wire({**plan_to_wire(PLAN), "weights": ["far"]})
    with pytest.raises(PlanWireError, match=r"\$\.states\[1\]"):
        plan_from_wire({**plan_to_wire(PLAN), "states": [["r1", "walk"], ["r2"]]})
    with pytest.raises(PlanWireError, match="n-1 actions"):
        plan_from_wire({**plan_to_wire(PLAN), "actions": []})


scalars = st.none() | st.booleans() | WIRE_INTS | st.floats() | st.text(max_size=4)
values = st.recursive(scalars, lambda v: st.lists(v, max_size=3), max_leaves=6)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(plan_to_wire(PLAN))), values, max_size=8))
def test_any_mutated_plan_decodes_or_raises_plan_wire_error(changes: dict[str, Any]) -> None:
    body = {**plan_to_wire(PLAN), **changes}
    try:
        plan = plan_from_wire(body)
    except PlanWireError:
        return
    assert len(plan.states) == len(plan.actions) + 1 == len(plan.automaton_states)
