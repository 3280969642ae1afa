"""Offline allocation on the hospital scenario (seed 003 §II-B, Defs. 1-2)."""

import itertools

import pytest

from teamtree.broker import InfeasibleError, SpecificationError
from teamtree.planners.ltl import (
    FORMULAS,
    Mission,
    TSState,
    check_trace,
    decomposition_set,
    evaluate,
    hospital_robot,
    hospital_team,
    replicated_team,
)


@pytest.fixture(scope="module")
def missions():
    out = {}
    for name in FORMULAS:
        formula, robots = hospital_team(name)
        out[name] = Mission(formula, robots)
    return out


def _word(mission, plan, order=None):
    word = []
    for name in order or plan.order:
        labels = mission.robots[name].ts.labels
        word += [labels[s] for s in plan[name].states[:-1]]
    return word


@pytest.mark.parametrize("name", sorted(FORMULAS))
@pytest.mark.parametrize("objective", ["sum", "makespan"])
def test_plans_satisfy_the_formula_on_the_projected_trace(missions, name, objective):
    mission = missions[name]
    plan = mission.allocate(objective)
    segments = {r: [list(p.states)] for r, p in plan.plans.items()}
    verdict = check_trace(FORMULAS[name], segments)
    assert verdict.satisfied, verdict.reason
    assert verdict.arrangement == tuple((r, 0) for r in plan.order)
    assert evaluate(FORMULAS[name], _word(mission, plan))
    # every plan is a path of its robot's transition system
    for r, p in plan.plans.items():
        ts = mission.robots[r].ts
        assert p.states[0] == ts.initial
        for (s, t), act in zip(itertools.pairwise(p.states), p.actions, strict=True):
            assert ts.transition(s, t).action == act


def test_study2_allocation_matches_the_paper(missions):
    plan = missions["study2"].allocate()
    regions = {r: {s.region for s in p.states} for r, p in plan.plans.items()}
    assert "p6" in regions["A1"] and "p3" in regions["DR"]  # deliveries (Fig. 6)
    assert {"c7", "c6", "p4"} <= regions["Wassi"]  # walk training
    assert plan.cost == pytest.approx(285.03)
    assert all(not p.waits_for for p in plan.plans.values())  # independent sub-tasks
    assert plan["A1"].actions[0] == "pick" and plan["A1"].actions[-1] == "stay"


def test_makespan_objective_never_longer(missions):
    m = missions["study2"]
    assert m.allocate("makespan").makespan <= m.allocate("sum").makespan + 1e-9


def test_decomposition_set_has_initial_and_accepting_but_no_half_task(missions):
    m = missions["study2"]
    aut = m.automaton
    d = m.decomposition
    assert aut.initial in d
    assert aut.accepting <= d
    assert aut.sink not in d
    # half way through the training chain is not a switch point
    q = aut.run(aut.initial, [{"c7", "training"}])
    assert q not in d
    # one delivery done is
    q = aut.run(aut.initial, [{"c3", "loaded"}, {"p6", "loaded"}, {"p6", "standby"}])
    assert q in d
    # the witness method (authors' test, done exactly) admits more
    assert d <= decomposition_set(aut, method="witness")


def test_study1_switch_order_and_idle_robot():
    formula, _ = hospital_team("study1")
    # A1 alone can do everything; DR placed first but far away
    robots = [hospital_robot("A1"), hospital_robot("DR", start=("w1", "standby"))]
    plan = Mission(formula, robots).allocate()
    assert check_trace(formula, {r: [list(p.states)] for r, p in plan.plans.items()})


def test_single_capable_robot_does_everything():
    formula = FORMULAS["study2"]
    plan = Mission(formula, [hospital_robot("A1")]).allocate()
    a1 = plan["A1"]
    assert {"p3", "p6", "p4", "c6"} <= {s.region for s in a1.states}
    assert check_trace(formula, {"A1": [list(a1.states)]})


def test_impossible_team_raises_infeasible_quickly():
    formula = FORMULAS["study2"]
    with pytest.raises(InfeasibleError, match="still to do: <> \\(c7 && training"):
        Mission(formula, [hospital_robot("DR")]).allocate()


def test_unsatisfiable_formula_raises_infeasible():
    with pytest.raises(InfeasibleError):
        Mission("<> p3 && [] !p3", [hospital_robot("DR")]).allocate()


def test_bad_inputs():
    formula = FORMULAS["study1"]
    with pytest.raises(SpecificationError, match="unique names"):
        Mission(formula, [hospital_robot("DR"), hospital_robot("DR")])
    with pytest.raises(SpecificationError, match="objective"):
        Mission(formula, [hospital_robot("DR")], objective="fastest")
    with pytest.raises(SpecificationError, match="unknown robot type"):
        hospital_robot("R2D2")
    with pytest.raises(SpecificationError, match="not a \\(region, mode\\) pair"):
        hospital_robot("DR", start=("p3", "training"))


def test_a1_specific_edge_weight():
    a1 = hospital_robot("A1").ts
    dr = hospital_robot("DR").ts
    s, t = TSState("c3", "standby"), TSState("p6", "standby")
    assert a1.transition(s, t).weight == 5.0
    assert dr.transition(s, t).weight == 10.0
    assert dr.transition(t, s).weight == 10.0
    assert dr.transition(TSState("s1", "standby"), TSState("c8", "standby")).weight == 5.0
    assert dr.transition(TSState("c8", "standby"), TSState("s1", "standby")).weight == 10.0
    assert dr.transition(TSState("c5", "standby"), TSState("c8", "standby")) is not None
    assert dr.transition(TSState("c6", "standby"), TSState("c5", "standby")).weight == 40.0
    # pick only at s1, start_training only at c1
    assert dr.transition(TSState("s1", "standby"), TSState("s1", "loaded")).action == "pick"
    assert dr.transition(TSState("c1", "standby"), TSState("c1", "loaded")) is None
    assert a1.transition(TSState("c2", "standby"), TSState("c2", "training")) is None
    assert a1.transition(TSState("c1", "standby"), TSState("c1", "training")) is not None


def test_replicated_team_nine_robots():
    formula, robots = replicated_team(9)
    plan = Mission(formula, robots).allocate()
    assert len(plan.plans) == 9
    assert check_trace(formula, {r: [list(p.states)] for r, p in plan.plans.items()})
