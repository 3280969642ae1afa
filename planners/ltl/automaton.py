"""LTL to automaton by formula progression over finite traces (LTLf), seed 003 §II-A.

No LTL translator installs here (Spot and ltl2ba are not packaged for this Python;
ltlf2dfa needs the MONA binary), so states are progressed formulas: a state is a
disjunction of clauses, each clause a set of obligations ``(ψ, strong)`` on the next
position (``strong``: ``X ψ``, a next position must exist; weak: ``!X!ψ``). Clauses
are normalised (conjunctions split, disjunctions distributed, subsumed clauses dropped),
which keeps the state set finite. `Progression` builds states lazily for any label;
`Automaton` is the explicit, minimised DFA over a fixed alphabet that the planners use.
The DFA is a special case of the paper's NFA: ``δ_Q(q, a)`` has exactly one element.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Protocol

from teamtree.broker import SpecificationError
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

__all__ = ["AUTOMATA", "Automaton", "AutomatonCache", "Progression", "StepAutomaton"]

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


def _norm_clause(obligations: Iterable[Obligation], norm: _Normaliser) -> DNF:
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
                out |= norm.clause(frozenset([*rest, (alt, strong)]))
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


class _Normaliser:
    """Clause normalisation and DNF products, memoised.

    Both are pure functions of sets (a clause is a conjunction, so the order and
    repetition of its obligations do not matter), and the construction asks for the
    same few hundred inputs tens of thousands of times: every state and letter
    multiplies the same obligations' progressions.
    """

    __slots__ = ("_clauses", "_products")

    def __init__(self) -> None:
        self._clauses: dict[Clause, DNF] = {}
        self._products: dict[tuple[DNF, DNF], DNF] = {}

    def clause(self, obligations: Clause) -> DNF:
        hit = self._clauses.get(obligations)
        if hit is None:
            hit = _norm_clause(obligations, self)
            self._clauses[obligations] = hit
        return hit

    def one(self, f: Formula, strong: bool) -> DNF:
        return self.clause(frozenset(((f, strong),)))

    def product(self, a: DNF, b: DNF) -> DNF:
        """The conjunction of two DNFs, normalised."""
        if not a or not b:
            return _FALSE_DNF
        key = (a, b)
        hit = self._products.get(key)
        if hit is None:
            out: set[Clause] = set()
            for ca in a:
                for cb in b:
                    out |= self.clause(ca | cb)
            hit = _minimal(out)
            self._products[key] = hit
        return hit


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
        self._norm = _Normaliser()
        self._clause_step: dict[tuple[Clause, frozenset[str]], DNF] = {}
        self.initial = self._intern(self._norm.one(self._nnf, True))

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
                r = self._norm.product(r, self._progress(a, letter))
                if not r:
                    break
        elif isinstance(f, Or):
            out: set[Clause] = set()
            for a in f.args:
                out |= self._progress(a, letter)
            r = _minimal(out)
        elif isinstance(f, Next):
            r = self._norm.one(f.arg, True)
        elif isinstance(f, WeakNext):
            r = self._norm.one(f.arg, False)
        elif isinstance(f, Until):
            keep = self._norm.product(self._progress(f.left, letter), self._norm.one(f, True))
            r = _minimal(self._progress(f.right, letter) | keep)
        else:
            assert isinstance(f, Release)
            alt = _minimal(self._progress(f.left, letter) | self._norm.one(f, False))
            r = self._norm.product(self._progress(f.right, letter), alt)
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
            out |= self._step_clause(clause, letter)
        nq = self._intern(_minimal(out))
        self._delta[key] = nq
        return nq

    def _step_clause(self, clause: Clause, letter: frozenset[str]) -> DNF:
        """One clause read one letter: the product of its obligations' progressions.
        Memoised: states share most of their clauses."""
        key = (clause, letter)
        hit = self._clause_step.get(key)
        if hit is not None:
            return hit
        part = _FALSE_DNF
        if (FALSE, False) not in clause:  # else this clause required the trace to end
            part = _TRUE_DNF
            for f, _strong in clause:
                part = self._norm.product(part, self._progress(f, letter))
                if not part:
                    break
        self._clause_step[key] = part
        return part

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
    not in the alphabet raises SpecificationError. Read-only once built (its tables are
    tuples), so missions of the same specification can share one (`AutomatonCache`).
    """

    progression: type[Progression] = Progression
    """The lazy construction whose states are explored (the tests swap in a reference)."""

    def __init__(
        self,
        formula: Formula | str,
        alphabet: Iterable[Iterable[str]] | None = None,
        *,
        minimize: bool = True,
    ):
        prog = self.progression(formula)
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
        self.letters: tuple[frozenset[str], ...] = tuple(
            sorted(letters, key=lambda s: (len(s), sorted(s)))
        )
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
        self.delta: tuple[tuple[int, ...], ...] = tuple(
            tuple(renum[block[nq]] for nq in table[q]) for q in rep
        )
        self.initial = 0
        self.accepting = frozenset(renum[block[q]] for q in accepting)
        self.n_states = len(rep)
        self._dnf = tuple(prog.states[q] for q in rep)
        members: list[list[DNF]] = [[] for _ in rep]
        for q in order:
            members[renum[block[q]]].append(prog.states[q])
        self.members: tuple[tuple[DNF, ...], ...] = tuple(tuple(m) for m in members)
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


class AutomatonCache:
    """The automata of the last ``size`` (formula, alphabet) pairs, least recently used
    dropped first: every mission of the same specification over the same labels shares
    one automaton instead of rebuilding it.

    The key is the parsed formula (texts that parse to the same tree share), the
    alphabet projected on the formula's propositions, and ``minimize``. Errors are not
    kept: a bad formula raises on every call. ``size=0`` keeps nothing (always builds).
    Safe to share between threads (two racing first calls may both build).
    """

    def __init__(self, size: int = 32):
        if size < 0:
            raise SpecificationError(f"cache size must be >= 0, not {size}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[tuple, Automaton] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        formula: Formula | str,
        alphabet: Iterable[Iterable[str]] | None = None,
        *,
        minimize: bool = True,
    ) -> Automaton:
        """The automaton of ``formula`` over ``alphabet``, built on the first call."""
        f = parse(formula) if isinstance(formula, str) else formula
        letters = None
        if alphabet is not None:
            seen = atoms(f)
            letters = frozenset(frozenset(label) & seen for label in alphabet)
        key = (f, letters, minimize)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return hit
            self.misses += 1
        built = Automaton(f, letters, minimize=minimize)
        if self.size:
            with self._lock:
                self._items[key] = built
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return built

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)


AUTOMATA = AutomatonCache()
"""The process's automata, used by `Mission` unless it is given another cache."""


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
