"""The favor protocol (seed 002 §IV.C-D, §V.B) as a pure state machine, and its
robustness to message loss and lost helpers (randomised; seeds are printed)."""

import random

import pytest

from teamtree.hardware import factory_robots, make_robot
from teamtree.planners.capability import (
    JOBS,
    FavorAccept,
    FavorGrant,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRequester,
    FavorResponder,
    FavorSimulation,
    HelperLost,
    Lease,
    LeaseState,
    PassiveMatcher,
    Selected,
    SelectionFailed,
    Send,
    WorkingMode,
    grid_positions,
)


def test_lease_lifecycle():
    lease = Lease("r#1", "m1", "o1")
    assert not lease.move(LeaseState.ACCEPTED, 0)  # must be granted first
    assert lease.move(LeaseState.GRANTED, 1) and lease.move(LeaseState.ACCEPTED, 2)
    assert lease.move(LeaseState.EXPIRED, 3) and not lease.active
    assert not lease.move(LeaseState.RELEASED, 4) and lease.state == LeaseState.EXPIRED
    assert Lease("x", "a", "b").move(LeaseState.REJECTED, 0)


def test_request_forwarded_with_ttl_and_deduplicated():
    m = PassiveMatcher()
    agent = make_robot("M", "m1")
    req = FavorRequester(agent, JOBS["job1"], m, ttl=2, window=0.1)
    sends = [a for a in req.start(0.0, ["b1"]) if isinstance(a, Send)]
    assert [s.to for s in sends] == ["b1"]
    msg = sends[0].message
    assert isinstance(msg, FavorRequest) and msg.query.c_req is not None  # assembly possible
    b1 = FavorResponder(make_robot("B", "b1"), m)
    out = b1.on_request(msg, 0.01, ["m1", "o1", "s1"])
    fwd = [a for a in out if isinstance(a, Send)]
    assert sorted(a.to for a in fwd) == ["o1", "s1"]  # not back to the requester
    assert all(a.message.ttl == 1 and a.message.hops == ("m1", "b1") for a in fwd)
    assert b1.on_request(msg, 0.02, ["o1"]) == []  # duplicate
    o1 = FavorResponder(make_robot("O1", "o1"), m)
    out = o1.on_request(fwd[0].message if fwd[0].to == "o1" else fwd[1].message, 0.02, ["x"])
    assert len(out) == 1 and isinstance(out[0].message, FavorGrant)  # granted, ttl 1: no forward
    assert o1.lease is not None and o1.lease.state == LeaseState.GRANTED
    # the requester selects at the deadline and accepts
    acts = req.on_message(out[0].message, 0.03) + req.tick(0.1)
    sel = [a for a in acts if isinstance(a, Selected)]
    assert sel and sel[0].selection.mode == WorkingMode.ASSEMBLY
    accept = [a for a in acts if isinstance(a, Send) and isinstance(a.message, FavorAccept)]
    assert [a.to for a in accept] == ["o1"]
    assert req.leases[(req.request_id, "b1")].state == LeaseState.REJECTED  # no answer
    back = o1.on_message(accept[0].message, 0.11)
    assert o1.role == "helping" and any(isinstance(a, Send) for a in back)
    done = req.finish(1.0)
    rel = [a for a in done if isinstance(a, Send) and isinstance(a.message, FavorRelease)]
    o1.on_message(rel[0].message, 1.01)
    assert o1.lease.state == LeaseState.RELEASED and o1.idle


def test_busy_or_low_battery_robot_does_not_grant():
    m = PassiveMatcher()
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m)
    msg = next(a.message for a in req.start(0.0, ["o1"]) if isinstance(a, Send))
    # a capable robot that is not idle declines at once (so the window can close early)
    for robot in (
        FavorResponder(make_robot("O1", "o1"), m, battery=0.3),
        FavorResponder(make_robot("O1", "o1"), m, has_job=True),
    ):
        out = robot.on_request(msg, 0.0, [])
        assert [type(a.message) for a in out] == [FavorReject] and robot.lease is None
        assert out[0].message.reason == "not idle"


