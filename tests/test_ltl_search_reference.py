"""The team search against the reference Dijkstra (tests/ltl_reference.py) over the
team automaton's public successors: the same path, step for step, and the same
number of states expanded, offline and from synchronised states as global
reallocation starts them, on the hospital and on random maps whose weights make many
ties (zero weights, sums that differ in the last bit). Seeds are fixed and printed on
failure."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st

import teamtree.planners.ltl.team as team_module
from teamtree.broker import InfeasibleError, SolverLimitError, SpecificationError
from teamtree.planners.ltl import (
    Edge,
    Mission,
    ModeAction,
    RegionMap,
    RobotModel,
    TransitionSystem,
    decomposition_set,
    reallocate_global,
    replicated_team,
    search_team,
)
from tests import ltl_reference as ref
from tests.ltl_strategies import ltl_formulas

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


# Weights that make ties: zeros (a step at the distance being expanded), and 0.1 + 0.2,
# which is not 0.3 (costs equal on paper must be told apart as the reference does).
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 1.0, 10.0)
REGIONS = ("r0", "r1", "r2", "r3")


def _random_robot(rng: random.Random, i: int) -> RobotModel:
    """A robot on a random map over some of REGIONS, with pick and drop actions."""
    regions = REGIONS[: rng.randint(2, len(REGIONS))]
    edges = [
        Edge(a, b, rng.choice(WEIGHTS))
        for a in regions
        for b in regions
        if a != b and rng.random() < 0.6
    ]
    pick = frozenset(r for r in regions if rng.random() < 0.5) or frozenset(regions[:1])
    actions = (
        ModeAction("pick", "standby", "loaded", rng.choice(WEIGHTS), pick),
        ModeAction("drop", "loaded", "standby", rng.choice(WEIGHTS)),
    )
    region_map = RegionMap({r: (0.0, 0.0) for r in regions}, edges, rng.choice(WEIGHTS))
    start = (rng.choice(regions), rng.choice(("standby", "loaded")))
    ts = TransitionSystem.from_map(region_map, ("standby", "loaded"), actions, start)
    return RobotModel(f"robot{i}", ts)


def _random_tasks(rng: random.Random) -> str:
    a, b, c = (rng.choice(REGIONS) for _ in range(3))
    parts = [f"<>({a} && loaded && <>({b} && standby))", f"<>({c} && standby)"]
    if rng.random() < 0.5:
        parts.append(f"[]((!{b} && X {b}) -> loaded)")
    rng.shuffle(parts)
    return " && ".join(parts)


@seed(4404)
@settings(PROPERTY, max_examples=150)
@given(
    st.integers(0, 2**32 - 1),
    st.booleans(),
    ltl_formulas(("r0", "r1", "loaded"), max_leaves=8),
)
def test_search_on_random_maps_equals_reference(rnd, tasks, formula):
    """1-4 robots on random maps with tie-prone weights, a delivery-like task list or a
    random formula: the search from the start, and from a random synchronised state."""
    rng = random.Random(rnd)
    robots = [_random_robot(rng, i) for i in range(rng.randint(1, 4))]
    if tasks:
        formula = _random_tasks(rng)
    note(f"rnd={rnd} formula={formula}")
    mission = Mission(formula, robots)
    _same_search(mission.team())
    aut = mission.automaton
    q = aut.initial
    for _ in range(rng.randrange(6)):
        q = aut.delta[q][rng.randrange(len(aut.letters))]
    names = [r for r in mission.order if rng.random() < 0.8] or [mission.order[-1]]
    starts = {r: rng.choice(mission.robots[r].ts.states) for r in names}
    team = mission.team(
        starts=starts, start_q=q, decomposition=decomposition_set(aut, start=q), robots=names
    )
    _same_search(team)


def test_a_negative_weight_is_refused():
    """The search needs weights >= 0 (it never looks below the distance it expands)."""
    region_map = RegionMap({"r0": (0.0, 0.0), "r1": (1.0, 0.0)}, [Edge("r0", "r1", -1.0)])
    ts = TransitionSystem.from_map(region_map, ("standby",), (), ("r0", "standby"))
    mission = Mission("<>r1", [RobotModel("r", ts)])
    with pytest.raises(SpecificationError, match="weights must be >= 0"):
        search_team(mission.team())


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
