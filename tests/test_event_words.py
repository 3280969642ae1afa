"""The monitor's and the team page's "now" column says in words what a member did:
no raw event kind (``ltl.done``, ``behaviour.started``) reaches the operator."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers import MonitorState, event_words
from teamtree.broker import Envelope, HlcStamp
from teamtree.broker.topics import parse

TEAM = "t1"


def _feed(state: MonitorState, sender: str, channel: str, kind: str, n: int) -> None:
    env = Envelope(kind, sender, n, 1000 + n, HlcStamp(1000 + n, 0, sender), {"seq": n})
    state.feed(env, parse(f"teamtree/v1/{TEAM}/{sender}/{channel}"))


def test_the_now_column_reads_in_words() -> None:
    state = MonitorState(TEAM)
    _feed(state, "DR", "ltl.status", "ltl.done", 1)
    _feed(state, "cobot", "events", "kitting.done", 2)
    _feed(state, "pr2-driver", "events", "behaviour.started", 3)
    assert state.row("DR").status == "finished its LTL task"
    assert state.row("cobot").status == "finished the kit"
    assert state.row("pr2-driver").status == "started a behaviour"


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[a-z_]{1,12}(\.[a-z_]{1,12}){0,3}", fullmatch=True))
def test_no_kind_is_shown_raw(kind: str) -> None:
    words = event_words(kind)
    assert words and "." not in words and "_" not in words, (kind, words)
