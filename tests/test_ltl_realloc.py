"""Local (Alg. 1, 2) and global (Defs. 4, 5) reallocation on the hospital scenario."""

import time

import pytest

from teamtree.broker import InfeasibleError, PlanningError, SpecificationError
from teamtree.planners.ltl import (
    FORMULAS,
    EnvironmentChange,
    Mission,
    TSState,
    block_edge,
    check_trace,
    hospital_team,
    reallocate_environment_change,
    reallocate_global,
    reallocate_state_change,
)

S = TSState
F2 = FORMULAS["study2"]


@pytest.fixture
def study2():
    formula, robots = hospital_team("study2")
    mission = Mission(formula, robots)
    return mission, mission.allocate()


def _until(plan, robot, state):
    states = list(plan[robot].states)
    return states[: states.index(state) + 1]


def _check(mission, segments):
    systems = {r: m.ts for r, m in mission.robots.items()}
    verdict = check_trace(mission.automaton, segments, systems=systems)
    assert verdict.satisfied, verdict.reason
    return verdict


def _whole(plan):
    return {r: [list(p.states)] for r, p in plan.plans.items()}


# ------------------------------------------------------------- Alg. 1


def test_alg1_cargo_lost_replans_back_to_s1(study2):
    mission, plan = study2
    done = _until(plan, "DR", S("c4", "loaded"))
    executed = [*done, S("c4", "standby")]  # the cargo is gone
    new = reallocate_state_change(mission, plan["DR"], executed)
    assert new.states[0] == S("c4", "standby")
    assert "pick" in new.actions and S("p3", "standby") in new.states
    assert new.accept_q == plan["DR"].accept_q
    segs = _whole(plan)
    segs["DR"] = [executed + list(new.states[1:])]
    _check(mission, segs)


def test_alg1_reuses_the_plan_when_the_new_state_is_on_it(study2):
    mission, plan = study2
    dr = plan["DR"]
    i = dr.actions.index("pick")  # states[i] is (s1, standby), states[i+1] (s1, loaded)
    executed = [*dr.states[: i + 1], dr.states[i + 1]]
    new = reallocate_state_change(mission, dr, executed)
    assert new.states == dr.states[i + 1 :]  # case 1.1


def test_alg1_state_change_at_the_start(study2):
    mission, plan = study2
    new = reallocate_state_change(mission, plan["A1"], [S("s1", "loaded")])
    assert new.actions[0] != "pick" and S("p6", "standby") in new.states
    segs = _whole(plan)
    segs["A1"] = [list(new.states)]
    _check(mission, segs)


def test_alg1_rejects_a_trace_that_left_the_plan(study2):
    mission, plan = study2
    with pytest.raises(PlanningError, match="left its plan at step 1"):
        reallocate_state_change(
            mission, plan["DR"], [S("x2", "standby"), S("x1", "standby"), S("c9", "loaded")]
        )


# ------------------------------------------------------------- Alg. 2


def test_alg2_change_off_the_path_keeps_the_plan(study2):
    mission, plan = study2
    done = _until(plan, "DR", S("c8", "standby"))
    new, deleted = reallocate_environment_change(
        mission, plan["DR"], done, block_edge(mission, "DR", "c10", "w1")
    )
    assert deleted and new.states == plan["DR"].states[len(done) - 1 :]  # case 2.1


def test_alg2_blocked_corridor_finds_a_detour(study2):
    mission, plan = study2
    done = _until(plan, "DR", S("c5", "loaded"))
    change = block_edge(mission, "DR", "c5", "c4")
    new, deleted = reallocate_environment_change(mission, plan["DR"], done, change)
    assert (S("c5", "loaded"), S("c4", "loaded")) in deleted
    regions = [s.region for s in new.states]
    assert "c4" not in regions and regions[-1] == "p3"  # around through c6, c7
    assert "c6" in regions
    segs = _whole(plan)
    segs["DR"] = [done + list(new.states[1:])]
    _check(mission, segs)


def test_alg2_added_transition_is_used(study2):
    mission, plan = study2
    done = _until(plan, "DR", S("c9", "standby"))
    shortcut = (S("c9", "standby"), S("s1", "standby"), "goto_s1", 1.0)
    # a new door from c9 to s1 is not on the plan, so Alg. 2 keeps the plan ...
    kept, _ = reallocate_environment_change(
        mission, plan["DR"], done, EnvironmentChange(add=(shortcut,))
    )
    assert kept.states == plan["DR"].states[len(done) - 1 :]
    # ... and the product now has it for later searches
    assert mission.robots["DR"].ts.transition(shortcut[0], shortcut[1]).weight == 1.0


def test_alg2_relabel_that_breaks_the_task_goes_global(study2):
    mission, plan = study2
    done = _until(plan, "DR", S("c4", "loaded"))
    relabel = EnvironmentChange(relabel=((S("p3", "standby"), frozenset({"p3", "loaded"})),))
    with pytest.raises(InfeasibleError, match="DR cannot finish"):
        reallocate_environment_change(mission, plan["DR"], done, relabel)
    executed = {"DR": done, "A1": list(plan["A1"].states[:3]), "Wassi": list(plan["Wassi"].states)}
    new = reallocate_global(mission, plan, executed)
    assert S("p3", "standby") in new["A1"].states  # A1 delivers to p3 instead
    segs = {r: [executed[r], list(new[r].states)] for r in executed}
    _check(mission, segs)


