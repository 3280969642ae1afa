"""The automaton construction and the Dijkstra search as they were before their speed-ups: a slow reference that
the property tests compare the product's construction against (same states, same
transitions, same language). Formula progression over finite traces; see
``teamtree.planners.ltl.automaton`` for the method. Not imported by the product.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Protocol

from teamtree.broker import SolverLimitError, SpecificationError
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


class StepAutomaton(Protocol):
    """What the trace checker needs from an automaton."""

    initial: Hashable

    def step(self, q: Hashable, label: Iterable[str]) -> Hashable: ...

    def is_accepting(self, q: Hashable) -> bool: ...


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

    def describe(self, q: int) -> str:
        """The obligation left in state ``q``, as formula text."""
        return _describe(self.states[q])


def _settled(o: Obligation, tasks: frozenset[Obligation]) -> bool:
    f, strong = o
    if o in tasks or f == TRUE:
        return True
    if strong:
        return False
    return isinstance(f, Prop | Const) or (isinstance(f, Not) and isinstance(f.arg, Prop))


def _describe(dnf: DNF) -> str:
    if not dnf:
        return "false"
    parts = []
    for clause in sorted(dnf, key=lambda c: sorted(str(f) for f, _ in c)):
        if not clause:
            return "true"
        items = []
        for f, strong in sorted(clause, key=lambda o: str(o[0])):
            items.append(str(Next(f)) if strong else str(WeakNext(f)))
        parts.append(" && ".join(items))
    return " || ".join(f"({p})" if len(parts) > 1 else p for p in parts)


class Automaton:
    """Explicit, minimised DFA of a formula over a fixed alphabet (the paper's NFA Q).

    States are ``0..n-1``; ``initial`` reads nothing yet; ``delta[q][i]`` is the
    successor on ``letters[i]``; ``sink`` is the rejecting trap state (or None).
    Labels are projected on the formula's propositions; a label whose projection is
    not in the alphabet raises SpecificationError.
    """

    def __init__(
        self,
        formula: Formula | str,
        alphabet: Iterable[Iterable[str]] | None = None,
        *,
        minimize: bool = True,
    ):
        prog = Progression(formula)
        self.formula = prog.formula
        self.atoms = prog.atoms
        if alphabet is None:
            if len(self.atoms) > 12:
                raise SpecificationError(
                    f"the formula has {len(self.atoms)} propositions; give the alphabet "
                    "(the labels the robots can produce) instead of all subsets"
                )
            names = sorted(self.atoms)
            sizes = range(len(names) + 1)
            letters = {frozenset(c) for r in sizes for c in itertools.combinations(names, r)}
        else:
            letters = {prog.project(label) for label in alphabet}
        self.letters: list[frozenset[str]] = sorted(letters, key=lambda s: (len(s), sorted(s)))
        self.letter_index = {a: i for i, a in enumerate(self.letters)}

        # explore the progression states reachable over the alphabet
        order = [prog.initial]
        seen = {prog.initial}
        table: dict[int, list[int]] = {}
        for q in order:
            row = [prog.step(q, a) for a in self.letters]
            table[q] = row
            for nq in row:
                if nq not in seen:
                    seen.add(nq)
                    order.append(nq)
        accepting = {q for q in order if prog.is_accepting(q)}

        block = {q: 0 for q in order}
        if minimize:
            block = _moore(order, table, accepting)
        # renumber blocks in exploration order so the initial state is 0
        renum: dict[int, int] = {}
        rep: list[int] = []
        for q in order:
            b = block[q]
            if b not in renum:
                renum[b] = len(rep)
                rep.append(q)
        self.delta: list[list[int]] = [[renum[block[nq]] for nq in table[q]] for q in rep]
        self.initial = 0
        self.accepting = frozenset(renum[block[q]] for q in accepting)
        self.n_states = len(rep)
        self._dnf = [prog.states[q] for q in rep]
        self.members: list[list[DNF]] = [[] for _ in rep]
        for q in order:
            self.members[renum[block[q]]].append(prog.states[q])
        self.unminimized_states = len(order)
        self.sink: int | None = None
        for q in range(self.n_states):
            if q not in self.accepting and all(nq == q for nq in self.delta[q]):
                self.sink = q
                break

    def letter(self, label: Iterable[str]) -> int:
        """Index of the letter a label reads as."""
        letter = frozenset(label) & self.atoms
        i = self.letter_index.get(letter)
        if i is None:
            raise SpecificationError(
                f"label {sorted(letter)} is not in the automaton's alphabet; "
                "build the automaton with every label the robots can produce"
            )
        return i

    def step(self, q: int, label: Iterable[str]) -> int:
        return self.delta[q][self.letter(label)]

    def run(self, q: int, word: Iterable[Iterable[str]]) -> int:
        for label in word:
            q = self.delta[q][self.letter(label)]
        return q

    def is_accepting(self, q: int) -> bool:
        return q in self.accepting

    def accepts(self, word: Sequence[Iterable[str]]) -> bool:
        return self.run(self.initial, word) in self.accepting

    def describe(self, q: int) -> str:
        """What is left to do in state ``q``, as formula text (X: a next step is needed)."""
        return _describe(self._dnf[q])

    def pending(self, q: int) -> list[str]:
        """The unfinished tasks in state ``q`` (strong obligations of its smallest clause)."""
        if not self._dnf[q]:
            return ["(unsatisfiable)"]
        clause = min(self._dnf[q], key=lambda c: (len(c), sorted(str(f) for f, _ in c)))
        return sorted(str(f) for f, strong in clause if strong and f != TRUE)

    def obligations(self, q: int) -> frozenset[Obligation]:
        """Every obligation in the clauses of ``q`` (over all merged progression states)."""
        return frozenset(o for dnf in self.members[q] for clause in dnf for o in clause)

    def task_state(self, q: int, tasks: frozenset[Obligation]) -> bool:
        """True if some progression state merged into ``q`` has, in every clause, only
        obligations from ``tasks`` or one-step propositional ones ``!X!p`` (nothing
        half done)."""
        return any(
            all(all(_settled(o, tasks) for o in clause) for clause in dnf)
            for dnf in self.members[q]
        )

    def __repr__(self) -> str:
        return (
            f"Automaton({len(self.letters)} letters, {self.n_states} states, "
            f"{len(self.accepting)} accepting, from {self.unminimized_states})"
        )


def _moore(order: list[int], table: dict[int, list[int]], accepting: set[int]) -> dict[int, int]:
    """Moore partition refinement: block id per state."""
    block = {q: (1 if q in accepting else 0) for q in order}
    count = len(set(block.values()))
    while True:
        sigs: dict[tuple[int, ...], int] = {}
        new: dict[int, int] = {}
        for q in order:
            sig = (block[q], *(block[nq] for nq in table[q]))
            new[q] = sigs.setdefault(sig, len(sigs))
        if len(sigs) == count:
            return new
        block, count = new, len(sigs)


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
