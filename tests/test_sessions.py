"""The acceptance rule for presence, factsheets and retained state (sessions.py): state of
another mission and state of an older session than one believed are refused, whatever
order they come in. Hypothesis prints the falsifying example (and its seed with
``--hypothesis-seed``); the interleaving is in every assertion message."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.sessions import (
    SessionBook,
    Verdict,
    judge,
    new_session_id,
    session_start,
    stale,
)
from teamtree.agents.runtime.team_view import Presence, RefusedState, TeamView

starts = st.integers(1, 2**44)
missions = st.sampled_from([None, "m-a", "m-b"])


def sid(start: int, tag: int = 0) -> str:
    """A session id of `start` as ``new_session_id`` makes them, with a chosen tail."""
    return f"{start:x}-{tag:08x}"


def test_a_session_id_shows_its_start_and_ids_from_before_show_none() -> None:
    assert session_start(new_session_id(0x19BD6A1C2F4)) == 0x19BD6A1C2F4
    assert session_start(new_session_id()) is not None
    for legacy in ("5e0c91ab12cd", "s1", "forged", None, 7, "-abcd", "zz-1234"):
        assert session_start(legacy) is None, legacy


@settings(max_examples=300)
@given(a=starts, b=starts)
def test_an_older_session_after_a_newer_one_is_stale_and_not_the_other_way(a: int, b: int) -> None:
    old, new = sid(min(a, b), 1), sid(max(a, b), 2)
    assert stale(new, old) is (min(a, b) < max(a, b))
    assert not stale(old, new)
    assert not stale(new, new) and not stale(None, old)


def test_an_id_that_cannot_show_its_start_is_believed_only_until_one_that_can() -> None:
    ordered = new_session_id(1000)
    assert not stale("s1", "s2"), "ids from before ordered ones: arrival order, as before"
    assert not stale("s1", ordered)
    assert stale(ordered, "s1") and stale(ordered, None)


@settings(max_examples=300)
@given(receiver=missions, mission=missions, a=starts, b=starts)
def test_another_missions_state_is_refused_only_by_an_agent_of_a_mission(
    receiver: str | None, mission: str | None, a: int, b: int
) -> None:
    verdict = judge(receiver, mission, sid(a), sid(b))
    if receiver is not None and mission is not None and mission != receiver:
        assert verdict is Verdict.OTHER_MISSION
    else:  # a missionless receiver believes all; an unstamped body passes the mission rule
        assert verdict in (Verdict.ACCEPT, Verdict.STALE_SESSION)
        assert (verdict is Verdict.STALE_SESSION) is (b < a)


@settings(max_examples=200)
@given(
    sessions=st.lists(st.tuples(starts, missions), min_size=1, max_size=12),
    order_seed=st.integers(0, 2**32 - 1),
)
def test_whatever_the_interleaving_the_newest_session_of_the_mission_is_believed(
    sessions: list[tuple[int, str | None]], order_seed: int
) -> None:
    """Random sessions of one agent (some of another mission), each saying ONLINE,
    OFFLINE or CONNECTION_BROKEN several times, delivered in a random interleaving
    (replays included): the team view of an agent of mission ``m-a`` ends believing
    the newest session of its mission (or unstamped), and never a session older than
    one it believed before."""
    rng = random.Random(order_seed)
    messages = []
    for i, (start, mission) in enumerate(sessions):
        for state in rng.sample(list(Presence)[:3], k=rng.randint(1, 3)):
            messages.append((sid(start, i), mission, state))
    rng.shuffle(messages)
    view = TeamView("me", mission="m-a")
    believed: list[str] = []
    for session, mission, state in messages:
        body = {"state": state.value, "kind": "robot", "session": session}
        if mission is not None:
            body["mission"] = mission
        try:
            view.apply_presence("pr2", body, 1)
        except RefusedState as exc:
            assert exc.reason in ("other_mission", "stale_session")
            if exc.reason == "other_mission":
                assert mission not in (None, "m-a")
            continue
        assert mission in (None, "m-a"), f"seed {order_seed}: believed mission {mission}"
        member = view.get("pr2")
        assert member is not None and member.session == session
        believed.append(session)
    starts_believed = [session_start(s) for s in believed]
    assert starts_believed == sorted(starts_believed), f"seed {order_seed}: {believed}"
    ours = [session_start(s) for s, m, _ in messages if m in (None, "m-a")]
    if ours:
        assert starts_believed and starts_believed[-1] == max(ours), f"seed {order_seed}"


def test_a_replayed_presence_of_another_mission_changes_nothing_and_says_why() -> None:
    view = TeamView("pr2-driver", mission="m-b")
    now = new_session_id(2_000)
    view.apply_presence("world", {"state": "ONLINE", "kind": "world", "session": now,
                                  "mission": "m-b"}, 1)  # fmt: skip
    view.apply_factsheet("world", {"kind": "world", "session": now, "mission": "m-b",
                                   "zmq": "tcp://127.0.0.1:5"})  # fmt: skip
    old = new_session_id(1_000)
    for body in (
        {"state": "ONLINE", "kind": "world", "session": old, "mission": "m-a"},
        {"state": "OFFLINE", "kind": "world", "session": old, "mission": "m-a"},
    ):
        with pytest.raises(RefusedState, match=r"other_mission.*'m-a'"):
            view.apply_presence("world", body, 2)
    with pytest.raises(RefusedState, match="other_mission"):
        view.apply_factsheet("world", {"kind": "world", "session": old, "mission": "m-a",
                                       "zmq": "tcp://127.0.0.1:9"})  # fmt: skip
    # the same mission's older session (a resumed mission's old process, replayed)
    with pytest.raises(RefusedState, match="stale_session"):
        view.apply_presence("world", {"state": "OFFLINE", "session": old, "mission": "m-b"}, 3)
    with pytest.raises(RefusedState, match="stale_session"):
        view.apply_factsheet("world", {"kind": "world", "session": old, "mission": "m-b"})
    member = view.get("world")
    assert member is not None and member.online and member.session == now
    assert member.mission == "m-b" and member.factsheet["zmq"] == "tcp://127.0.0.1:5"
    assert view.online(kind="world") == {"world"}


def test_an_observer_without_a_mission_follows_every_missions_newest_session() -> None:
    view = TeamView("monitor")
    a, b = new_session_id(1_000), new_session_id(2_000)
    view.apply_presence("world", {"state": "OFFLINE", "session": a, "mission": "m-a"}, 1)
    view.apply_presence("world", {"state": "ONLINE", "session": b, "mission": "m-b"}, 2)
    with pytest.raises(RefusedState, match="stale_session"):  # A's, replayed
        view.apply_presence("world", {"state": "ONLINE", "session": a, "mission": "m-a"}, 3)
    assert view.online() == {"world"} and view.get("world").mission == "m-b"  # type: ignore[union-attr]


def test_retained_topics_keep_their_own_newest_session() -> None:
    """Kept state is judged per topic: the first message on a topic is believed whatever
    its session (a resumed mission reads its peers' old snapshots), an older one after
    a newer one is not."""
    book = SessionBook("m-b")
    old, new = new_session_id(1_000), new_session_id(2_000)
    assert book.admit("t/pr2/snapshot", "m-b", old) is Verdict.ACCEPT
    assert book.admit("t/pr2/snapshot", "m-b", new) is Verdict.ACCEPT
    assert book.admit("t/pr2/snapshot", "m-b", old) is Verdict.STALE_SESSION
    assert book.admit("t/pr2/snapshot", "m-a", new) is Verdict.OTHER_MISSION
    assert book.admit("t/baxter/snapshot", "m-b", old) is Verdict.ACCEPT
    assert book.newest("t/pr2/snapshot") == new
