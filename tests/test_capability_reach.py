"""Closing the grant window early (seed 002 favor protocol): the agent's replay of its
request from factsheets must name exactly the robots that answer it, the window closes
when they all have, and an impossible job is told apart from a busy neighbourhood."""

from __future__ import annotations

from collections import deque

from hypothesis import event, given, settings
from hypothesis import strategies as st

from teamtree.hardware import make_robot
from teamtree.planners.capability import (
    JOBS,
    FavorGrant,
    FavorReject,
    FavorRequester,
    FavorResponder,
    Method,
    Peer,
    RequesterState,
    Selected,
    SelectionFailed,
    Send,
    feasibility,
    make_matcher,
    replay,
)
from tests.factory_scenes import Scene, scenes

FACTORY_8 = [("b1", "B"), ("l1", "L"), ("m1", "M"), ("m3", "M"), ("s1", "S1"), ("s2", "S2"),
             ("o1", "O1"), ("o2", "O2")]  # fmt: skip


def _peers(kinds, positions, comm_range, busy=()):
    return {
        rid: Peer(make_robot(kind, rid), positions[rid], comm_range, rid not in busy)
        for rid, kind in kinds
    }


def _deliver(agent_id, peers, job, method, ttl, busy):
    """Who answered the agent's request over a lossless network, and how."""
    _, answers = _answers_to(agent_id, peers, job, method, ttl, busy)
    return {msg.helper: type(msg).__name__ for msg in answers}


@settings(max_examples=60, deadline=None)
@given(scene=scenes(24, (1, 3), (1.0, 1.5, 2.5), 6))
def test_replay_names_exactly_the_robots_that_answer(scene: Scene):
    peers = scene.peers()
    matcher = make_matcher(scene.method)
    me = peers[scene.agent_id]
    query = matcher.query(me.profile, JOBS[scene.job])
    reach = replay(me, peers, query, matcher, scene.ttl)
    answers = _deliver(scene.agent_id, peers, JOBS[scene.job], scene.method, scene.ttl,
                       scene.busy)  # fmt: skip
    assert set(answers) == set(reach.answerers)
    for rid, kind in answers.items():  # idle ones grant, busy ones decline
        assert kind == ("FavorReject" if rid in scene.busy else "FavorGrant")


def test_window_closes_when_every_expected_robot_has_answered():
    m = make_matcher(1)
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=5.0)
    msg = next(a.message for a in req.start(0.0, ["o1", "o1b"], expect=["o1", "o1b"])
               if isinstance(a, Send))  # fmt: skip
    o1 = FavorResponder(make_robot("O1", "o1"), m)
    o2 = FavorResponder(make_robot("O1", "o1b"), m, has_job=True)
    grant = o1.on_request(msg, 0.01, [])[0].message
    decline = o2.on_request(msg, 0.01, [])[0].message
    assert isinstance(grant, FavorGrant) and isinstance(decline, FavorReject)
    assert req.on_message(grant, 0.02) == [] and req.state == RequesterState.COLLECTING
    acts = req.on_message(decline, 0.03)  # the last expected answer: select now, not at 5 s
    assert any(isinstance(a, Selected) for a in acts) and req.closed_by == "all answered"
    assert req.selection is not None and req.selection.helpers == ("o1",)


def test_without_expect_the_window_waits_for_the_deadline():
    m = make_matcher(1)
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=5.0)
    msg = next(a.message for a in req.start(0.0, ["o1"]) if isinstance(a, Send))
    grant = FavorResponder(make_robot("O1", "o1"), m).on_request(msg, 0.01, [])[0].message
    assert req.on_message(grant, 0.02) == [] and req.tick(4.9) == []
    assert any(isinstance(a, Selected) for a in req.tick(5.0)) and req.closed_by == "deadline"


def test_all_declined_waits_and_asks_again_with_fresh_neighbours():
    m = make_matcher(1)
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=5.0, retry_s=0.3)
    msg = next(a.message for a in req.start(0.0, ["o1"], expect=["o1"]) if isinstance(a, Send))
    busy = FavorResponder(make_robot("O1", "o1"), m, has_job=True)
    req.on_message(busy.on_request(msg, 0.01, [])[0].message, 0.02)
    assert req.state == RequesterState.WAITING and not req.round_due(0.2)
    assert req.round_due(0.33)
    acts = req.tick(0.33, ["o1", "o2"], expect=["o1", "o2"])
    sends = [a for a in acts if isinstance(a, Send)]
    assert sorted(s.to for s in sends) == ["o1", "o2"] and req.round == 2


