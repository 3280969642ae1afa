"""Seed 004 experiments 1-4 (§V, Figs. 5-7): the shipped configs against the paper.

The paper reports orderings, not counts; the step counts below are those orderings
counted as rounds (a round = behaviours granted together). §VI says experiments 1 and
4 are optimal and 2 and 3 are not (3: placing 1 first and picking 3 and 4 together
would have been better, i.e. 10 steps).
"""

from __future__ import annotations

import time
import tomllib
from pathlib import Path

import pytest

from teamtree.agents.runtime.config import load_config
from teamtree.planners.multitask import (
    MultitaskAllocator,
    exhaustive_plan,
    lookahead_plan,
    problem_from_mission,
    simulate,
)

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def load(n: int):
    path = CONFIGS / f"pr2_multitask_e{n}.toml"
    with path.open("rb") as f:
        return problem_from_mission(tomllib.load(f)["mission"])


def m(o: int, k: int) -> str:
    return f"move-o{o}-{k}"


# §V, sentence by sentence, as rounds
PAPER = {
    1: [
        {m(1, 1)},
        {"pick-o1", "pick-o2"},  # "both objects were picked up simultaneously"
        {m(1, 2)},
        {"place-o1"},
        {m(2, 2)},
        {"place-o2", "pick-o3"},  # "object 2 was placed while object 3 was picked in parallel"
        {m(4, 1)},
        {"pick-o4"},
        {m(3, 2)},
        {"place-o3", "place-o4"},  # "placing objects 3 and 4 simultaneously"
    ],
    2: [
        {m(1, 1)},
        {"pick-o1"},
        {m(3, 1)},
        {"pick-o3"},
        {m(1, 2)},
        {"place-o1"},
        {m(3, 2)},
        {"place-o3"},
        {m(4, 1)},
        {"pick-o4"},
        {m(2, 1)},
        {"pick-o2"},
        {m(4, 2)},
        {"place-o4"},
        {m(2, 2)},
        {"place-o2"},
    ],
    3: [
        {m(1, 1)},
        {"pick-o1", "pick-o2"},
        {m(2, 2)},
        {"place-o2"},
        {m(4, 1)},
        {"pick-o4"},
        {m(1, 2)},
        {"place-o1"},
        {m(3, 1)},
        {"pick-o3"},
        {m(3, 2)},
        {"place-o3", "place-o4"},
    ],
    4: [
        {m(4, 1)},
        {"pick-o4"},
        {m(2, 1)},
        {"pick-o2"},
        {m(2, 2)},
        {"place-o2", "place-o4"},
        {m(3, 1)},
        {"pick-o3"},
        {m(1, 1)},
        {"pick-o1"},
        {m(3, 2)},
        {"place-o3", "place-o1"},
    ],
}
SKIPPED = {
    1: {m(2, 1), m(3, 1), m(4, 2)},
    2: set(),
    3: {m(2, 1), m(4, 2)},
    4: {m(4, 2), m(1, 2)},
}
PAPER_STEPS = {1: 10, 2: 16, 3: 12, 4: 12}
OPTIMUM = {1: 10, 2: 14, 3: 10, 4: 12}  # 2: our layout; 1, 3, 4: §VI


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_configs_load_through_the_team_loader(n: int) -> None:
    config = load_config(CONFIGS / f"pr2_multitask_e{n}.toml")
    assert config.mission.kind == "multitask"
    assert set(config.mission.params["objects"]) == {"o1", "o2", "o3", "o4"}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_greedy_reproduces_the_reported_ordering(n: int) -> None:
    run = simulate(load(n), "greedy")
    assert run.completed and not run.violations
    assert [set(s.behaviours) for s in run.steps] == PAPER[n]
    assert set(run.skipped) == SKIPPED[n]
    assert run.n_steps == PAPER_STEPS[n]
    assert not set(run.executed) & set(run.skipped)


def test_experiment_1_concurrency_as_fig_5() -> None:
    run = simulate(load(1), "greedy")
    together = run.together()
    assert frozenset({"pick-o1", "pick-o2"}) in together
    assert frozenset({"place-o3", "place-o4"}) in together
    assert frozenset({"place-o2", "pick-o3"}) in together
    assert run.parallel == 6


def test_experiment_2_has_nothing_skipped_or_parallel() -> None:
    run = simulate(load(2), "greedy")
    assert run.skipped == () and run.parallel == 0


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_optimum_lookahead_and_baseline(n: int) -> None:
    prob = load(n)
    alloc = MultitaskAllocator(prob)
    best = exhaustive_plan(alloc)
    look = lookahead_plan(alloc)
    greedy = simulate(prob, "greedy")
    seq = simulate(prob, "sequential")
    assert best.optimal and best.steps == OPTIMUM[n]
    assert look.optimal and look.cost == pytest.approx(best.cost)
    assert look.steps <= greedy.n_steps
    assert seq.n_steps == 16 and seq.parallel == 0 and not seq.skipped
    assert greedy.time_s < seq.time_s
    # the paper: greedy is optimal in 1 and 4, not in 2 and 3
    assert (greedy.n_steps == best.steps) == (n in (1, 4))
    replay = simulate(prob, "lookahead")
    assert replay.completed and not replay.violations and replay.n_steps == look.steps


def test_experiment_3_optimum_picks_3_and_4_together() -> None:
    run = simulate(load(3), "optimal")
    assert frozenset({"pick-o3", "pick-o4"}) in run.together()
    assert run.n_steps == 10


def test_search_is_fast_enough_for_the_experiments() -> None:
    t = time.perf_counter()
    for n in (1, 2, 3, 4):
        lookahead_plan(MultitaskAllocator(load(n)))
    assert time.perf_counter() - t < 10.0
