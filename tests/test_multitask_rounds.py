"""The round stepper (seed 004's one round loop): what it refuses, the order behaviours
of a round end in, and that driving it by hand (as the multitask agent does, with
idle waits between rounds) gives the rounds ``run_policy`` gives."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamtree.broker import PlanningError
from teamtree.planners.multitask import (
    MultitaskAllocator,
    RoundStepper,
    pick_and_place_tree,
    problem_from_mission,
    run_policy,
)
from tests.test_multitask_property import build

MISSION = {
    "start": [0.0, 0.0],
    "objects": {
        "a": {"position": [2.0, 0.0], "destination": [4.0, 0.0]},
        "b": {"position": [2.0, 0.1], "destination": [4.0, 0.1]},
    },
    "tree": pick_and_place_tree(["a", "b"]).to_dict(),
}


def greedy(alloc, state):
    return alloc.allocate(state).granted


def allocator(pick_s: float = 10.0, place_s: float = 10.0) -> MultitaskAllocator:
    problem = problem_from_mission(MISSION)
    durations = dataclasses.replace(problem.durations, pick_s=pick_s, place_s=place_s)
    return MultitaskAllocator(dataclasses.replace(problem, durations=durations))


def test_a_round_must_end_before_the_next_starts() -> None:
    alloc = allocator()
    stepper = RoundStepper(alloc)
    opened = stepper.start_round(greedy(alloc, stepper.state))
    with pytest.raises(PlanningError, match="still running"):
        stepper.start_round(greedy(alloc, stepper.state))
    with pytest.raises(PlanningError, match="still running"):
        stepper.set_state(alloc.initial_state())
    with pytest.raises(PlanningError, match="not running"):
        stepper.finish("no-such-leaf")
    *first, last = opened.finish_order
    for leaf in first:
        assert stepper.finish(leaf) is None
    done = stepper.finish(last)
    assert done is not None and done.behaviours == opened.behaviours
    assert stepper.clock == pytest.approx(opened.duration_s)
    with pytest.raises(PlanningError, match="at least one"):
        stepper.start_round(())


def test_a_finished_leaf_cannot_be_granted_again() -> None:
    alloc = allocator()
    stepper = RoundStepper(alloc)
    granted = greedy(alloc, stepper.state)
    opened = stepper.start_round(granted)
    for leaf in opened.finish_order:
        stepper.finish(leaf)
    with pytest.raises(PlanningError, match="already finished"):
        stepper.start_round(granted)


def test_behaviours_of_a_round_end_shortest_first() -> None:
    alloc = allocator(pick_s=7.0, place_s=3.0)
    stepper = RoundStepper(alloc)
    seen = []
    while not stepper.complete:
        opened = stepper.start_round(greedy(alloc, stepper.state))
        ends = [opened.end_s(leaf) for leaf in opened.finish_order]
        assert ends == sorted(ends)
        seen.append(len(opened.behaviours))
        for leaf in opened.finish_order:
            stepper.finish(leaf)
    assert max(seen) > 1  # the two picks (and the two places) ran together


def test_idle_time_moves_the_clock_forward_only() -> None:
    stepper = RoundStepper(allocator())
    stepper.idle_until(5.0)
    stepper.idle_until(2.0)
    assert stepper.clock == 5.0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), idle=st.floats(0.0, 30.0))
def test_driving_by_hand_gives_run_policys_rounds(seed: int, idle: float) -> None:
    """The agent's way (waits between rounds, ends one behaviour at a time) and the
    simulator's way drive one loop: the same rounds, skips and final state."""
    alloc = MultitaskAllocator(problem_from_mission(build(seed)))
    expected = run_policy(alloc, greedy, name="greedy")
    stepper = RoundStepper(alloc, strict=True)
    while not stepper.complete and not stepper.exhausted:
        granted = greedy(alloc, stepper.state)
        if not granted:
            trailing = alloc.allocate(stepper.state).trailing
            if not trailing:
                break
            stepper.skip_trailing(trailing)
            continue
        stepper.idle_until(stepper.clock + idle)
        opened = stepper.start_round(granted)
        for leaf in opened.finish_order:
            stepper.finish(leaf)
    got = stepper.result("greedy")
    assert [s.behaviours for s in got.steps] == [s.behaviours for s in expected.steps]
    assert got.final == expected.final and got.completed == expected.completed
    assert got.time_s == pytest.approx(expected.time_s + idle * len(expected.steps))
    assert got.violations == ()
