"""Beliefs over the human's following preference α_f and error-proneness α_e, seed 001 eqs. 24-29.

Both are discrete distributions on a grid, updated by eq. (24) with Z = 1 and T_x = 1 and a
bounded memory of the last k human actions (k = 3).

Choices where the paper is ambiguous (all parameters on :class:`BeliefConfig`):

* Prior of α_f: Binomial(n=5, p=0.8) on {0, 0.2, …, 1}, as in the authors' simulation code
  (the default); the paper's text gives Binomial(10, 0.7) on {0, 0.1, …, 1} —
  ``BeliefConfig.paper_text()``. α_e: Binomial(10, 0.1) on {0, 0.1, …, 1}.
* Eq. (25) prints the factor ``y`` in both branches and groups F1 (assigning to the robot)
  with F2 (doing an assigned task); §IV.A calls H2 a leading action and the authors' code
  agrees, so here a following action (F2) has likelihood ``y·f2/D`` and a leading one (F1,
  F3) ``(1−y)·(α f1 + f3)/D`` with ``D = α f1 + f2 + f3``, floored at 0.001. Eq. (28)
  likewise: an error has likelihood ``y·m1/(m1+m2)``, a correct action
  ``(1−y)·m2/(m1+m2)``.
* The counts f1, f2, f3 and m1, m2 are over the *preceding* k actions, not including the
  one being observed ("in the preceding three steps", §IV.B; the authors' code updates
  before it appends the action to its history). This is what bounds the memory: an
  action of a kind absent from the last k gets the floor for every y, i.e. no evidence
  ("a single mistake ... will not be reacted upon precipitously"); α_e still moves one
  grid step through T_y. With no preceding action (the counts are 0/0) the likelihood is
  flat, as in the authors' code. The ratio itself is the same for every y, so otherwise
  it cancels in the normalisation.
* Consequence worth knowing: with k = 3 and T_y shifting a grid step (0.1) per action,
  E[α_e] estimates the human's *recent* error rate, not the long-run one. A human who
  errs with probability 0.4 and then makes five correct leading actions in a row (chance
  0.6⁵ ≈ 8 %) ends near 0.06-0.1 however many errors came before. Averaged over runs it
  lands near the true rate: after 20 actions the mean is about 0.06, 0.35 and 0.88 for
  error rates 0.1, 0.4 and 0.8 (tests/test_allocation_beliefs.py).
* T_y of eq. (27): after an error, y → y' with probability P(y' ≤ Z < g_u(y')),
  Z ~ SN(g_u(y), σ, shape); after a correct action the mirror image (Z ~ SN(g_l(y), σ,
  −shape), probability P(g_l(y') < Z ≤ y')). g_u(1) = 1.1 and g_l(0) = −0.1 as in the
  authors' code; probability mass outside [0, 1] goes to the end points.
* Only actions the robot did not assign count as evidence for α_e (§IV.B, "if they are not
  assigned to the human by the robot").
"""

from __future__ import annotations

import enum
import functools
from collections import deque
from dataclasses import dataclass

import numpy as np


class FollowEvidence(enum.Enum):
    """Human actions that say something about following, eq. (25)."""

    ASSIGNED_TO_ROBOT = "F1"  # H2: the human leads by giving the robot a task
    DID_ASSIGNED = "F2"  # H4: the human follows, doing a task the robot assigned
    REFRAINED = "F3"  # H1 while an assigned task was waiting: leads by ignoring it


class ErrorEvidence(enum.Enum):
    """Human actions that say something about error-proneness, eq. (28)."""

    ERROR = "M1"
    CORRECT = "M2"


@dataclass(frozen=True)
class BeliefConfig:
    """Parameters of the belief updates (docs/scenarios.md, seed 001)."""

    follow_levels: int = 6
    follow_prior_p: float = 0.8
    error_levels: int = 11
    error_prior_p: float = 0.1
    history: int = 3
    assign_weight: float = 10.0
    sigma: float = 0.1
    skew: float = 0.1
    floor: float = 0.001

    @classmethod
    def paper_text(cls) -> BeliefConfig:
        """The α_f prior as the paper's text states it: Binomial(10, 0.7) on 11 levels."""
        return cls(follow_levels=11, follow_prior_p=0.7)


def _grid(levels: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, levels)


def _prior(levels: int, p: float) -> np.ndarray:
    from scipy.stats import binom  # imported here: scipy.stats costs ~0.5 s at start-up

    return binom(levels - 1, p).pmf(np.arange(levels))


def error_transition(grid: np.ndarray, sigma: float, skew: float, error: bool) -> np.ndarray:
    """T_y of eq. (27) as a matrix ``T[y, y']`` (rows sum to 1)."""
    n = len(grid)
    step = grid[1] - grid[0] if n > 1 else 1.0
    edges = np.concatenate([grid, [grid[-1] + step]])  # [y', g_u(y')) bins
    edges[0], edges[-1] = -np.inf, np.inf
    t = np.zeros((n, n))
    for i in range(n):
        mean = grid[i] + step  # g_u(y)
        from scipy.stats import skewnorm

        cdf = skewnorm.cdf(edges, skew, loc=mean, scale=sigma)
        t[i] = np.diff(cdf)
    if not error:
        t = t[::-1, ::-1]  # mirror image: shift down after a correct action
    return t / t.sum(axis=1, keepdims=True)


