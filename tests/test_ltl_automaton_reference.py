"""The automaton construction against the slow reference (tests/ltl_reference.py,
the same exploration over the progression as it was):
the same states in the same order, the same transitions, acceptance and sink, the
same obligations per state, and the same verdict on random words. Seeds are fixed
and printed on failure with the reproduction blob."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st

from teamtree.planners.ltl import Automaton, Progression, replicated_team
from teamtree.planners.ltl.syntax import Formula
from tests import ltl_reference as ref
from tests.ltl_strategies import ltl_formulas

AP = ("a", "b", "c", "d")

formulas = ltl_formulas(AP, max_leaves=10, wide=True)
letters = st.frozensets(st.sampled_from(AP))
alphabets = st.none() | st.lists(letters, min_size=1, max_size=6)

PROPERTY = settings(
    max_examples=250,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _same_automaton(new: Automaton, old: ref.Automaton) -> None:
    assert new.letters == old.letters
    assert new.n_states == old.n_states
    assert new.unminimized_states == old.unminimized_states
    assert new.delta == old.delta
    assert new.accepting == old.accepting
    assert new.sink == old.sink
    assert new.members == old.members
    for q in range(new.n_states):
        assert new.describe(q) == old.describe(q)
        assert new.obligations(q) == old.obligations(q)
        tasks = new.obligations(q)
        assert [new.task_state(p, tasks) for p in range(new.n_states)] == [
            old.task_state(p, tasks) for p in range(old.n_states)
        ]


@seed(4401)
@PROPERTY
@given(formulas, alphabets, st.booleans())
def test_automaton_equals_reference(f: Formula, alphabet, minimize: bool):
    note(f"formula: {f}; alphabet: {alphabet}; minimize: {minimize}")
    _same_automaton(
        Automaton(f, alphabet, minimize=minimize), ref.Automaton(f, alphabet, minimize=minimize)
    )


@seed(4402)
@PROPERTY
@given(formulas, st.lists(st.lists(letters, max_size=8), min_size=1, max_size=8))
def test_progression_equals_reference(f: Formula, words):
    note(f"formula: {f}")
    new, old = Progression(f), ref.Progression(f)
    for w in words:
        assert new.accepts(w) == old.accepts(w), f"{f} on {[sorted(x) for x in w]}"
    assert new.states == old.states  # the same states, interned in the same order


def test_hospital_automaton_equals_reference():
    formula, robots = replicated_team(3)
    alphabet = {lab for r in robots for lab in r.ts.labels.values()}
    _same_automaton(Automaton(formula, alphabet), ref.Automaton(formula, alphabet))


def test_all_short_words_agree_on_the_hospital():
    formula, robots = replicated_team(3)
    alphabet = sorted(
        {lab for r in robots for lab in r.ts.labels.values()}, key=lambda s: sorted(s)
    )
    new, old = Automaton(formula, alphabet), ref.Progression(formula)
    for word in itertools.product(alphabet[:6], repeat=3):
        assert new.accepts(word) == old.accepts(word)