def test_feasibility_tells_impossible_jobs_from_busy_neighbours():
    positions = {rid: (0.0, 0.0) for rid, _ in FACTORY_8}
    peers = _peers(FACTORY_8, positions, 10.0, busy={"o1", "o2", "s1", "s2"})
    for method, job, agent, possible in [
        (1, "job3c", "l1", False),  # eq. 18: one helper (ω_o); 3(c) needs two
        (1, "job5", "l1", False),
        (2, "job3c", "l1", True),
        (2, "job5", "l1", True),
        (1, "job1", "m1", True),  # possible although O1 and O2 are busy now
        (2, "job2", "s2", True),
    ]:
        f = feasibility(peers[agent], peers, JOBS[job], make_matcher(method), 1)
        assert f.possible is possible, (method, job, f.reason)
        if not possible:
            assert f.reason.startswith(f"impossible under method {method}")


def test_impossible_job_fails_at_once_and_says_so():
    positions = {rid: (0.0, 0.0) for rid, _ in FACTORY_8}
    peers = _peers(FACTORY_8, positions, 10.0)
    m = make_matcher(Method.PASSIVE)
    f = feasibility(peers["l1"], peers, JOBS["job3c"], m, 1)
    req = FavorRequester(peers["l1"].profile, JOBS["job3c"], m, max_rounds=5, impossible=f.reason)
    acts = req.start(0.0, [k for k in peers if k != "l1"], expect=[])
    acts += req.tick(0.0)  # nothing expected: the window closes at once
    failed = [a for a in acts if isinstance(a, SelectionFailed)]
    assert failed and failed[0].impossible and req.round == 1


def test_window_closes_once_the_best_possible_team_has_granted():
    """Two identical O1s can help: the tie goes to o1 (eq. 18), so once o1 granted the
    other's answer cannot change the choice and the window closes without it."""
    m = make_matcher(1)
    me = make_robot("M", "m1")
    predicted = {rid: m.answer(m.query(me, JOBS["job1"]), make_robot("O1", rid))
                 for rid in ("o1", "o1b")}  # fmt: skip
    req = FavorRequester(me, JOBS["job1"], m, window=5.0)
    acts = req.start(0.0, ["o1", "o1b"], expect=["o1", "o1b"], predicted=predicted)
    msg = next(a.message for a in acts if isinstance(a, Send))
    assert req.best_helpers == {"o1"} and req.state == RequesterState.COLLECTING
    grant = FavorResponder(make_robot("O1", "o1"), m).on_request(msg, 0.01, [])[0].message
    acts = req.on_message(grant, 0.02)  # o1b has not answered yet
    assert any(isinstance(a, Selected) for a in acts) and req.closed_by == "best team granted"
    assert req.selection is not None and req.selection.helpers == ("o1",)
    later = FavorResponder(make_robot("O1", "o1b"), m).on_request(msg, 0.01, [])[0].message
    (release,) = req.on_message(later, 0.03)  # its grant came too late: released
    assert release.to == "o1b" and release.message.reason == "late"


def test_a_grant_from_a_robot_that_is_not_the_best_keeps_the_window_open():
    m = make_matcher(1)
    me = make_robot("M", "m1")
    predicted = {rid: m.answer(m.query(me, JOBS["job1"]), make_robot("O1", rid))
                 for rid in ("o1", "o1b")}  # fmt: skip
    req = FavorRequester(me, JOBS["job1"], m, window=5.0)
    acts = req.start(0.0, ["o1", "o1b"], expect=["o1", "o1b"], predicted=predicted)
    msg = next(a.message for a in acts if isinstance(a, Send))
    later = FavorResponder(make_robot("O1", "o1b"), m).on_request(msg, 0.01, [])[0].message
    assert req.on_message(later, 0.02) == [] and req.state == RequesterState.COLLECTING


