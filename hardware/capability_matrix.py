"""Capability matrices of seed 002: strength-based C = [s q P] (eqs. 2-5) and type-based
T, q̂, P̂ (§V.A), built from components (a robot's, a team's, or a job's demands).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from teamtree.broker import SpecificationError
from teamtree.hardware.robot_types import Component, Domain, Position, RobotProfile

N_DOMAINS = len(Domain)
DEFAULT_LEVELS = 3
"""Table II uses strength levels 1-3."""


def _most_distant(positions: Iterable[Position]) -> Position | None:
    """The position farthest from Plane 1 (§IV.A: only that one is stored); ties by height."""
    best: Position | None = None
    best_key: tuple[float, int] | None = None
    for pos in positions:
        key = (float(np.linalg.norm(np.asarray(pos) - 1)), pos[1])
        if best_key is None or key > best_key:
            best, best_key = pos, key
    return best


@dataclass(frozen=True, eq=False)
class StrengthCapability:
    """C = [s q P] ∈ R^{N×5}, N = D·n (seed 002 eqs. 2-5).

    Rows are grouped by domain (perception, manipulation, locomotion), levels ascending
    inside a domain. ``q[i]`` counts components with level >= ``s[i]``; ``P[i]`` is the
    position of the most distant component with level exactly ``s[i]`` (0 when none).
    """

    s: np.ndarray
    q: np.ndarray
    P: np.ndarray
    n_levels: int = DEFAULT_LEVELS

    @property
    def matrix(self) -> np.ndarray:
        """The N×5 matrix [s q P] (eq. 2)."""
        return np.column_stack([self.s, self.q, self.P]).astype(float)

    @property
    def n_rows(self) -> int:
        """N = D · n."""
        return int(self.s.shape[0])

    def domain_slice(self, domain: Domain | int) -> slice:
        """Rows of one capability domain."""
        d = int(domain)
        return slice(d * self.n_levels, (d + 1) * self.n_levels)

    @classmethod
    def from_matrix(
        cls, matrix: np.ndarray | list, n_levels: int | None = None
    ) -> StrengthCapability:
        """From an N×5 matrix; ``n_levels`` defaults to N (one domain), as in eqs. 13-15."""
        m = np.asarray(matrix, dtype=float)
        if m.ndim != 2 or m.shape[1] != 5:
            raise SpecificationError(f"a capability matrix is N×5, got shape {m.shape}")
        n = m.shape[0] if n_levels is None else n_levels
        if n < 1 or m.shape[0] % n:
            raise SpecificationError(f"{m.shape[0]} rows do not split into domains of {n} levels")
        return cls(m[:, 0].copy(), m[:, 1].copy(), m[:, 2:5].copy(), n)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StrengthCapability):
            return NotImplemented
        return self.n_levels == other.n_levels and np.array_equal(self.matrix, other.matrix)

    def __repr__(self) -> str:
        return f"StrengthCapability(n_levels={self.n_levels}, matrix={self.matrix.tolist()})"


def strength_levels(n_levels: int = DEFAULT_LEVELS, n_domains: int = N_DOMAINS) -> np.ndarray:
    """The strength vector s (eq. 3): 1..n repeated per domain."""
    return np.tile(np.arange(1, n_levels + 1, dtype=float), n_domains)


def strength_capability(
    source: RobotProfile | Iterable[Component], n_levels: int = DEFAULT_LEVELS
) -> StrengthCapability:
    """C^self (or C^job from demanded components) by eqs. 2-5.

    Raises SpecificationError when a component's level exceeds ``n_levels``. Computed
    once per distinct set of components and shared (its arrays are read-only): every
    robot that answers a method-1 request, and the requester for every offer, needs it.
    """
    comps = source.components if isinstance(source, RobotProfile) else tuple(source)
    return _strength_capability(comps, n_levels)


@functools.lru_cache(maxsize=4096)
def _strength_capability(comps: tuple[Component, ...], n_levels: int) -> StrengthCapability:
    n = n_levels
    s = strength_levels(n)
    q = np.zeros(N_DOMAINS * n)
    P = np.zeros((N_DOMAINS * n, 3))
    for c in comps:
        if c.level > n:
            raise SpecificationError(f"component level {c.level} is above the {n} levels modelled")
    for d in Domain:
        mine = [c for c in comps if c.domain == d]
        for i in range(1, n + 1):
            row = int(d) * n + i - 1
            q[row] = sum(1 for c in mine if c.level >= i)
            pos = _most_distant(c.position for c in mine if c.level == i)
            if pos is not None:
                P[row] = pos
    for array in (s, q, P):
        array.setflags(write=False)
    return StrengthCapability(s, q, P, n)


def align_levels(cap: StrengthCapability, n_levels: int) -> StrengthCapability:
    """Synchronization mapping (§IV.C) of C to another number of levels per domain.

    Extra levels are added empty; removing a level that holds components raises
    SpecificationError.
    """
    if n_levels == cap.n_levels:
        return cap
    s = strength_levels(n_levels)
    q = np.zeros(N_DOMAINS * n_levels)
    P = np.zeros((N_DOMAINS * n_levels, 3))
    for d in range(N_DOMAINS):
        for i in range(cap.n_levels):
            src = d * cap.n_levels + i
            if i >= n_levels:
                if cap.q[src] or cap.P[src].any():
                    raise SpecificationError(f"level {i + 1} cannot be mapped to {n_levels} levels")
                continue
            dst = d * n_levels + i
            q[dst], P[dst] = cap.q[src], cap.P[src]
    return StrengthCapability(s, q, P, n_levels)


@dataclass(frozen=True, eq=False)
class TypeCapability:
    """Type-based capability T, q̂, P̂ (seed 002 §V.A).

    ``T`` is D×K with each domain's component types, padded with 0; ``q_hat`` the number
    of components per domain; ``positions[(d, t)]`` the most distant position of a type-t
    component of domain d (P̂); ``counts[(d, t)]`` how many components of that type.
    """

    T: np.ndarray
    q_hat: np.ndarray
    positions: Mapping[tuple[int, int], Position]
    counts: Mapping[tuple[int, int], int]

    def types(self, domain: Domain | int) -> list[int]:
        """The types present in one domain (row of T without the padding)."""
        return [int(t) for t in self.T[int(domain)] if t]

    @property
    def P_hat(self) -> np.ndarray:
        """P̂ as a D×K×3 array aligned with T (0 where T is padding)."""
        out = np.zeros((*self.T.shape, 3))
        for d in range(self.T.shape[0]):
            for k, t in enumerate(self.T[d]):
                if t:
                    out[d, k] = self.positions[(d, int(t))]
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeCapability):
            return NotImplemented
        return (
            np.array_equal(self.q_hat, other.q_hat)
            and dict(self.positions) == dict(other.positions)
            and dict(self.counts) == dict(other.counts)
        )

    def __repr__(self) -> str:
        return f"TypeCapability(T={self.T.tolist()}, q_hat={self.q_hat.tolist()})"


def type_capability(source: RobotProfile | Iterable[Component]) -> TypeCapability:
    """T, q̂, P̂ (§V.A) of a robot, a team's components, or a job's demands.

    Computed once per distinct set of components and shared (its arrays are read-only):
    a requester scores every offer it gets, and at 100 robots that recomputation was
    most of a selection's time.
    """
    comps = source.components if isinstance(source, RobotProfile) else tuple(source)
    return _type_capability(comps)


@functools.lru_cache(maxsize=4096)
def _type_capability(comps: tuple[Component, ...]) -> TypeCapability:
    rows: list[list[int]] = []
    q_hat = np.zeros(N_DOMAINS)
    positions: dict[tuple[int, int], Position] = {}
    counts: dict[tuple[int, int], int] = {}
    for d in Domain:
        mine = [c for c in comps if c.domain == d]
        q_hat[int(d)] = len(mine)
        types = sorted({c.type for c in mine})
        rows.append(types)
        for t in types:
            of_t = [c for c in mine if c.type == t]
            counts[(int(d), t)] = len(of_t)
            pos = _most_distant(c.position for c in of_t)
            assert pos is not None
            positions[(int(d), t)] = pos
    width = max(1, max(len(r) for r in rows))
    T = np.zeros((N_DOMAINS, width), dtype=int)
    for d, r in enumerate(rows):
        T[d, : len(r)] = r
    T.setflags(write=False)
    q_hat.setflags(write=False)
    return TypeCapability(T, q_hat, MappingProxyType(positions), MappingProxyType(counts))
