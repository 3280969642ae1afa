"""LTL syntax: formula trees, a parser for ``! && || -> <-> X U R <> []``, and
direct evaluation over finite traces (LTLf semantics, seed 003 §II-A).

Precedence, tightest first: unary ``! X <> []``; ``U`` and ``R`` (right-assoc);
``&&``; ``||``; ``->`` (right-assoc); ``<->`` (right-assoc).
``X``, ``U`` and ``R`` are operators, so they cannot name propositions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from teamtree.broker import SpecificationError

__all__ = [
    "FALSE",
    "TRUE",
    "And",
    "Const",
    "Formula",
    "LTLSyntaxError",
    "Next",
    "Not",
    "Or",
    "Prop",
    "Release",
    "Until",
    "WeakNext",
    "atoms",
    "evaluate",
    "nnf",
    "parse",
]


class LTLSyntaxError(SpecificationError):
    """A formula does not parse; ``position`` is the 0-based character offset in ``text``."""

    def __init__(self, reason: str, text: str, position: int):
        self.reason = reason
        self.text = text
        self.position = position
        caret = " " * position + "^"
        super().__init__(f"{reason} at position {position}\n  {text}\n  {caret}")


class Formula:
    """Base of the formula tree; nodes are immutable and compare structurally.

    The hash is computed once per node and kept: the automaton construction hashes
    progressed formulas in sets and dicts millions of times, and a recomputed hash
    walks the whole subtree. Equality checks identity, then the kept hashes, and only
    then the fields.
    """

    __slots__ = ("_hash",)

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = hash((type(self).__name__, *self._fields()))
            object.__setattr__(self, "_hash", h)
            return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        if hash(self) != hash(other):
            return False
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__match_args__)  # type: ignore[attr-defined]

    def __and__(self, other: Formula) -> Formula:
        return And((self, other))

    def __or__(self, other: Formula) -> Formula:
        return Or((self, other))

    def __invert__(self) -> Formula:
        return Not(self)


@dataclass(frozen=True, slots=True, eq=False)
class Const(Formula):
    """``true`` or ``false``."""

    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


TRUE = Const(True)
FALSE = Const(False)


@dataclass(frozen=True, slots=True, eq=False)
class Prop(Formula):
    """An atomic proposition: a region name or an operating state."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True, eq=False)
class Not(Formula):
    arg: Formula

    def __str__(self) -> str:
        return f"!{_wrap(self.arg)}"


@dataclass(frozen=True, slots=True, eq=False)
class And(Formula):
    args: tuple[Formula, ...]

    def __str__(self) -> str:
        return " && ".join(_wrap(a) for a in self.args)


@dataclass(frozen=True, slots=True, eq=False)
class Or(Formula):
    args: tuple[Formula, ...]

    def __str__(self) -> str:
        return " || ".join(_wrap(a) for a in self.args)


@dataclass(frozen=True, slots=True, eq=False)
class Next(Formula):
    """Strong next: a next position exists and satisfies ``arg``."""

    arg: Formula

    def __str__(self) -> str:
        return f"X {_wrap(self.arg)}"


@dataclass(frozen=True, slots=True, eq=False)
class WeakNext(Formula):
    """Weak next (``!X!``): there is no next position, or it satisfies ``arg``. Internal."""

    arg: Formula

    def __str__(self) -> str:
        if isinstance(self.arg, Not):
            return f"!X {_wrap(self.arg.arg)}"
        return f"!X !{_wrap(self.arg)}"


@dataclass(frozen=True, slots=True, eq=False)
class Until(Formula):
    left: Formula
    right: Formula

    def __str__(self) -> str:
        if self.left == TRUE:
            return f"<> {_wrap(self.right)}"
        return f"{_wrap(self.left)} U {_wrap(self.right)}"


@dataclass(frozen=True, slots=True, eq=False)
class Release(Formula):
    left: Formula
    right: Formula

    def __str__(self) -> str:
        if self.left == FALSE:
            return f"[] {_wrap(self.right)}"
        return f"{_wrap(self.left)} R {_wrap(self.right)}"


def _wrap(f: Formula) -> str:
    if isinstance(f, Const | Prop | Not | Next | WeakNext):
        return str(f)
    if (isinstance(f, Until) and f.left == TRUE) or (isinstance(f, Release) and f.left == FALSE):
        return str(f)
    return f"({f})"


# ---------------------------------------------------------------- parser

