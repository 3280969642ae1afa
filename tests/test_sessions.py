"""The acceptance rule for presence, factsheets and retained state (sessions.py): state of
another mission, and state of a session that no longer speaks for its agent, are
refused whatever order they come in. Hypothesis prints the falsifying example (and its
seed with ``--hypothesis-seed``); the interleaving's seed is in every assertion message."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.sessions import (
    SessionBook,
    Spoken,
    Verdict,
    judge,
    stale,
    stale_kept,
)
from teamtree.agents.runtime.team_view import Presence, RefusedState, TeamView

times = st.integers(0, 2**44)
missions = st.sampled_from([None, "m-a", "m-b"])


def presence(state: str, session: str | None, since: int | None, mission: str | None) -> dict:
    body: dict = {"state": state, "kind": "robot", "session": session}
    if since is not None:
        body["since"] = since
    if mission is not None:
        body["mission"] = mission
    return body


@settings(max_examples=300)
@given(a=times, b=times)
def test_a_session_that_speaks_from_earlier_is_stale_after_a_later_one(a: int, b: int) -> None:
    early, late = Spoken("s-early", min(a, b)), Spoken("s-late", max(a, b))
    assert stale(late, early) is (min(a, b) < max(a, b))
    assert not stale(early, late)
    assert not stale(late, Spoken("s-late", 0)), "the same session: arrival order (a Will)"
    assert not stale(None, early)


def test_state_without_since_is_believed_only_until_state_with_one() -> None:
    assert not stale(Spoken("s1", None), Spoken("s2", None)), "senders from before: as before"
    assert not stale(Spoken("s1", None), Spoken("s2", 5))
    assert stale(Spoken("s2", 5), Spoken("s1", None))


@settings(max_examples=300)
@given(receiver=missions, mission=missions, a=times, b=times)
def test_another_missions_state_is_refused_only_by_an_agent_of_a_mission(
    receiver: str | None, mission: str | None, a: int, b: int
) -> None:
    verdict = judge(receiver, mission, Spoken("x", a), Spoken("y", b))
    if receiver is not None and mission is not None and mission != receiver:
        assert verdict is Verdict.OTHER_MISSION
    else:  # a missionless receiver believes all; an unstamped body passes the mission rule
        assert verdict is (Verdict.STALE_SESSION if b < a else Verdict.ACCEPT)


@settings(max_examples=200)
@given(
    sessions=st.lists(st.tuples(times, missions), min_size=1, max_size=12),
    order_seed=st.integers(0, 2**32 - 1),
)
def test_whatever_the_interleaving_the_latest_session_of_the_mission_is_believed(
    sessions: list[tuple[int, str | None]], order_seed: int
) -> None:
    """Random sessions of one agent (some of another mission), each saying ONLINE,
    OFFLINE or CONNECTION_BROKEN once or more, delivered in a random interleaving
    (replays included): the team view of an agent of mission ``m-a`` ends believing the
    session of its mission (or unstamped) that speaks from latest, and never goes
    back to one that speaks from earlier than one it believed."""
    rng = random.Random(order_seed)
    messages = []
    for i, (since, mission) in enumerate(sessions):
        for state in rng.sample(list(Presence)[:3], k=rng.randint(1, 3)):
            messages.append((f"s{i}", since, mission, state))
    rng.shuffle(messages)
    view = TeamView("me", mission="m-a")
    believed: list[int] = []
    for session, since, mission, state in messages:
        try:
            view.apply_presence("pr2", presence(state.value, session, since, mission), 1)
        except RefusedState as exc:
            assert exc.reason in ("other_mission", "stale_session"), order_seed
            assert (exc.reason == "other_mission") is (mission not in (None, "m-a")), order_seed
            continue
        assert mission in (None, "m-a"), f"seed {order_seed}: believed mission {mission}"
        member = view.get("pr2")
        assert member is not None and member.session == session, order_seed
        believed.append(since)
    assert believed == sorted(believed), f"seed {order_seed}: went back: {believed}"
    ours = [since for _, since, m, _ in messages if m in (None, "m-a")]
    if ours:
        assert believed and believed[-1] == max(ours), f"seed {order_seed}"


def test_a_replayed_presence_of_another_mission_changes_nothing_and_says_why() -> None:
    view = TeamView("pr2-driver", mission="m-b")
    view.apply_presence("world", presence("ONLINE", "b1", 2_000, "m-b"), 1)
    view.apply_factsheet("world", {"kind": "world", "session": "b1", "since": 2_000,
                                   "mission": "m-b", "zmq": "tcp://127.0.0.1:5"})  # fmt: skip
    for state in ("ONLINE", "OFFLINE"):  # A's world, replayed (and dated ahead)
        with pytest.raises(RefusedState, match=r"other_mission.*'m-a'"):
            view.apply_presence("world", presence(state, "a1", 9_000, "m-a"), 2)
    with pytest.raises(RefusedState, match="other_mission"):
        view.apply_factsheet("world", {"kind": "world", "session": "a1", "since": 9_000,
                                       "mission": "m-a", "zmq": "tcp://127.0.0.1:9"})  # fmt: skip
    # the same mission's earlier process (a resumed mission's old world), replayed
    with pytest.raises(RefusedState, match="stale_session"):
        view.apply_presence("world", presence("OFFLINE", "b0", 1_000, "m-b"), 3)
    with pytest.raises(RefusedState, match="stale_session"):
        view.apply_factsheet("world", {"kind": "world", "session": "b0", "since": 1_000})
    member = view.get("world")
    assert member is not None and member.online and member.session == "b1"
    assert member.mission == "m-b" and member.factsheet["zmq"] == "tcp://127.0.0.1:5"
    assert view.online(kind="world") == {"world"}
    # its own Will, dated at its connect, is still believed; a later session too
    assert view.apply_presence("world", presence("CONNECTION_BROKEN", "b1", 2_000, "m-b"), 4)
    assert view.apply_presence("world", presence("ONLINE", "b2", 3_000, "m-b"), 5)


def test_an_observer_without_a_mission_follows_every_missions_latest_session() -> None:
    view = TeamView("monitor")
    view.apply_presence("world", presence("OFFLINE", "a1", 1_000, "m-a"), 1)
    view.apply_presence("world", presence("ONLINE", "b1", 2_000, "m-b"), 2)
    with pytest.raises(RefusedState, match="stale_session"):  # A's, replayed
        view.apply_presence("world", presence("ONLINE", "a1", 1_000, "m-a"), 3)
    member = view.get("world")
    assert view.online() == {"world"} and member is not None and member.mission == "m-b"


def test_the_same_session_outbidding_keeps_its_latest_since() -> None:
    book = SessionBook("m-b")
    assert book.admit("pr2", "m-b", "p1", 1_000) is Verdict.ACCEPT
    assert book.admit("pr2", "m-b", "forged", 5_000) is Verdict.ACCEPT  # dated ahead
    assert book.admit("pr2", "m-b", "p1", 5_001) is Verdict.ACCEPT  # the agent outbids it
    assert book.admit("pr2", "m-b", "p1", 1_000) is Verdict.ACCEPT  # its Will, from before
    assert book.newest("pr2") == Spoken("p1", 5_001)
    assert book.admit("pr2", "m-b", "forged", 5_000) is Verdict.STALE_SESSION


def test_kept_state_of_another_session_is_stale_once_the_current_ones_was_believed() -> None:
    assert not stale_kept(None, "p2", "p1"), "the first on a topic: a resumed mission reads it"
    assert not stale_kept("p1", "p2", "p2")
    assert stale_kept("p2", "p2", "p1") and stale_kept("p2", "p2", None)
    assert not stale_kept("p1", "p2", "p3"), "the sender moved on: its newer process speaks"
    assert not stale_kept("p1", None, "p0"), "nothing known of the sender: believed"


async def test_run_counts_only_its_own_missions_presence_when_it_waits_for_services() -> None:
    """``teamtree run`` starts the members once its services are online: another
    mission's ONLINE (a replay of the last one's world) must not stand in for its own
    world, so its ``services not ready`` timeout fires rather than the members starting
    against no world."""
    from teamtree.agents.runtime.config import load_config
    from teamtree.agents.runtime.launcher import Launcher
    from teamtree.broker import Envelope, HlcStamp, encode
    from teamtree.broker.messages import Incoming
    from teamtree.broker.topics import build
    from tests.conftest import REPO

    config = load_config(REPO / "configs" / "tea_party_s1.toml")
    launcher = Launcher(config, mission_id="m-b")

    def online(mission: str) -> Incoming:
        body = {"state": "ONLINE", "kind": "world", "session": "w", "mission": mission}
        env = Envelope("presence", "world", 1, 1, HlcStamp(1, 0, "world"), body)
        return Incoming(build(config.team, "world", "connection"), encode(env), False, 0)

    await launcher.watch.watched(online("m-a"))
    assert "world" not in launcher.watch.online
    await launcher.watch.watched(online("m-b"))
    assert "world" in launcher.watch.online
