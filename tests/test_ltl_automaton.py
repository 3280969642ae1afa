"""Translation property tests: automaton acceptance equals direct LTLf evaluation."""

import random

import pytest
from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st

from teamtree.broker import SpecificationError
from teamtree.planners.ltl import Automaton, Progression, evaluate, parse
from teamtree.planners.ltl.syntax import Formula
from tests.ltl_strategies import ltl_formulas

AP = ("a", "b", "c")

formulas = ltl_formulas(AP, max_leaves=7)
letters = st.frozensets(st.sampled_from(AP))
traces = st.lists(letters, min_size=0, max_size=7)

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@seed(3003)  # printed on failure with the blob; change to explore further
@PROPERTY
@given(formulas, st.lists(traces, min_size=1, max_size=6))
def test_progression_matches_direct_evaluation(f: Formula, words):
    note(f"formula: {f}")
    prog = Progression(f)
    for w in words:
        assert prog.accepts(w) == evaluate(f, w), f"{f} on {[sorted(x) for x in w]}"


@seed(3004)
@PROPERTY
@given(formulas, st.lists(traces, min_size=1, max_size=6))
def test_minimised_automaton_matches_direct_evaluation(f: Formula, words):
    note(f"formula: {f}")
    aut = Automaton(f)  # every subset of the propositions as alphabet
    for w in words:
        assert aut.accepts(w) == evaluate(f, w), f"{f} on {[sorted(x) for x in w]}"


@seed(3005)
@PROPERTY
@given(formulas)
def test_printed_formula_parses_back_to_same_language(f: Formula):
    g = parse(str(f))
    rng = random.Random(str(f))
    for _ in range(20):
        w = [frozenset(x for x in AP if rng.random() < 0.5) for _ in range(rng.randint(1, 6))]
        assert evaluate(f, w) == evaluate(g, w)


def test_random_traces_on_hospital_formula():
    """Seeded random traces over the hospital labels (seed printed in the message)."""
    from teamtree.planners.ltl import FORMULAS

    rng_seed = 20240003
    rng = random.Random(rng_seed)
    regions = ["p3", "p4", "p6", "c1", "c6", "c7", "c3"]
    modes = ["standby", "loaded", "training"]
    labels = [frozenset((r, m)) for r in regions for m in modes]
    f = parse(FORMULAS["study2"])
    aut = Automaton(f, labels)
    agreed = 0
    for _ in range(400):
        w = [rng.choice(labels) for _ in range(rng.randint(1, 14))]
        assert aut.accepts(w) == evaluate(f, w), f"seed {rng_seed}: {[sorted(x) for x in w]}"
        agreed += 1
    # hand-made accepted word: deliver p3, p6 and the whole training chain
    good = [
        {"c3", "loaded"},
        {"p3", "loaded"},
        {"p3", "standby"},
        {"c3", "loaded"},
        {"p6", "loaded"},
        {"p6", "standby"},
        {"c7", "training"},
        {"c6", "training"},
        {"c7", "training"},
        {"c1", "training"},
        {"p4", "training"},
        {"p4", "standby"},
    ]
    assert evaluate(f, good) and aut.accepts(good)
    assert agreed == 400


def test_automaton_sizes_and_sink():
    aut = Automaton("<> a && [] !b")
    assert aut.sink is not None
    assert aut.step(aut.initial, {"b"}) == aut.sink
    assert not aut.is_accepting(aut.initial)  # the empty trace is rejected
    assert aut.describe(aut.sink) == "false"
    q = aut.step(aut.initial, {"a"})
    assert aut.is_accepting(q)


def test_unknown_label_is_a_specification_error():
    aut = Automaton("<> a && <> b", [{"a"}, set()])
    with pytest.raises(SpecificationError, match="alphabet"):
        aut.letter({"b"})
    assert aut.letter({"a", "zz"}) == aut.letter({"a"})  # unseen propositions are ignored


def test_too_many_propositions_need_an_alphabet():
    text = " && ".join(f"<> p{i}" for i in range(13))
    with pytest.raises(SpecificationError, match="give the alphabet"):
        Automaton(text)
