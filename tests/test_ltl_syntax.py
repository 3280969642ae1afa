"""LTL parser, printer and direct evaluation (seed 003 §II-A)."""

import pytest

import teamtree.planners.ltl as ltl
from teamtree.broker import SpecificationError
from teamtree.planners.ltl import FORMULAS, LTLSyntaxError, evaluate, parse
from teamtree.planners.ltl.syntax import (
    FALSE,
    TRUE,
    And,
    Next,
    Not,
    Or,
    Prop,
    Release,
    Until,
    atoms,
    nnf,
)


def _isort_key(name: str) -> tuple[int, str]:
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def test_all_is_sorted_and_complete():
    assert ltl.__all__ == sorted(ltl.__all__, key=_isort_key)
    for name in ltl.__all__:
        assert hasattr(ltl, name)


a, b, c = Prop("a"), Prop("b"), Prop("c")


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a", a),
        ("true", TRUE),
        ("false", FALSE),
        ("!a", Not(a)),
        ("a && b || c", Or((And((a, b)), c))),
        ("a || b && c", Or((a, And((b, c))))),
        ("a -> b -> c", Or((Not(a), Or((Not(b), c))))),
        ("a U b U c", Until(a, Until(b, c))),
        ("a R b", Release(a, b)),
        ("<> a", Until(TRUE, a)),
        ("[] a", Release(FALSE, a)),
        ("X X a", Next(Next(a))),
        ("!X a && b", And((Not(Next(a)), b))),
        ("<>[] a", Until(TRUE, Release(FALSE, a))),
        ("(a || b) U c", Until(Or((a, b)), c)),
        ("a U b && c", And((Until(a, b), c))),
        ("  p_3x  ", Prop("p_3x")),
    ],
)
def test_parse_trees(text, tree):
    assert parse(text) == tree


def test_iff_expands_to_both_implications():
    assert parse("a <-> b") == And((Or((Not(a), b)), Or((a, Not(b)))))


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("", 0, "empty formula"),
        ("a &&", 4, "expected a proposition"),
        ("(a || b", 7, "')' to close '(' at position 0"),
        ("a b", 2, "expected an operator"),
        ("a & b", 2, "use '&&'"),
        ("a | b", 2, "use '||'"),
        ("a => b", 2, "unexpected character"),
        ("a && )", 5, "found ')'"),
        ("X", 1, "end of formula"),
        ("a $ b", 2, "unexpected character '$'"),
    ],
)
def test_syntax_errors_name_the_position(text, position, fragment):
    with pytest.raises(LTLSyntaxError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, SpecificationError)
    assert err.position == position
    assert fragment in str(err)
    assert f"at position {position}" in str(err)


def test_non_string_is_a_specification_error():
    with pytest.raises(SpecificationError):
        parse(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_scenario_formulas_parse_and_print_round_trip(name):
    f = parse(FORMULAS[name])
    assert parse(str(f)) == f
    assert {"p3", "p6", "standby", "loaded"} <= atoms(f)


def test_nnf_pushes_negations_to_propositions():
    f = nnf(parse("!(a U X b) && !<>c"))
    text = str(f)
    assert "!a" in text and "!c" in text
    assert "U" not in text  # !(a U b) became a release


def test_evaluate_finite_semantics():
    assert evaluate("<> a", [set(), {"a"}])
    assert not evaluate("<> a", [set(), set()])
    assert evaluate("[] a", [{"a"}, {"a"}])
    assert not evaluate("X a", [{"a"}])  # strong next needs a next position
    assert evaluate("!X !a", [{"a"}])  # weak next holds at the end
    assert evaluate("a U b", [{"a"}, {"a"}, {"b"}])
    assert not evaluate("a U b", [{"a"}, set(), {"b"}])
    assert evaluate("[]((!p && X p) -> l)", [{"l"}, {"p"}, {"p"}])
    assert not evaluate("[]((!p && X p) -> l)", [set(), {"p"}])
    assert not evaluate("true", [])  # LTLf traces are non-empty
