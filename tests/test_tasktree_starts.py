"""Repeated starts (planners/tasktree/starts.py): a takeover after a release is told
apart from a start while another robot holds the node or after it was done.

The property test draws histories of a node that one robot at a time holds (Hypothesis
prints the falsifying example), shuffles them, and checks none reads as unsafe; then
adds a start by another robot while one holds it, which must read as held.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.planners.tasktree import repeated_starts


def at(ms: int, agent: str, counter: int = 0) -> tuple[int, int, str]:
    """An HLC stamp."""
    return (ms, counter, agent)


def test_a_takeover_after_a_release_is_not_a_double_start() -> None:
    starts = repeated_starts(
        {
            "n1": [("a", "working", at(10, "a")), ("a", "inactive", at(20, "a")),
                   ("b", "working", at(20, "b", 1))],
            "n2": [("a", "working", at(10, "a")), ("b", "working", at(15, "b")),
                   ("a", "done", at(30, "a"))],
            "n3": [("a", "working", at(10, "a")), ("a", "done", at(20, "a")),
                   ("b", "working", at(25, "b"))],
            "n4": [("a", "working", at(10, "a")), ("a", "done", at(20, "a"))],
            "n5": [("b", "working", at(40, "b")), ("a", "inactive", at(30, "a")),
                   ("a", "working", at(10, "a"))],
        }
    )  # fmt: skip
    assert set(starts.taken_over) == {"n1", "n5"}
    assert set(starts.held) == {"n2"}
    assert set(starts.after_done) == {"n3"}
    assert set(starts.unsafe) == {"n2", "n3"}
    assert [e[2][0] for e in starts.taken_over["n5"]] == [10, 30, 40]  # in stamp order


def test_a_robot_that_starts_again_what_it_holds_is_no_double_start() -> None:
    """A robot that re-claims its own node after a reconnect publishes ``working``
    again without a release in between."""
    starts = repeated_starts({"n": [("a", "working", at(1, "a")), ("a", "working", at(9, "a"))]})
    assert set(starts.taken_over) == {"n"} and not starts.unsafe


@st.composite
def one_holder_at_a_time(draw: st.DrawFn) -> list[tuple[str, str, tuple[int, int, str]]]:
    """A node's transitions when the peer rule works: a robot starts it only while no
    one holds it and it is not done (so after it heard the release: a later stamp);
    the holder releases it or finishes it."""
    robots = ["a", "b", "c"]
    ms, counter, holder, out = 0, 0, None, []
    for _ in range(draw(st.integers(2, 12))):
        step = draw(st.integers(0, 5))  # 0: the next transition in the same millisecond
        ms, counter = ms + step, (counter + 1 if step == 0 else 0)
        if holder is None:
            holder = draw(st.sampled_from(robots))
            out.append((holder, "working", at(ms, holder, counter)))
        else:
            finish = draw(st.booleans()) and draw(st.booleans())
            out.append((holder, "done" if finish else "inactive", at(ms, holder, counter)))
            holder = None
            if finish:
                break
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(history=one_holder_at_a_time(), seed=st.integers(0, 2**32 - 1))
def test_histories_of_one_holder_at_a_time_read_safe_and_a_second_holder_does_not(
    history: list[tuple[str, str, tuple[int, int, str]]], seed: int
) -> None:
    shuffled = history[:]
    random.Random(seed).shuffle(shuffled)
    assert not repeated_starts({"n": shuffled}).unsafe, (seed, history)
    ms, counter, _agent = history[0][2]  # robot z starts it right after the first start
    intruder = ("z", "working", (ms, counter, "z"))
    assert "n" in repeated_starts({"n": [*shuffled, intruder]}).held, (seed, history)
