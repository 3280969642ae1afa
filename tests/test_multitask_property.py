"""Property tests over random trees and resource profiles (seed 004 §III.B-C).

Each instance is built from one integer seed (printed by hypothesis on failure, and
by ``note``), so a failure replays with ``build(seed)``. Checked after every start
and finish: no exclusive resource has two owners, no gripper holds two objects, a
held object's gripper is owned; skipped behaviours never run; greedy and lookahead
complete and lookahead is never worse (and never better than the exhaustive optimum).
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from teamtree.planners.multitask import (
    MultitaskAllocator,
    exhaustive_plan,
    lookahead_plan,
    plan_policy,
    problem_from_mission,
    run_policy,
    simulate,
)
from teamtree.planners.tasktree import NodeKind


def _unit(o: str, rng: random.Random, dest: list[float]) -> dict[str, Any]:
    to_place: dict[str, Any] = (
        {"behavior": "MOVE", "params": {"x": dest[0], "y": dest[1]}}
        if rng.random() < 0.2
        else {"behavior": "MOVE", "object": o, "params": {"to": "place"}}
    )
    return {
        "type": "then",
        "children": [
            {"behavior": "MOVE", "object": o, "params": {"to": "pick"}},
            {"behavior": "PICK", "object": o},
            to_place,
            {"behavior": "PLACE", "object": o},
        ],
    }


def _group(units: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    if len(units) == 1:
        return units[0]
    kind = rng.choices(["and", "then", "or"], weights=[6, 2, 1])[0]
    k = rng.randint(2, min(3, len(units)))
    cuts = sorted(rng.sample(range(1, len(units)), k - 1))
    parts = [units[a:b] for a, b in zip([0, *cuts], [*cuts, len(units)], strict=True)]
    return {"type": kind, "children": [_group(p, rng) for p in parts]}


def build(seed: int, max_objects: int = 4) -> dict[str, Any]:
    """A random mission table: objects on a few shared spots, a random tree and robot."""
    rng = random.Random(seed)
    spots = [[float(rng.randint(0, 6)), float(rng.randint(0, 4))] for _ in range(rng.randint(2, 4))]
    spots = [list(s) for s in {tuple(s) for s in spots}]
    if len(spots) < 2:
        spots.append([spots[0][0] + 3.0, spots[0][1]])

    def near(p: list[float]) -> list[float]:  # side by side: within the tolerance
        return [p[0] + rng.choice([0.0, 0.1]), p[1] + rng.choice([0.0, -0.1])]

    objects: dict[str, Any] = {}
    units = []
    for i in range(rng.randint(1, max_objects)):
        src, dst = rng.sample(spots, 2)
        o = f"o{i}"
        objects[o] = {"position": near(src), "destination": near(dst)}
        units.append(_unit(o, rng, objects[o]["destination"]))
    grippers = [{"name": f"g{i}", "type": "gripper"} for i in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        grippers.append({"name": "g_broken", "type": "gripper", "locked": True})
    extra = [{"name": "laser", "type": "sensor"}] if rng.random() < 0.3 else []
    robot = {
        "kind": "random",
        "resources": [
            *grippers,
            {"name": "base", "type": "base"},
            {"name": "head", "type": "head"},
            *extra,
        ],
    }
    rng.shuffle(robot["resources"])
    return {
        "start": [float(rng.randint(0, 6)), float(rng.randint(0, 4))],
        "objects": objects,
        "tree": _group(units, rng),
        "robot": robot,
    }


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_greedy_and_baseline_keep_the_resource_invariants(seed: int) -> None:
    note(f"seed={seed}")
    prob = problem_from_mission(build(seed, max_objects=5))
    for planner in ("greedy", "sequential"):
        run = simulate(prob, planner)
        assert run.violations == (), (seed, planner, run.violations)
        assert run.completed, (seed, planner)
        assert not set(run.executed) & set(run.skipped), (seed, planner)
        assert len(run.executed) == len(set(run.executed))
        if planner == "greedy":
            # skipped moves are never executed: they are moves whose goal held
            alloc = MultitaskAllocator(prob)
            assert all(alloc.behaviours[s].kind.value == "move" for s in run.skipped)
        else:
            assert run.parallel == 0 and run.skipped == ()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_lookahead_completes_and_is_never_worse_than_greedy(seed: int) -> None:
    note(f"seed={seed}")
    prob = problem_from_mission(build(seed, max_objects=3))
    alloc = MultitaskAllocator(prob)
    greedy = simulate(prob, "greedy")
    look = lookahead_plan(alloc, max_expansions=4000, max_rollouts=300)
    assert look.completed, seed
    assert look.cost <= (greedy.n_steps, greedy.time_s + 1e-6), (seed, look.cost, greedy.n_steps)
    replay = run_policy(alloc, plan_policy(look), name="lookahead")
    assert replay.completed and replay.violations == (), (seed, replay.violations)
    assert replay.n_steps == look.steps
    if not any(n.kind is NodeKind.OR for n in prob.tree) and len(prob.objects) <= 3:
        best = exhaustive_plan(alloc)
        assert best.cost <= (look.steps, look.time_s + 1e-6)
        if look.optimal:
            assert look.steps == best.steps and abs(look.time_s - best.time_s) < 1e-6, seed


def test_bounded_lookahead_falls_back_to_a_rollout_no_worse_than_greedy() -> None:
    # 6 objects, a tiny budget: the exact search gives up and the rollout decides
    objs = {
        f"o{i}": {"position": [float(i % 3), float(i // 3)], "destination": [5.0, float(i % 2)]}
        for i in range(6)
    }
    prob = problem_from_mission({"start": [0.0, -1.0], "objects": objs})
    alloc = MultitaskAllocator(prob)
    greedy = simulate(prob, "greedy")
    look = lookahead_plan(alloc, max_expansions=50, max_rollouts=400)
    assert look.method == "lookahead-rollout" and not look.optimal
    assert look.completed and look.cost <= (greedy.n_steps, greedy.time_s + 1e-6)