def test_relabel_outside_the_alphabet_is_refused(study2):
    mission, plan = study2
    bad = EnvironmentChange(relabel=((S("c4", "loaded"), frozenset({"p3", "p6", "loaded"})),))
    with pytest.raises(SpecificationError, match="alphabet"):
        reallocate_environment_change(mission, plan["DR"], plan["DR"].states[:1], bad)


# ------------------------------------------------------------- global


def test_r4_garbage_heap_before_p3_local_fails_then_a1_takes_over(study2):
    """Paper §VI-B, disturbance 4."""
    mission, plan = study2
    done = _until(plan, "DR", S("c4", "loaded"))
    with pytest.raises(InfeasibleError, match="DR cannot finish its sub-task"):
        reallocate_environment_change(
            mission, plan["DR"], done, block_edge(mission, "DR", "c3", "p3")
        )
    executed = {
        "DR": done,
        "A1": _until(plan, "A1", S("p6", "standby")),
        "Wassi": list(plan["Wassi"].states[:4]),
    }
    new = reallocate_global(mission, plan, executed)
    assert S("p3", "standby") in new["A1"].states
    assert "p3" not in {s.region for s in new["DR"].states}
    segs = {r: [executed[r], list(new[r].states)] for r in executed}
    _check(mission, segs)


def test_r3_state_change_global_fallback(study2):
    mission, plan = study2
    done = _until(plan, "DR", S("c4", "loaded"))
    executed = {
        "DR": [*done, S("c4", "standby")],
        "A1": list(plan["A1"].states[:2]),
        "Wassi": list(plan["Wassi"].states[:2]),
    }
    new = reallocate_global(mission, plan, executed)
    segs = {r: [executed[r], list(new[r].states)] for r in executed}
    _check(mission, segs)


def test_r2_wassi_fails_during_training_a1_takes_over(study2):
    """Paper §VI-B, disturbance 2: Wassi fails between c7 and c6."""
    mission, plan = study2
    executed = {
        "Wassi": _until(plan, "Wassi", S("c7", "training")),
        "DR": list(plan["DR"].states[:5]),
        "A1": list(plan["A1"].states[:3]),
    }
    new = reallocate_global(mission, plan, executed, failed=["Wassi"])
    assert new.dropped == ("Wassi",)
    assert new["Wassi"].idle
    a1 = [s.region for s in new["A1"].states]
    assert "p6" in a1 and "c6" in a1 and a1[-1] == "p4"  # delivery first, then training
    assert a1.index("p6") < a1.index("c6")
    segs = {r: [executed[r], list(new[r].states)] for r in executed}
    _check(mission, segs)


@pytest.mark.timeout(10)
def test_two_critical_failures_make_the_mission_impossible(study2):
    mission, plan = study2
    executed = {
        "Wassi": _until(plan, "Wassi", S("c7", "training")),
        "DR": list(plan["DR"].states[:5]),
        "A1": list(plan["A1"].states[:3]),
    }
    first = reallocate_global(mission, plan, executed, failed=["Wassi"])
    now = {r: [first[r].states[0]] for r in first.plans}
    t0 = time.perf_counter()
    with pytest.raises(InfeasibleError) as info:
        reallocate_global(mission, first, now, failed=["A1"])
    elapsed = time.perf_counter() - t0
    msg = str(info.value)
    assert "A1" in msg and "Wassi" in msg and "training" in msg
    assert info.value.failed == ("A1", "Wassi")
    print(f"impossible mission reported in {elapsed * 1000:.1f} ms: {msg}")


def test_every_robot_failed(study2):
    mission, plan = study2
    now = {r: [p.states[0]] for r, p in plan.plans.items()}
    with pytest.raises(InfeasibleError, match="every robot has failed"):
        reallocate_global(mission, plan, now, failed=list(plan.plans))


def test_global_after_completion_gives_idle_plans(study2):
    mission, plan = study2
    new = reallocate_global(mission, plan, {r: list(p.states) for r, p in plan.plans.items()})
    assert all(p.idle for p in new.plans.values())
    assert new.start_q in mission.automaton.accepting


def test_consecutive_global_reallocations(study2):
    mission, plan = study2
    ex1 = {r: list(p.states[:3]) for r, p in plan.plans.items()}
    mid = reallocate_global(mission, plan, ex1)
    ex2 = {r: list(p.states[:4]) for r, p in mid.plans.items()}
    last = reallocate_global(mission, mid, ex2, failed=["DR"])
    segs = {r: [ex1[r], ex2[r], list(last[r].states)] for r in plan.plans}
    _check(mission, segs)


def test_unknown_robot_is_a_specification_error(study2):
    mission, plan = study2
    with pytest.raises(SpecificationError, match="unknown robot"):
        reallocate_global(mission, plan, {}, failed=["R2D2"])
    with pytest.raises(SpecificationError, match="unknown robot"):
        block_edge(mission, "R2D2", "c1", "c2")


def test_checker_reports_a_violation():
    formula, _ = hospital_team("study1")
    verdict = check_trace(
        formula,
        {"DR": [[S("c3", "standby"), S("p3", "standby"), S("p3", "standby")]]},
    )
    assert not verdict.satisfied
    assert "not satisfied" in verdict.reason
