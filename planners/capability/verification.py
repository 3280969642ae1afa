"""Capability verification, seed 002: strength-based with ReLU masks (§IV.B, eqs. 6-12)
and type-based (§V.B).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teamtree.broker import SpecificationError
from teamtree.hardware import StrengthCapability, TypeCapability, align_levels


def relu(x: np.ndarray) -> np.ndarray:
    """Element-wise max(x, 0) (eq. 6)."""
    return np.maximum(x, 0)


def binarize(x: np.ndarray) -> np.ndarray:
    """The binarization operator B{·}: 1 where x > 0, else 0 (as booleans)."""
    return np.asarray(x) > 0


@dataclass(frozen=True, eq=False)
class StrengthVerification:
    """Every intermediate of eqs. 6-12, and the answer.

    ``delta_q`` (eq. 6), ``p_req`` (eqs. 7-8), ``m_p`` (eq. 9), ``b`` (eq. 10),
    ``q_req`` (eq. 11), ``c_req`` (eq. 12). ``capable`` is ΔC = [s^job, 0] (§IV.C):
    nothing missing in quantity or position.
    """

    delta_q: np.ndarray
    p_req: np.ndarray
    m_p: np.ndarray
    b: np.ndarray
    q_req: np.ndarray
    c_req: StrengthCapability

    @property
    def capable(self) -> bool:
        """True when the robot (or team) can do the job alone."""
        return not self.delta_q.any() and not self.p_req.any()


def _closest_row(r_job: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """r^self_{k,min} of eq. 7: the candidate that best meets r_job.

    Choice: least remaining shortfall ||ReLU(r_job - r)||, then least distance.
    """
    short = np.linalg.norm(relu(r_job - candidates), axis=1)
    dist = np.linalg.norm(r_job - candidates, axis=1)
    best = np.lexsort((dist, short))[0]
    return candidates[best]


def verify_strength(job: StrengthCapability, me: StrengthCapability) -> StrengthVerification:
    """Verify C^self against C^job by eqs. 6-12; returns all terms and C^req.

    For a demanded row of level s_i, the candidate self rows are those of the same domain
    with level >= s_i that hold a component (stronger components can do weaker work,
    §IV.A); with no candidate, the whole demanded position is required. Mismatched
    level layouts are synchronised first (§IV.C); raises SpecificationError if the
    domains differ.
    """
    n = max(job.n_levels, me.n_levels)
    if job.n_rows // job.n_levels != me.n_rows // me.n_levels:
        raise SpecificationError("job and robot capability matrices have different domains")
    job, me = align_levels(job, n), align_levels(me, n)
    delta_q = relu(job.q - me.q)  # eq. 6
    p_req = np.zeros_like(job.P)
    n_domains = job.n_rows // n
    for d in range(n_domains):
        for i in range(n):
            row = d * n + i
            r_job = job.P[row]
            if not r_job.any():
                continue
            cand_rows = [
                d * n + j for j in range(i, n) if me.P[d * n + j].any() and me.q[d * n + j] > 0
            ]
            if not cand_rows:
                p_req[row] = r_job  # eq. 7 with r_min = 0
                continue
            r_min = _closest_row(r_job, me.P[cand_rows])
            p_req[row] = relu(r_job - r_min)  # eq. 7
    m_p = p_req @ np.ones(3)  # eq. 9
    bq, bm = binarize(delta_q), binarize(m_p)
    b = delta_q * (bq & ~bm)  # eq. 10
    q_req = job.q * bm + b  # eq. 11
    c_req = StrengthCapability(job.s.copy(), q_req, p_req, n)  # eq. 12
    return StrengthVerification(delta_q, p_req, m_p, b, q_req, c_req)


@dataclass(frozen=True, eq=False)
class TypeVerification:
    """Type-based verification (§V.B): missing types, Δq̂ (eq. 6 on q̂), position misses."""

    missing_types: tuple[tuple[int, int], ...]
    delta_q_hat: np.ndarray
    position_misses: tuple[tuple[int, int], ...]

    @property
    def capable(self) -> bool:
        """True when every type is found, quantities suffice and positions fit."""
        return not self.missing_types and not self.delta_q_hat.any() and not self.position_misses


def verify_type(job: TypeCapability, me: TypeCapability) -> TypeVerification:
    """Compare T^job with T^self row by row, q̂ with ReLU, then P̂ with ReLU (§V.B-C).

    Missing types and misses are ``(domain, type)`` pairs.
    """
    if job.T.shape[0] != me.T.shape[0]:
        raise SpecificationError("job and robot type matrices have different domains")
    missing: list[tuple[int, int]] = []
    misses: list[tuple[int, int]] = []
    for d in range(job.T.shape[0]):
        have = set(me.types(d))
        for t in job.types(d):
            if t not in have:
                missing.append((d, t))
                continue
            need = np.asarray(job.positions[(d, t)], dtype=float)
            got = np.asarray(me.positions[(d, t)], dtype=float)
            if relu(need - got).any():
                misses.append((d, t))
    delta = relu(job.q_hat - me.q_hat)
    return TypeVerification(tuple(missing), delta, tuple(misses))
