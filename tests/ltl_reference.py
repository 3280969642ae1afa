"""The automaton construction (formula progression) and the Dijkstra search as they
were before their speed-ups: a slow reference that the property tests compare the
product's against (same states in the same order, same transitions, same plans), and
that bench_ltl.py measures as its baseline. The exploration and minimisation of the
explicit automaton did not change and are the product's. Not imported by the product.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence

from teamtree.broker import SolverLimitError
from teamtree.planners.ltl import automaton
from teamtree.planners.ltl.syntax import (
    FALSE,
    TRUE,
    And,
    Const,
    Formula,
    Next,
    Not,
    Or,
    Prop,
    Release,
    Until,
    WeakNext,
    atoms,
    nnf,
    parse,
)

__all__ = ["Automaton", "Progression", "shortest_path"]

Obligation = tuple[Formula, bool]
Clause = frozenset[Obligation]
DNF = frozenset[Clause]

_TRUE_DNF: DNF = frozenset((frozenset(),))
_FALSE_DNF: DNF = frozenset()


def _norm_clause(obligations: Iterable[Obligation]) -> DNF:
    """Normalise a conjunction of obligations into a DNF (split ∧, distribute ∨)."""
    todo = list(obligations)
    done: dict[Formula, bool] = {}
    while todo:
        f, strong = todo.pop()
        if isinstance(f, Const):
            if f.value:
                if strong:
                    done[TRUE] = True
                continue
            if strong:
                return _FALSE_DNF
            done[FALSE] = done.get(FALSE, False)
            continue
        if isinstance(f, And):
            todo.extend((a, strong) for a in f.args)
            continue
        if isinstance(f, Or):
            rest = list(done.items()) + todo
            out: set[Clause] = set()
            for alt in f.args:
                out |= _norm_clause([*rest, (alt, strong)])
            return _minimal(out)
        done[f] = done.get(f, False) or strong
    if FALSE in done and any(done.values()):
        return _FALSE_DNF  # "the trace ends here" contradicts "a next position exists"
    if TRUE in done and len(done) > 1 and any(s for g, s in done.items() if g != TRUE):
        del done[TRUE]  # implied by any other strong obligation
    return frozenset((frozenset(done.items()),))


def _minimal(clauses: Iterable[Clause]) -> DNF:
    """Drop clauses that are supersets of another (they are implied)."""
    ordered = sorted(set(clauses), key=len)
    kept: list[Clause] = []
    for c in ordered:
        if not any(k <= c for k in kept):
            kept.append(c)
    return frozenset(kept)


def _product(a: DNF, b: DNF) -> DNF:
    if not a or not b:
        return _FALSE_DNF
    out: set[Clause] = set()
    for ca in a:
        for cb in b:
            out |= _norm_clause(ca | cb)
    return _minimal(out)


class Progression:
    """Lazy automaton of a formula: states are interned progressed formulas (ints).

    ``step(q, label)`` reads one letter (a set of true propositions); works for any label.
    State 0 is the initial state ``X φ`` (nothing read yet; the empty trace is rejected).
    """

    def __init__(self, formula: Formula | str):
        self.formula = parse(formula) if isinstance(formula, str) else formula
        self.atoms = atoms(self.formula)
        self._nnf = nnf(self.formula)
        self._ids: dict[DNF, int] = {}
        self.states: list[DNF] = []
        self._prog: dict[tuple[Formula, frozenset[str]], DNF] = {}
        self._delta: dict[tuple[int, frozenset[str]], int] = {}
        self.initial = self._intern(_norm_clause([(self._nnf, True)]))

    def _intern(self, dnf: DNF) -> int:
        q = self._ids.get(dnf)
        if q is None:
            q = len(self.states)
            self._ids[dnf] = q
            self.states.append(dnf)
        return q

    def project(self, label: Iterable[str]) -> frozenset[str]:
        """The part of a label the formula can see."""
        return frozenset(label) & self.atoms

    def _progress(self, f: Formula, letter: frozenset[str]) -> DNF:
        key = (f, letter)
        hit = self._prog.get(key)
        if hit is not None:
            return hit
        if isinstance(f, Const):
            r = _TRUE_DNF if f.value else _FALSE_DNF
        elif isinstance(f, Prop):
            r = _TRUE_DNF if f.name in letter else _FALSE_DNF
        elif isinstance(f, Not):
            assert isinstance(f.arg, Prop), "formula must be in negation normal form"
            r = _FALSE_DNF if f.arg.name in letter else _TRUE_DNF
        elif isinstance(f, And):
            r = _TRUE_DNF
            for a in f.args:
                r = _product(r, self._progress(a, letter))
                if not r:
                    break
        elif isinstance(f, Or):
            out: set[Clause] = set()
            for a in f.args:
                out |= self._progress(a, letter)
            r = _minimal(out)
        elif isinstance(f, Next):
            r = _norm_clause([(f.arg, True)])
        elif isinstance(f, WeakNext):
            r = _norm_clause([(f.arg, False)])
        elif isinstance(f, Until):
            keep = _product(self._progress(f.left, letter), _norm_clause([(f, True)]))
            r = _minimal(self._progress(f.right, letter) | keep)
        else:
            assert isinstance(f, Release)
            alt = _minimal(self._progress(f.left, letter) | _norm_clause([(f, False)]))
            r = _product(self._progress(f.right, letter), alt)
        self._prog[key] = r
        return r

    def step(self, q: int, label: Iterable[str]) -> int:
        """Read one letter from state ``q``."""
        letter = self.project(label)
        key = (q, letter)
        hit = self._delta.get(key)
        if hit is not None:
            return hit
        out: set[Clause] = set()
        for clause in self.states[q]:
            if (FALSE, False) in clause:
                continue  # this clause required the trace to end
            part = _TRUE_DNF
            for f, _strong in clause:
                part = _product(part, self._progress(f, letter))
                if not part:
                    break
            out |= part
        nq = self._intern(_minimal(out))
        self._delta[key] = nq
        return nq

    def is_accepting(self, q: int) -> bool:
        """True if the trace may end here: some clause has no strong obligation."""
        return any(not any(s for _f, s in clause) for clause in self.states[q])

    def accepts(self, word: Sequence[Iterable[str]]) -> bool:
        q = self.initial
        for letter in word:
            q = self.step(q, letter)
        return self.is_accepting(q)


class Automaton(automaton.Automaton):
    """The product's exploration and minimisation over the reference progression."""

    progression = Progression