def test_a_refusal_from_the_best_robot_reforecasts():
    m = make_matcher(1)
    me = make_robot("M", "m1")
    predicted = {rid: m.answer(m.query(me, JOBS["job1"]), make_robot("O1", rid))
                 for rid in ("o1", "o1b")}  # fmt: skip
    req = FavorRequester(me, JOBS["job1"], m, window=5.0)
    acts = req.start(0.0, ["o1", "o1b", "o1c"], expect=["o1", "o1b", "o1c"], predicted=predicted)
    assert req.best_helpers is None  # o1c has no prediction: wait for every answer
    req = FavorRequester(me, JOBS["job1"], m, window=5.0)
    acts = req.start(0.0, ["o1", "o1b"], expect=["o1", "o1b"], predicted=predicted)
    msg = next(a.message for a in acts if isinstance(a, Send))
    busy = FavorResponder(make_robot("O1", "o1"), m, has_job=True)
    assert req.on_message(busy.on_request(msg, 0.01, [])[0].message, 0.02) == []
    assert req.best_helpers == {"o1b"}
    grant = FavorResponder(make_robot("O1", "o1b"), m).on_request(msg, 0.01, [])[0].message
    acts = req.on_message(grant, 0.03)
    assert req.selection is not None and req.selection.helpers == ("o1b",)


def _answers_to(agent_id, peers, job, method, ttl, busy):
    """Every answer the agent's request gets (grants and refusals), through the real
    responders over a lossless network, and the request itself."""
    matcher = make_matcher(method)
    me = peers[agent_id]
    probe = FavorRequester(me.profile, job, matcher, ttl=ttl, window=10.0)
    targets = [k for k, p in peers.items() if k != agent_id and k not in busy and me.reaches(p)]
    responders = {
        k: FavorResponder(p.profile, matcher, has_job=k in busy)
        for k, p in peers.items()
        if k != agent_id
    }
    queue = deque(a for a in probe.start(0.0, targets) if isinstance(a, Send))
    answers = []
    while queue:
        send = queue.popleft()
        msg = send.message
        if send.to == agent_id:
            answers.append(msg)
            continue
        src = peers[send.to]
        in_range = [k for k, p in peers.items() if k != send.to and src.reaches(p)]
        queue.extend(a for a in responders[send.to].on_request(msg, 0.01, in_range))
    return targets, answers


@settings(max_examples=200, deadline=None)
@given(scene=scenes(12, (1, 2), (1.5, 2.5, 9.0), 4), arrival=st.randoms(use_true_random=False))
def test_closing_on_the_best_team_selects_what_waiting_for_everyone_selects(scene: Scene, arrival):
    """Whatever order the answers come in, closing once the predicted best team has
    granted selects the same mode and an equivalent team (same robot types, same
    score) as waiting for every expected answer."""
    job, method, ttl, agent_id, busy = (scene.job, scene.method, scene.ttl, scene.agent_id,
                                        scene.busy)  # fmt: skip
    peers = scene.peers()
    pred = scene.predict(peers)
    matcher, me = pred.matcher, pred.me
    targets, answers = _answers_to(agent_id, peers, JOBS[job], method, ttl, busy)
    arrival.shuffle(answers)
    outcomes = []
    for decide in (True, False):
        req = FavorRequester(me.profile, JOBS[job], matcher, ttl=ttl, window=10.0,
                             decide_early=decide)  # fmt: skip
        acts = req.start(0.0, targets, pred.expect, pred.offers)
        heard = 0
        for msg in answers:
            if req.state != RequesterState.COLLECTING:
                break
            acts += req.on_message(msg, 0.02)
            heard += 1
        acts += req.tick(20.0)  # the deadline, if the window is still open
        outcomes.append((req, heard, acts))
    (early, heard_early, _), (full, heard_full, _) = outcomes
    event(f"closed by {early.closed_by}, {heard_full - heard_early} answers unheard")
    assert heard_early <= heard_full
    if full.selection is None:
        assert early.selection is None or early.closed_by == "best team granted"
        return
    assert early.selection is not None, early.closed_by
    assert early.selection.mode == full.selection.mode

    def kinds_of(selection):
        return sorted(peers[h].profile.kind for h in selection.helpers)

    assert kinds_of(early.selection) == kinds_of(full.selection)