def test_no_answer_by_deadline_means_rejection_then_failure():
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], PassiveMatcher(), max_rounds=2)
    req.start(0.0, ["o1"])
    first = req.request_id
    acts = req.tick(0.2)
    assert req.leases[(first, "o1")].state == LeaseState.REJECTED and req.round == 2
    acts = req.tick(0.5)
    assert any(isinstance(a, SelectionFailed) for a in acts)


def _sim(seed, method, n=12, loss=0.0, **kw):
    robots = factory_robots(n)
    rng = random.Random(seed)
    ids = [r.robot_id for r in robots]
    order = ids[:]
    rng.shuffle(order)
    return FavorSimulation(
        robots, grid_positions(order, 1.0), rng, method=method, comm_range=1.5, loss=loss, **kw
    )


CASES = [("job1", "m1", WorkingMode.ASSEMBLY), ("job2", "s2", None), ("job4", "b1", None)]


@pytest.mark.parametrize("method", [1, 2])
@pytest.mark.parametrize("seed", [random.Random(7).randrange(10**6) for _ in range(6)])
def test_selection_survives_message_loss(seed, method):
    print(f"seed={seed} method={method}")
    for job, agent, mode in CASES:
        sim = _sim(seed, method, loss=0.3, ttl=4, max_rounds=12)
        sim.assign(JOBS[job], agent)
        res = sim.run_until_selected(agent, limit=20)
        assert isinstance(res, Selected), (seed, job, sim.dropped)
        if mode is not None:
            assert res.selection.mode == mode
        sim.run(2.0)  # helpers keep the lease alive through 30 % heartbeat loss, or get replaced
        req = sim.requesters[agent]
        assert req.selection is not None
        for lease in req.accepted():
            assert sim.responders[lease.helper].lease.state == LeaseState.ACCEPTED


@pytest.mark.parametrize("method", [1, 2])
@pytest.mark.parametrize("how", ["battery", "silent"])
@pytest.mark.parametrize("seed", [random.Random(11).randrange(10**6) for _ in range(3)])
def test_lost_helper_is_replaced(seed, method, how):
    print(f"seed={seed} method={method} how={how}")
    sim = _sim(seed, method, n=24, ttl=5)
    sim.assign(JOBS["job1"], "m1")
    first = sim.run_until_selected("m1")
    assert isinstance(first, Selected) and first.selection.mode == WorkingMode.ASSEMBLY
    helper = first.selection.helpers[0]
    sim.run(0.5)
    if how == "battery":
        sim.set_battery(helper, 0.25)
    else:
        sim.silent.add(helper)
    second = sim.run_until_selected("m1", limit=10)
    assert isinstance(second, Selected), second
    assert helper not in second.selection.helpers
    assert second.selection.mode == WorkingMode.ASSEMBLY
    lost = sim.losses("m1")
    assert [x.helper for x in lost] == [helper] and isinstance(lost[0], HelperLost)
    lease = next(x for x in sim.requesters["m1"].leases.values() if x.helper == helper)
    assert lease.state == (LeaseState.REVOKED if how == "battery" else LeaseState.EXPIRED)


def test_partner_lost_falls_back_to_solo():
    sim = _sim(3, 1, n=8)
    sim.positions = {r.robot_id: (0.0, 0.0) for r in sim.robots}
    sim.__post_init__()
    sim.assign(JOBS["job2"], "m2")
    first = sim.run_until_selected("m2")
    assert first.selection.mode == WorkingMode.PARTNERSHIP
    for r in sim.robots:
        if r.robot_id != "m2":
            sim.set_battery(r.robot_id, 0.1)
    second = sim.run_until_selected("m2")
    assert isinstance(second, Selected) and second.selection.mode == WorkingMode.SOLO
