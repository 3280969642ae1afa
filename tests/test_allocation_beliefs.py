"""Beliefs over α_f and α_e (seed 001 eqs. 24-29): each kind of evidence moves them right."""

from __future__ import annotations

import random

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
    for e in (FollowEvidence.DID_ASSIGNED, FollowEvidence.ASSIGNED_TO_ROBOT,
              FollowEvidence.REFRAINED):  # fmt: skip
        b.observe_follow(e)  # every kind in the memory
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


def test_first_action_is_no_follow_evidence() -> None:
    b = HumanBeliefs()
    b.observe_follow(FollowEvidence.ASSIGNED_TO_ROBOT)  # no preceding action: 0/0, flat
    assert b.p_follow == pytest.approx(0.8)


def test_action_absent_from_the_preceding_k_is_no_evidence() -> None:
    """Eq. (25) counts the preceding k actions: one leading action after three following
    ones is not reacted upon; the next one, with a leading action in memory, is."""
    b = HumanBeliefs()
    for _ in range(4):
        b.observe_follow(FollowEvidence.DID_ASSIGNED)
    settled = b.p_follow
    b.observe_follow(FollowEvidence.ASSIGNED_TO_ROBOT)
    assert b.p_follow == pytest.approx(settled)
    b.observe_follow(FollowEvidence.REFRAINED)
    assert b.p_follow < settled - 0.05


def test_first_error_after_correct_actions_moves_alpha_e_only_by_the_transition() -> None:
    b = HumanBeliefs()
    for _ in range(3):
        b.observe_error(ErrorEvidence.CORRECT)
    t_err = error_transition(b.error.grid, 0.1, 0.1, error=True)
    expected = b.error.probs @ t_err  # eq. (28) has m1 = 0: the floor for every y
    b.observe_error(ErrorEvidence.ERROR)
    assert np.allclose(b.error.probs, expected / expected.sum())


def _reference_error_update(
    probs: np.ndarray, grid: np.ndarray, preceding: list[bool], error: bool
) -> np.ndarray:
    """Eqs. (27)-(29) written out term by term, m1 and m2 over the preceding actions."""
    t = error_transition(grid, 0.1, 0.1, error=error)
    out = np.zeros_like(probs)
    for j, y_new in enumerate(grid):
        for k, y in enumerate(grid):
            if preceding:
                m1 = sum(preceding)
                m2 = len(preceding) - m1
                pi = y * m1 / (m1 + m2) if error else (1 - y) * m2 / (m1 + m2)
                pi = max(0.001, pi)
            else:
                pi = 1.0
            out[j] += t[k, j] * pi * probs[k]
        assert y_new == grid[j]
    return out / out.sum()


@pytest.mark.parametrize("seed", range(20))
def test_error_belief_matches_eqs_27_to_29_term_by_term(seed: int) -> None:
    rng = random.Random(seed)
    b = HumanBeliefs()
    probs, hist = b.error.probs.copy(), []
    for step in range(15):
        error = rng.random() < 0.4
        b.observe_error(ErrorEvidence.ERROR if error else ErrorEvidence.CORRECT)
        probs = _reference_error_update(probs, b.error.grid, hist[-3:], error)
        hist.append(error)
        assert np.allclose(b.error.probs, probs), f"seed={seed} step={step}"


def test_final_alpha_e_tracks_the_error_rate_on_average() -> None:
    """Over seeded runs of 20 leading actions the mean final E[α_e] orders with the true
    error rate and lands near it; single runs spread widely (bounded memory, k = 3)."""
    means, low = {}, {}
    for p in (0.1, 0.4, 0.8):
        finals = []
        for seed in range(300):
            rng = random.Random(seed)
            b = HumanBeliefs()
            for _ in range(20):
                e = rng.random() < p
                b.observe_error(ErrorEvidence.ERROR if e else ErrorEvidence.CORRECT)
            finals.append(b.p_error)
        means[p] = float(np.mean(finals))
        low[p] = float(np.mean([f < 0.1 for f in finals]))
    assert means[0.1] < means[0.4] < means[0.8], means
    for p, m in means.items():
        assert abs(m - p) < 0.1, (p, means)
    # a human erring 40 % of the time still ends below 0.1 in some runs
    assert 0.03 < low[0.4] < 0.3, low


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
