"""Member selection by similarity, seed 002: condensation k (eq. 16), θ (eq. 17),
argmax (eq. 18) and the type-based θ̂ (eq. 20).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from teamtree.hardware import StrengthCapability


def condense(cap: StrengthCapability) -> np.ndarray:
    """k = s ⊙ q ⊙ (p_x + p_y + p_z) (eq. 16)."""
    return cap.s * cap.q * cap.P.sum(axis=1)


def theta(c_fav: StrengthCapability, c_k: StrengthCapability) -> float:
    """Euclidean distance score θ^k = 1000 / (1 + ||k^fav - k^k||) (eq. 17)."""
    return 1000.0 / (1.0 + float(np.linalg.norm(condense(c_fav) - condense(c_k))))


def theta_hat(q_hat_i: np.ndarray, q_hat_job: np.ndarray) -> float:
    """Type-based score θ̂ = 1000 / (1 + ||q̂^i - q̂^job||) (eq. 20)."""
    diff = np.asarray(q_hat_i, dtype=float) - np.asarray(q_hat_job, dtype=float)
    return 1000.0 / (1.0 + float(np.linalg.norm(diff)))


def best(
    scores: Mapping[Hashable, float], tiebreak: Mapping[Hashable, float] | None = None
) -> Hashable:
    """argmax of eq. 18. Eq. 18 does not say how ties end; they go to the smallest
    ``tiebreak`` value (when given), then to the smallest key, so every robot agrees.

    Raises ValueError when ``scores`` is empty.
    """
    if not scores:
        raise ValueError("no candidate to select from")
    second = tiebreak or {}
    return min(scores, key=lambda k: (-scores[k], second.get(k, 0.0), str(k)))
