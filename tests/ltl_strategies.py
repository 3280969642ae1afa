"""Hypothesis strategies for LTL formulas, shared by the LTL property tests."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from teamtree.planners.ltl.syntax import (
    FALSE,
    TRUE,
    And,
    Formula,
    Next,
    Not,
    Or,
    Prop,
    Release,
    Until,
)


def ltl_formulas(
    props: Sequence[str], max_leaves: int, *, wide: bool = False
) -> st.SearchStrategy[Formula]:
    """Formula trees over ``props``, ``true`` and ``false`` with every operator;
    ``wide`` adds three-way conjunctions."""
    leaves = st.sampled_from([Prop(p) for p in props] + [TRUE, FALSE])

    def grow(kid: st.SearchStrategy[Formula]) -> st.SearchStrategy[Formula]:
        ands = [st.tuples(kid, kid).map(lambda t: And(t))]
        if wide:
            ands.append(st.tuples(kid, kid, kid).map(lambda t: And(t)))
        return st.one_of(
            kid.map(Not),
            kid.map(Next),
            *ands,
            st.tuples(kid, kid).map(lambda t: Or(t)),
            st.tuples(kid, kid).map(lambda t: Until(*t)),
            st.tuples(kid, kid).map(lambda t: Release(*t)),
            kid.map(lambda f: Until(TRUE, f)),
            kid.map(lambda f: Release(FALSE, f)),
        )

    return st.recursive(leaves, grow, max_leaves=max_leaves)