_TOKEN = re.compile(
    r"\s*(?:(?P<op><->|->|&&|\|\||<>|\[\]|!|\(|\))|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<bad>\S))"
)
_KEYWORDS = {"X", "U", "R", "true", "false"}


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:  # only trailing whitespace left
            break
        pos = m.end()
        if m.group("op"):
            tokens.append(("op", m.group("op"), m.start("op")))
        elif m.group("id"):
            word = m.group("id")
            kind = "op" if word in _KEYWORDS else "id"
            tokens.append((kind, word, m.start("id")))
        else:
            bad = m.group("bad")
            hint = ""
            if bad in "&|":
                hint = f" (use '{bad * 2}')"
            elif bad in "<[-":
                hint = " (operators are <> [] -> <->)"
            raise LTLSyntaxError(f"unexpected character {bad!r}{hint}", text, m.start("bad"))
    tokens.append(("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def fail(self, what: str) -> LTLSyntaxError:
        kind, value, pos = self.peek()
        found = "end of formula" if kind == "end" else repr(value)
        return LTLSyntaxError(f"expected {what}, found {found}", self.text, pos)

    def parse(self) -> Formula:
        if self.peek()[0] == "end":
            raise LTLSyntaxError("empty formula", self.text, 0)
        f = self.iff()
        if self.peek()[0] != "end":
            raise self.fail("an operator or the end of the formula")
        return f

    def iff(self) -> Formula:
        left = self.implies()
        if self.peek()[1] == "<->":
            self.take()
            right = self.iff()
            return And((Or((Not(left), right)), Or((left, Not(right)))))
        return left

    def implies(self) -> Formula:
        left = self.disj()
        if self.peek()[1] == "->":
            self.take()
            right = self.implies()
            return Or((Not(left), right))
        return left

    def disj(self) -> Formula:
        args = [self.conj()]
        while self.peek()[1] == "||":
            self.take()
            args.append(self.conj())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def conj(self) -> Formula:
        args = [self.binary()]
        while self.peek()[1] == "&&":
            self.take()
            args.append(self.binary())
        return args[0] if len(args) == 1 else And(tuple(args))

    def binary(self) -> Formula:
        left = self.unary()
        op = self.peek()[1]
        if op in ("U", "R") and self.peek()[0] == "op":
            self.take()
            right = self.binary()
            return Until(left, right) if op == "U" else Release(left, right)
        return left

    def unary(self) -> Formula:
        kind, value, pos = self.peek()
        if kind == "op" and value in ("!", "X", "<>", "[]"):
            self.take()
            arg = self.unary()
            if value == "!":
                return Not(arg)
            if value == "X":
                return Next(arg)
            if value == "<>":
                return Until(TRUE, arg)
            return Release(FALSE, arg)
        if kind == "op" and value == "(":
            self.take()
            inner = self.iff()
            if self.peek()[1] != ")":
                raise self.fail(f"')' to close '(' at position {pos}")
            self.take()
            return inner
        if kind == "op" and value in ("true", "false"):
            self.take()
            return TRUE if value == "true" else FALSE
        if kind == "id":
            self.take()
            return Prop(value)
        raise self.fail("a proposition, 'true', 'false', '!', 'X', '<>', '[]' or '('")


def parse(text: str) -> Formula:
    """Parse an LTL formula; raises `LTLSyntaxError` (a SpecificationError) naming the position."""
    if not isinstance(text, str):
        raise SpecificationError(f"an LTL formula must be a string, not {type(text).__name__}")
    return _Parser(text).parse()


# ---------------------------------------------------------------- helpers


def atoms(f: Formula) -> frozenset[str]:
    """The atomic propositions occurring in ``f``."""
    if isinstance(f, Prop):
        return frozenset((f.name,))
    if isinstance(f, Const):
        return frozenset()
    if isinstance(f, Not | Next | WeakNext):
        return atoms(f.arg)
    if isinstance(f, And | Or):
        out: frozenset[str] = frozenset()
        for a in f.args:
            out |= atoms(a)
        return out
    assert isinstance(f, Until | Release)
    return atoms(f.left) | atoms(f.right)


@lru_cache(maxsize=65536)
def nnf(f: Formula, negate: bool = False) -> Formula:
    """Negation normal form (negations only on propositions), with ``!X`` -> weak next."""
    if isinstance(f, Const):
        return Const(f.value != negate)
    if isinstance(f, Prop):
        return Not(f) if negate else f
    if isinstance(f, Not):
        return nnf(f.arg, not negate)
    if isinstance(f, And | Or):
        args = tuple(nnf(a, negate) for a in f.args)
        flip = isinstance(f, And) == negate
        return Or(args) if flip else And(args)
    if isinstance(f, Next):
        return WeakNext(nnf(f.arg, True)) if negate else Next(nnf(f.arg))
    if isinstance(f, WeakNext):
        return Next(nnf(f.arg, True)) if negate else WeakNext(nnf(f.arg))
    if isinstance(f, Until):
        if negate:
            return Release(nnf(f.left, True), nnf(f.right, True))
        return Until(nnf(f.left), nnf(f.right))
    assert isinstance(f, Release)
    if negate:
        return Until(nnf(f.left, True), nnf(f.right, True))
    return Release(nnf(f.left), nnf(f.right))


def evaluate(f: Formula | str, trace: Sequence[Iterable[str]]) -> bool:
    """Evaluate ``f`` on a finite trace by the LTLf definitions (no automaton involved).

    The trace is a sequence of sets of true propositions. The empty trace satisfies no
    formula (LTLf traces are non-empty). ``X`` is strong (needs a next position).
    """
    formula = parse(f) if isinstance(f, str) else f
    word = [frozenset(letter) for letter in trace]
    n = len(word)
    if n == 0:
        return False
    memo: dict[tuple[int, Formula], bool] = {}

    def sat(g: Formula, i: int) -> bool:
        key = (i, g)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if isinstance(g, Const):
            r = g.value
        elif isinstance(g, Prop):
            r = g.name in word[i]
        elif isinstance(g, Not):
            r = not sat(g.arg, i)
        elif isinstance(g, And):
            r = all(sat(a, i) for a in g.args)
        elif isinstance(g, Or):
            r = any(sat(a, i) for a in g.args)
        elif isinstance(g, Next):
            r = i + 1 < n and sat(g.arg, i + 1)
        elif isinstance(g, WeakNext):
            r = i + 1 >= n or sat(g.arg, i + 1)
        elif isinstance(g, Until):
            r = False
            for j in range(i, n):
                if sat(g.right, j):
                    r = True
                    break
                if not sat(g.left, j):
                    break
        else:
            assert isinstance(g, Release)
            r = True
            for j in range(i, n):
                if not sat(g.right, j):
                    r = False
                    break
                if sat(g.left, j):
                    break
        memo[key] = r
        return r

    return sat(formula, 0)
