"""Beliefs over α_f and α_e (seed 001 eqs. 24-29): each kind of evidence moves them right."""

from __future__ import annotations

import numpy as np
import pytest

from teamtree.planners.allocation import (
    BeliefConfig,
    ErrorEvidence,
    FixedBeliefs,
    FollowEvidence,
    HumanBeliefs,
    error_transition,
)


def test_priors_match_scenarios() -> None:
    b = HumanBeliefs()
    assert len(b.follow.grid) == 6 and b.p_follow == pytest.approx(0.8)
    assert len(b.error.grid) == 11 and b.p_error == pytest.approx(0.1)
    paper = HumanBeliefs(BeliefConfig.paper_text())
    assert len(paper.follow.grid) == 11 and paper.p_follow == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("evidence", "direction"),
    [
        (FollowEvidence.DID_ASSIGNED, +1),
        (FollowEvidence.ASSIGNED_TO_ROBOT, -1),
        (FollowEvidence.REFRAINED, -1),
    ],
)
def test_follow_evidence_moves_alpha_f(evidence: FollowEvidence, direction: int) -> None:
    b = HumanBeliefs()
    before = b.p_follow
    b.observe_follow(evidence)
    assert (b.p_follow - before) * direction > 0
    assert b.p_error == pytest.approx(0.1)  # untouched


@pytest.mark.parametrize(("evidence", "direction"), [(ErrorEvidence.ERROR, +1)])
def test_error_raises_alpha_e(evidence: ErrorEvidence, direction: int) -> None:
    b = HumanBeliefs()
    before = b.p_error
    b.observe_error(evidence)
    assert (b.p_error - before) * direction > 0
    assert b.p_follow == pytest.approx(0.8)


def test_correct_actions_lower_alpha_e_after_errors() -> None:
    b = HumanBeliefs()
    for _ in range(3):
        b.observe_error(ErrorEvidence.ERROR)
    high = b.p_error
    b.observe_error(ErrorEvidence.CORRECT)
    assert b.p_error < high
    for _ in range(10):
        b.observe_error(ErrorEvidence.CORRECT)
    assert b.p_error < 0.1


def test_assigning_to_robot_weighs_more_than_refraining() -> None:
    a, r = HumanBeliefs(), HumanBeliefs()
    for _ in range(2):
        a.observe_follow(FollowEvidence.DID_ASSIGNED)
        r.observe_follow(FollowEvidence.DID_ASSIGNED)
    a.observe_follow(FollowEvidence.ASSIGNED_TO_ROBOT)
    r.observe_follow(FollowEvidence.REFRAINED)
    assert a.p_follow < r.p_follow


def test_memory_is_bounded_to_k_actions() -> None:
    b = HumanBeliefs(BeliefConfig(history=3))
    for _ in range(5):
        b.observe_follow(FollowEvidence.DID_ASSIGNED)
    assert len(b._follow_hist) == 3


def test_error_transition_rows_are_distributions_shifted_the_right_way() -> None:
    grid = np.linspace(0, 1, 11)
    up = error_transition(grid, 0.1, 0.1, error=True)
    down = error_transition(grid, 0.1, 0.1, error=False)
    assert np.allclose(up.sum(axis=1), 1) and np.allclose(down.sum(axis=1), 1)
    assert (up @ grid)[5] > grid[5] > (down @ grid)[5]


def test_fixed_beliefs_ignore_evidence() -> None:
    f = FixedBeliefs(1.0, 0.35)
    f.observe_error(ErrorEvidence.ERROR)
    f.observe_follow(FollowEvidence.ASSIGNED_TO_ROBOT)
    assert f.snapshot() == {"alpha_f": 1.0, "alpha_e": 0.35}