@functools.lru_cache(maxsize=16)
def _transitions(levels: int, sigma: float, skew: float) -> tuple[np.ndarray, np.ndarray]:
    """T_y after an error and after a correct action (read-only; the same for every
    belief with these parameters, and costly to integrate)."""
    grid = _grid(levels)
    out = []
    for error in (True, False):
        t = error_transition(grid, sigma, skew, error=error)
        t.setflags(write=False)
        out.append(t)
    return out[0], out[1]


class Belief:
    """A discrete belief over a grid in [0, 1]."""

    def __init__(self, grid: np.ndarray, probs: np.ndarray) -> None:
        self.grid = np.asarray(grid, dtype=float)
        p = np.asarray(probs, dtype=float)
        self.probs = p / p.sum()

    @property
    def mean(self) -> float:
        """E[α]."""
        return float(self.grid @ self.probs)

    def copy(self) -> Belief:
        """An independent copy."""
        return Belief(self.grid.copy(), self.probs.copy())


class HumanBeliefs:
    """The robot's beliefs about α_f and α_e with bounded memory (k actions), eqs. 24-29."""

    def __init__(self, config: BeliefConfig | None = None) -> None:
        self.config = cfg = config or BeliefConfig()
        self.follow = Belief(
            _grid(cfg.follow_levels), _prior(cfg.follow_levels, cfg.follow_prior_p)
        )
        self.error = Belief(_grid(cfg.error_levels), _prior(cfg.error_levels, cfg.error_prior_p))
        self._follow_hist: deque[FollowEvidence] = deque(maxlen=cfg.history)
        self._error_hist: deque[ErrorEvidence] = deque(maxlen=cfg.history)
        self._t_err, self._t_ok = _transitions(cfg.error_levels, cfg.sigma, cfg.skew)

    @property
    def p_follow(self) -> float:
        """E[α_f]: the expected following preference used in eq. (12)."""
        return self.follow.mean

    @property
    def p_error(self) -> float:
        """E[α_e]: the expected error-proneness used in eq. (13)."""
        return self.error.mean

    def observe_follow(self, evidence: FollowEvidence) -> None:
        """Update α_f with one human action, eqs. (25)-(26), counting the preceding k."""
        cfg = self.config
        hist = self._follow_hist
        y = self.follow.grid
        if hist:
            f1 = sum(e is FollowEvidence.ASSIGNED_TO_ROBOT for e in hist)
            f2 = sum(e is FollowEvidence.DID_ASSIGNED for e in hist)
            f3 = sum(e is FollowEvidence.REFRAINED for e in hist)
            denom = cfg.assign_weight * f1 + f2 + f3
            if evidence is FollowEvidence.DID_ASSIGNED:
                like = y * (f2 / denom)
            else:
                like = (1.0 - y) * ((cfg.assign_weight * f1 + f3) / denom)
            like = np.maximum(cfg.floor, like)
        else:
            like = np.ones_like(y)  # no preceding action: eq. (25) is 0/0
        self.follow = Belief(y, like * self.follow.probs)  # T_y = I(y = y'), eq. (26)
        hist.append(evidence)

    def observe_error(self, evidence: ErrorEvidence) -> None:
        """Update α_e with one action the robot did not assign, eqs. (27)-(29), counting
        the preceding k."""
        cfg = self.config
        hist = self._error_hist
        y = self.error.grid
        trans = self._t_err if evidence is ErrorEvidence.ERROR else self._t_ok
        if hist:
            m1 = sum(e is ErrorEvidence.ERROR for e in hist)
            m2 = len(hist) - m1
            if evidence is ErrorEvidence.ERROR:
                like = y * (m1 / (m1 + m2))
            else:
                like = (1.0 - y) * (m2 / (m1 + m2))
            like = np.maximum(cfg.floor, like)
        else:
            like = np.ones_like(y)  # no preceding action: eq. (28) is 0/0
        self.error = Belief(y, (like * self.error.probs) @ trans)  # eq. (29)
        hist.append(evidence)

    def snapshot(self) -> dict[str, float]:
        """E[α_f] and E[α_e] as plain numbers."""
        return {"alpha_f": self.p_follow, "alpha_e": self.p_error}


class FixedBeliefs:
    """Non-adaptive beliefs (§VI.B): fixed α_f and α_e, evidence ignored."""

    def __init__(self, p_follow: float = 1.0, p_error: float = 0.0) -> None:
        self.p_follow = p_follow
        self.p_error = p_error

    def observe_follow(self, evidence: FollowEvidence) -> None:
        """Ignored."""

    def observe_error(self, evidence: ErrorEvidence) -> None:
        """Ignored."""

    def snapshot(self) -> dict[str, float]:
        """The fixed values."""
        return {"alpha_f": self.p_follow, "alpha_e": self.p_error}
