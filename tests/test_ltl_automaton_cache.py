"""Missions of the same specification share one automaton, built once; the cache is
bounded, keyed by what changes the automaton, and sharing it is safe because missions
edit only their own robots' transition systems."""

from __future__ import annotations

import pytest

from teamtree.agents import load_config
from teamtree.agents.ltl.planner import ltl_mission
from teamtree.broker import SpecificationError
from teamtree.planners.ltl import (
    AUTOMATA,
    AutomatonCache,
    Mission,
    fail_robot,
    hospital_team,
    replicated_team,
)
from tests.conftest import REPO


def test_missions_of_one_specification_share_the_automaton():
    cache = AutomatonCache()
    formula, robots = hospital_team("study2")
    first = Mission(formula, robots, automata=cache)
    second = Mission(" ".join(formula.split()).replace("&& ", "&&"), robots, automata=cache)
    assert second.automaton is first.automaton
    assert (cache.misses, cache.hits, len(cache)) == (1, 1, 1)
    # more robots of the same types produce the same labels: the same automaton
    more = Mission(*replicated_team(9), automata=cache)
    assert more.automaton is first.automaton


def test_the_key_is_formula_alphabet_and_minimisation():
    cache = AutomatonCache()
    a = cache.get("<> a && <> b", [{"a"}, {"b"}, set()])
    assert cache.get("<> a && <> b", [{"a", "zzz"}, {"b"}, set()]) is a  # projected
    assert cache.get("<> a && <> b", [{"a"}, set()]) is not a
    assert cache.get("<> a && <> b", [{"a"}, {"b"}, set()], minimize=False) is not a
    assert cache.get("<> b && <> a", [{"a"}, {"b"}, set()]) is not a  # another tree
    assert cache.get("<> a && <> b") is not a  # every subset of {a, b}


def test_least_recently_used_is_dropped_first():
    cache = AutomatonCache(size=2)
    a, b = cache.get("<> a"), cache.get("<> b")
    assert cache.get("<> a") is a  # a is now the most recent
    cache.get("<> c")  # drops b
    assert len(cache) == 2
    assert cache.get("<> a") is a
    assert cache.get("<> b") is not b


def test_size_zero_always_builds_and_errors_are_not_kept():
    off = AutomatonCache(size=0)
    assert off.get("<> a") is not off.get("<> a")
    assert len(off) == 0
    cache = AutomatonCache()
    for _ in range(2):
        with pytest.raises(SpecificationError, match="position"):
            cache.get("<> && a")
    assert len(cache) == 0
    with pytest.raises(SpecificationError, match="size"):
        AutomatonCache(size=-1)


def test_shared_automaton_is_read_only():
    aut = AutomatonCache().get("<> a && [] !b")
    with pytest.raises(TypeError):
        aut.delta[0][0] = 1  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        aut.members[0].append(frozenset())  # type: ignore[attr-defined]


def test_a_failure_in_one_mission_does_not_reach_another():
    cache = AutomatonCache()
    formula, robots = hospital_team("study2")
    fresh = Mission(formula, robots, automata=AutomatonCache(size=0)).allocate()
    hurt = Mission(formula, robots, automata=cache)
    fail_robot(hurt, "DR", hurt.robots["DR"].initial)
    other = Mission(formula, robots, automata=cache)
    assert other.automaton is hurt.automaton
    assert other.allocate() == fresh


def test_the_planner_agent_builds_the_automaton_once_per_specification():
    """Each replan of the planner agent starts from ``spec.mission()``: the second and
    later missions of a configuration reuse the first one's automaton."""
    config = load_config(REPO / "configs" / "hospital_study2.toml")
    spec = ltl_mission(config)
    first, second = spec.mission(), ltl_mission(config).mission()
    assert second.automaton is first.automaton
    assert AUTOMATA.get(spec.formula, _labels(first)) is first.automaton


def _labels(mission: Mission) -> set[frozenset[str]]:
    return {lab for r in mission.robots.values() for lab in r.ts.labels.values()}
