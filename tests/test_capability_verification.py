"""Seed 002 verification: the worked example (eqs. 13-15) and type-based checks."""

import numpy as np

from teamtree.hardware import StrengthCapability, factory_robots, type_capability
from teamtree.planners.capability import (
    JOBS,
    best,
    condense,
    theta,
    theta_hat,
    verify_strength,
    verify_type,
)


def test_worked_example_eqs_13_to_15():
    c_job = StrengthCapability.from_matrix([[1, 1, 1, 4, 1], [2, 0, 0, 0, 0]])
    c_self = StrengthCapability.from_matrix([[1, 1, 2, 3, 2], [2, 0, 0, 0, 0]])
    v = verify_strength(c_job, c_self)
    assert v.delta_q.tolist() == [0, 0]  # eq. 13
    assert v.p_req.tolist() == [[0, 1, 0], [0, 0, 0]]  # eq. 14
    assert v.m_p.tolist() == [1, 0]
    assert v.b.tolist() == [0, 0]
    assert v.q_req.tolist() == [1, 0]
    assert v.c_req.matrix.tolist() == [[1, 1, 0, 1, 0], [2, 0, 0, 0, 0]]  # eq. 15
    assert not v.capable


def test_quantity_only_gap_goes_to_b():
    c_job = StrengthCapability.from_matrix([[1, 2, 0, 0, 0], [2, 0, 0, 0, 0]])
    c_self = StrengthCapability.from_matrix([[1, 1, 1, 1, 1], [2, 0, 0, 0, 0]])
    v = verify_strength(c_job, c_self)
    assert v.b.tolist() == [1, 0] and v.q_req.tolist() == [1, 0]


def test_stronger_component_serves_weaker_demand():
    r = {x.robot_id: x for x in factory_robots()}
    from teamtree.hardware import strength_capability

    assert verify_strength(JOBS["job2"].strength(), strength_capability(r["s2"])).capable
    assert not verify_strength(JOBS["job4"].strength(), strength_capability(r["s1"])).capable


def test_type_based_s2_lacks_type_1_manipulator():
    r = {x.robot_id: x for x in factory_robots()}
    v = verify_type(JOBS["job2"].types(), type_capability(r["s2"]))
    assert v.missing_types == ((1, 1),) and not v.capable
    assert verify_type(JOBS["job2"].types(), type_capability(r["s1"])).capable
    v3 = verify_type(JOBS["job3b"].types(), type_capability(r["l1"]))
    assert v3.position_misses == ((1, 1),)


def test_scores_eq_16_17_20():
    c = StrengthCapability.from_matrix([[1, 2, 1, 1, 1], [2, 1, 1, 2, 1]])
    assert condense(c).tolist() == [6, 8]
    assert theta(c, c) == 1000.0
    assert np.isclose(theta_hat(np.array([1, 2, 1]), np.array([1, 1, 1])), 500.0)


def test_capability_all_is_sorted_and_complete():
    import teamtree.planners.capability as cap

    def key(name: str) -> tuple[int, str]:
        if name.isupper():
            return (0, name)
        return (1, name) if name[0].isupper() else (2, name)

    assert cap.__all__ == sorted(cap.__all__, key=key)
    assert all(hasattr(cap, n) for n in cap.__all__)


def test_best_is_eq_18_argmax_with_ties_to_the_tiebreak_then_the_key():
    scores = {"b": 240.0, "a": 240.0, "c": 100.0}
    assert best(scores) == "a"
    assert best(scores, {"a": 3, "b": 2, "c": 0}) == "b"
    assert best({"x": 1.0, "y": 2.0}, {"y": 9}) == "y"  # the score comes first