def shortest_path(
    start,
    successors: Callable,
    is_goal: Callable,
    *,
    max_states: int | None = None,
    what: str = "search",
):
    """The cheapest path from `start` to a state where `is_goal` holds, as the steps
    after `start`, and the number of states expanded; ``(None, expanded)`` when no goal
    is reachable. `successors(state)` yields ``(next state, action, weight >= 0)``.
    Raises SolverLimitError (naming `what`) after `max_states` expansions."""
    dist: dict = {start: 0.0}
    parent: dict = {}
    done: set = set()
    tie = itertools.count()
    heap: list = [(0.0, next(tie), start)]
    while heap:
        d, _, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        if is_goal(node):
            path: list = []
            cur = node
            while cur != start:
                prev, action, w = parent[cur]
                path.append((cur, action, w))
                cur = prev
            path.reverse()
            return path, len(done)
        if max_states is not None and len(done) >= max_states:
            raise SolverLimitError(
                f"{what} stopped after {len(done)} states (max_states={max_states})"
            )
        for nxt, action, w in successors(node):
            nd = d + w
            if nxt not in done and nd < dist.get(nxt, float("inf")):
                dist[nxt] = nd
                parent[nxt] = (node, action, w)
                heapq.heappush(heap, (nd, next(tie), nxt))
    return None, len(done)
