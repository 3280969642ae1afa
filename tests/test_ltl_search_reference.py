"""The team search against the reference Dijkstra (tests/ltl_reference.py) over the
team automaton's public successors: the same path, step for step, and the same
number of states expanded, offline and from synchronised states as global
reallocation starts them. Seeds are fixed and printed on failure."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st

import teamtree.planners.ltl.team as team_module
from teamtree.broker import InfeasibleError, SolverLimitError
from teamtree.planners.ltl import (
    Mission,
    decomposition_set,
    reallocate_global,
    replicated_team,
    search_team,
)
from tests import ltl_reference as ref

PROPERTY = settings(
    max_examples=40,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _mission(scenario: str, n: int) -> Mission:
    """A fresh Mission (its robots' systems are edited by failures)."""
    formula, robots = replicated_team(n, scenario)
    return Mission(formula, robots)


def _reference_search(team):
    path, expanded = ref.shortest_path(team.initial, team.successors, team.is_accepting)
    if path is None:
        return None, expanded
    return [(team.initial, "", 0.0), *path], expanded


def _same_search(team) -> None:
    want, want_expanded = _reference_search(team)
    try:
        got, got_expanded = search_team(team)
    except InfeasibleError:
        assert want is None
        return
    assert got == want
    assert got_expanded == want_expanded


@pytest.mark.parametrize("n", [1, 3, 7])
def test_offline_search_equals_reference(n):
    _same_search(_mission("study2", n).team())


@seed(4403)
@PROPERTY
@given(
    st.sampled_from(["study1", "study2", "scenario1"]),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
)
def test_synchronised_search_equals_reference(scenario, n, rnd):
    """Random synchronised states: an automaton state reached by a random word, random
    current TS states, a random subset of the robots, and the decomposition set from
    that state, as `reallocate_global` builds them."""
    note(f"scenario={scenario} n={n} rnd={rnd}")
    rng = random.Random(rnd)
    mission = _mission(scenario, n)
    aut = mission.automaton
    q = aut.initial
    for _ in range(rng.randrange(12)):
        q = aut.delta[q][rng.randrange(len(aut.letters))]
    names = [r for r in mission.order if rng.random() < 0.8] or [mission.order[0]]
    starts = {}
    for r in names:
        ts = mission.robots[r].ts
        starts[r] = rng.choice(ts.states)
    team = mission.team(
        starts=starts, start_q=q, decomposition=decomposition_set(aut, start=q), robots=names
    )
    _same_search(team)


def _reference_dijkstra(team, max_states):
    path, expanded = _reference_search(team)
    if path is None:
        raise team_module._no_path(team, expanded)
    return path, expanded


@pytest.mark.parametrize("n", [3, 9])
def test_plans_offline_and_after_a_failure_equal_the_reference(n, monkeypatch):
    """Whole plans (projection and synchronisation points included), offline and after
    a critical failure, with the product's search and with the reference one."""

    def run():
        mission = _mission("study2", n)
        plan = mission.allocate()
        victim = max(plan.plans, key=lambda r: len(plan[r].states))
        executed = {r: list(p.states[: 1 + len(p.states) // 2]) for r, p in plan.plans.items()}
        return plan, reallocate_global(mission, plan, executed, failed=[victim])

    got = run()
    monkeypatch.setattr(team_module, "_dijkstra", _reference_dijkstra)
    want = run()
    assert got == want


def test_search_limit_is_reported_as_before():
    mission = _mission("study2", 3)
    with pytest.raises(
        SolverLimitError, match=r"team search stopped after 50 states \(max_states=50\)"
    ):
        search_team(mission.team(), max_states=50)
