"""Factory agents without a broker: the favor wire codec, config validation (errors
name the key), the LED and neighbour view, and the lost-helper hooks of the pure
favor machines."""

from __future__ import annotations

from pathlib import Path

import pytest

from teamtree.agents import AGENT_KINDS, load_config, parse_config, validate_kinds
from teamtree.agents.capability.factory import (
    FactoryRobot,
    FavorWireError,
    JobOrder,
    JobSource,
    control_summary,
    lease_id,
    message_from_wire,
    message_to_wire,
    offer_from_wire,
    offer_to_wire,
    query_from_wire,
    query_to_wire,
    request_from_wire,
    request_to_wire,
)
from teamtree.broker import ConfigError
from teamtree.broker.endpoint import Endpoint
from teamtree.hardware import factory_robots, make_robot
from teamtree.planners.capability import (
    JOBS,
    ActiveMatcher,
    FavorAccept,
    FavorGrant,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRequester,
    FavorResponder,
    FavorRevoke,
    HelperLost,
    HelperStatus,
    LeaseState,
    Offer,
    PassiveMatcher,
    Selected,
    Send,
    WorkingMode,
    decide_mode,
)

REPO = Path(__file__).resolve().parent.parent


def test_kinds_registered():
    assert AGENT_KINDS["factory_robot"] is FactoryRobot
    assert AGENT_KINDS["job_source"] is JobSource


@pytest.mark.parametrize("name", ["factory_8.toml", "factory_24.toml"])
def test_shipped_configs_validate(name):
    config = load_config(REPO / "configs" / name)
    validate_kinds(config)
    robots = [s for s in config.agents if s.kind == "factory_robot"]
    assert len(robots) == int(name.split("_")[1].split(".")[0])


@pytest.mark.parametrize("method", [PassiveMatcher(), ActiveMatcher()])
@pytest.mark.parametrize("agent,job", [("m1", "job1"), ("s2", "job2"), ("l1", "job5")])
def test_query_and_offer_round_trip(method, agent, job):
    q = method.query(
        make_robot(agent.upper() if agent[0] == "s" else agent[0].upper(), agent), JOBS[job]
    )
    assert query_from_wire(query_to_wire(q)) == q
    for profile in factory_robots():
        offer = Offer(profile, fits_job=True, fits_req=False)
        back = offer_from_wire(offer_to_wire(offer))
        assert back == offer and back.profile.signature() == profile.signature()


def test_request_round_trip_converts_the_deadline():
    q = PassiveMatcher().query(make_robot("M", "m1"), JOBS["job1"])
    req = FavorRequest("m1:j1#1", "m1", q, 2, 10.1, ("m1",))
    body = request_to_wire(req, ["o1", "b1"], deadline_ms=5_100)
    back, targets = request_from_wire(body, now=3.0, now_ms=5_000)
    assert targets == ["b1", "o1"]
    assert back.deadline == pytest.approx(3.1)
    assert back.query == q and back.hops == ("m1",) and back.ttl == 2


def test_directed_messages_round_trip():
    offer = Offer(make_robot("O1", "o1"), fits_req=True)
    msgs = [
        FavorGrant("r#1", "m1", "o1", offer),
        FavorReject("r#1", "m1", "o1", "no longer available"),
        FavorAccept("r#1", "m1", "o1", WorkingMode.ASSEMBLY),
        FavorRelease("r#1", "m1", "o1", "done"),
        FavorRevoke("r#1", "m1", "o1", "battery"),
        HelperStatus("r#1", "m1", "o1", 0.55),
    ]
    kinds = set()
    for msg in msgs:
        kind, body = message_to_wire(msg)
        kinds.add(kind)
        assert message_from_wire(kind, body) == msg
        assert lease_id(msg) == "r#1/o1"
    assert len(kinds) == len(msgs)


@pytest.mark.parametrize(
    "kind,body",
    [
        ("favor.grant", {"request_id": "r", "requester": "m1", "helper": "o1"}),
        ("favor.accept", {"request_id": "r", "requester": "m1", "helper": "o1", "mode": "x"}),
        ("favor.status", {"request_id": "r", "requester": "m1"}),
        ("favor.nonsense", {"request_id": "r", "requester": "m1", "helper": "o1"}),
        ("favor.release", "not a map"),
    ],
)
def test_bad_bodies_are_wire_errors(kind, body):
    with pytest.raises(FavorWireError):
        message_from_wire(kind, body)


def _config(tmp_path: Path, robot: str = "", source: str = "", mission: str = "") -> Path:
    path = tmp_path / "f.toml"
    path.write_text(
        f"""
[team]
name = "f"
[mission]
kind = "factory"
{mission}
[[agents]]
id = "jobs"
kind = "job_source"
jobs = [{{ job = "job1", robot = "m1" }}]
{source}
[[agents]]
id = "m1"
kind = "factory_robot"
{robot if "type" in robot else 'type = "M"' + chr(10) + robot}
"""
    )
    return path


@pytest.mark.parametrize(
    "robot,source,mission,key",
    [
        ('type = "Q"', "", "", "agents[1].type"),
        ("position = [1]", "", "", "agents[1].position"),
        ("method = 3", "", "", "agents[1].method"),
        ("favor_loss = 1.5", "", "", "agents[1].favor_loss"),
        ("ttl = 0", "", "", "agents[1].ttl"),
        ("close_early = 4", "", "", "agents[1].close_early"),
        ("retry_s = 0", "", "", "agents[1].retry_s"),
        ("battery = 2", "", "", "agents[1].battery"),
        ("colour = 1", "", "", "agents[1]"),
        ("", "", 'method = "two"', "mission.method"),
        ("", "concurrency = 0", "", "agents[0].concurrency"),
        ("", "random_jobs = -1", "", "agents[0].random_jobs"),
    ],
)
def test_config_errors_name_the_key(tmp_path, robot, source, mission, key):
    with pytest.raises(ConfigError) as err:
        validate_kinds(load_config(_config(tmp_path, robot, source, mission)))
    assert err.value.key == key, str(err.value)


def test_job_source_job_errors_name_the_key(tmp_path):
    path = _config(tmp_path)
    text = path.read_text()
    for bad, key in [
        ('{ job = "job9", robot = "m1" }', "agents[0].jobs[0].job"),
        ('{ job = "job1", robot = "zz" }', "agents[0].jobs[0].robot"),
        ('{ job = "job1", speed = 2 }', "agents[0].jobs[0].speed"),
    ]:
        path.write_text(text.replace('{ job = "job1", robot = "m1" }', bad))
        with pytest.raises(ConfigError) as err:
            validate_kinds(load_config(path))
        assert err.value.key == key


def test_mission_defaults_and_agent_overrides(tmp_path):
    path = _config(tmp_path, robot="ttl = 3", mission="method = 2\nttl = 1\nwindow_s = 0.3")
    config = load_config(path)
    params = FactoryRobot.params_from_config(config.agent("m1"), config)
    assert params["method"] == 2 and params["ttl"] == 3 and params["window_s"] == 0.3
    source = JobSource.params_from_config(config.agent("jobs"), config)
    assert source["robots"] == ["m1"] and source["orders"][0].robot == "m1"


def _robot(rid: str, rtype: str, position=(0.0, 0.0), **kw) -> FactoryRobot:
    return FactoryRobot(
        rid,
        team="t",
        endpoint=Endpoint("127.0.0.1", 1),
        robot_type=rtype,
        position=position,
        comm_range=1.5,
        **kw,
    )


def test_factsheet_shows_led_and_neighbours_come_from_factsheets():
    me = _robot("m1", "M")
    sheet = me.factsheet()
    assert sheet["led"] == "idle" and sheet["available"] and sheet["robot_type"] == "M"
    assert sheet["profile"]["id"] == "m1" and sheet["position"] == [0.0, 0.0]
    for rid, pos, led in [
        ("o1", [1, 0], "idle"),
        ("b1", [0, 1], "helping"),
        ("s1", [3, 3], "idle"),
    ]:
        me.team_view.apply_presence(rid, {"state": "ONLINE", "kind": "factory_robot"}, 1)
        me.team_view.apply_factsheet(
            rid, {"kind": "factory_robot", "position": pos, "led": led, "available": led == "idle"}
        )
    me.team_view.apply_presence("jobs", {"state": "ONLINE", "kind": "job_source"}, 1)
    assert me.neighbours() == ["b1", "o1"]  # s1 is out of range, jobs is no robot
    assert me.neighbours(idle_only=True) == ["o1"]
    me.team_view.apply_presence("o1", {"state": "CONNECTION_BROKEN"}, 2)
    assert me.neighbours() == ["b1"]


def test_requester_loses_a_vanished_helper_and_seeks_another():
    m = PassiveMatcher()
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=0.1)
    msg = next(a.message for a in req.start(0.0, ["o1", "o1b"]) if isinstance(a, Send))
    for helper in ("o1", "o1b"):
        resp = FavorResponder(make_robot("O1", helper), m)
        grant = next(a.message for a in resp.on_request(msg, 0.01, []) if isinstance(a, Send))
        req.on_message(grant, 0.02)
    first = next(a for a in req.tick(0.11) if isinstance(a, Selected))
    chosen = first.selection.helpers[0]
    assert req.lose_helper("nobody", 0.2) == []
    acts = req.lose_helper(chosen, 0.2, "presence CONNECTION_BROKEN")
    assert isinstance(acts[0], HelperLost) and acts[0].helper == chosen
    lease = next(x for x in req.leases.values() if x.helper == chosen)
    assert lease.state == LeaseState.EXPIRED
    again = [a for a in acts if isinstance(a, Send) and isinstance(a.message, FavorRequest)]
    assert [a.to for a in again] == [h for h in ("o1", "o1b") if h != chosen]


def test_responder_ends_a_favor_when_the_requester_vanishes():
    m = PassiveMatcher()
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=0.1)
    msg = next(a.message for a in req.start(0.0, ["o1"]) if isinstance(a, Send))
    helper = FavorResponder(make_robot("O1", "o1"), m)
    grant = next(a.message for a in helper.on_request(msg, 0.01, []) if isinstance(a, Send))
    req.on_message(grant, 0.02)
    accept = next(
        a.message
        for a in req.tick(0.11)
        if isinstance(a, Send) and isinstance(a.message, FavorAccept)
    )
    helper.on_message(accept, 0.12)
    assert helper.role == "helping"
    assert helper.requester_gone("someone-else", 0.3) == []
    acts = helper.requester_gone("m1", 0.3)
    assert helper.lease.state == LeaseState.EXPIRED and helper.role == "idle" and helper.idle
    assert acts and acts[0].role == "idle"


def test_control_summary_of_job5_tower():
    robots = {r.robot_id: r for r in factory_robots()}
    sel = decide_mode(
        robots["l1"], JOBS["job5"], [r for r in robots.values() if r.robot_id != "l1"], 2
    )
    assert sel.team is not None
    assert control_summary(sel.team, JOBS["job5"]) == {"grasp_by": "m1", "move_by": "l1"}


def test_parse_config_accepts_a_minimal_factory(tmp_path):
    data = {
        "team": {"name": "f"},
        "agents": [
            {"id": "jobs", "kind": "job_source", "random_jobs": 2, "seed": 1},
            {"id": "a", "kind": "factory_robot", "type": "B"},
        ],
    }
    config = parse_config(data, tmp_path / "x.toml")
    source = JobSource.params_from_config(config.agent("jobs"), config)
    assert [o.robot for o in source["orders"]] == [None, None] and source["seed"] == 1


def test_a_lost_release_is_repeated_when_the_helper_still_reports():
    m = PassiveMatcher()
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=0.1)
    msg = next(a.message for a in req.start(0.0, ["o1"]) if isinstance(a, Send))
    helper = FavorResponder(make_robot("O1", "o1"), m)
    grant = next(a.message for a in helper.on_request(msg, 0.01, []) if isinstance(a, Send))
    req.on_message(grant, 0.02)
    accept = next(
        a.message
        for a in req.tick(0.11)
        if isinstance(a, Send) and isinstance(a.message, FavorAccept)
    )
    helper.on_message(accept, 0.12)
    req.finish(0.5)  # its FavorRelease is lost on the way
    beat = next(a.message for a in helper.tick(1.0) if isinstance(a, Send))
    assert isinstance(beat, HelperStatus)
    (again,) = req.on_message(beat, 1.01)
    assert isinstance(again.message, FavorRelease) and again.to == "o1"
    helper.on_message(again.message, 1.02)
    assert helper.lease.state == LeaseState.RELEASED and helper.role == "idle"


def test_a_new_round_of_the_same_requester_supersedes_a_held_grant():
    m = PassiveMatcher()
    req = FavorRequester(make_robot("M", "m1"), JOBS["job1"], m, window=0.1)
    first = next(a.message for a in req.start(0.0, ["o1"]) if isinstance(a, Send))
    helper = FavorResponder(make_robot("O1", "o1"), m)
    helper.on_request(first, 0.01, [])
    assert not helper.idle  # held for m1 until the deadline plus the hold
    second = FavorRequest("m1:job1#2", "m1", first.query, 1, 0.3, ("m1",))
    out = helper.on_request(second, 0.15, [])
    assert [type(a.message) for a in out] == [FavorGrant]
    assert helper.lease.request_id == "m1:job1#2"
    other = FavorRequest("m2:job1#1", "m2", first.query, 1, 0.3, ("m2",))
    out = helper.on_request(other, 0.16, [])  # still held for m1: declines m2
    assert [(type(a.message), a.to) for a in out] == [(FavorReject, "m2")]


@pytest.mark.parametrize(
    ("statuses", "ok"),
    [
        (["done", "impossible"], True),
        (["done", "failed"], False),
        (["done", "timeout"], False),
    ],
)
def test_summary_is_ok_only_when_every_possible_job_is_done(tmp_path, statuses, ok):
    """The job source exits 3 (``teamtree run`` fails) when a possible job did not end
    done; a job reported impossible does not count against the run."""
    orders = [JobOrder(f"j{i + 1}", "job2", "m1") for i in range(len(statuses))]
    source = JobSource(
        "jobs", team="t", endpoint=Endpoint("127.0.0.1", 1), robots=["m1"], orders=orders,
        summary_path=str(tmp_path / "summary.json"),
    )  # fmt: skip
    for order, status in zip(orders, statuses, strict=True):
        source.results[order.job_id] = {"job": "job2", "status": status, "reason": ""}
    assert source._summarise(1.0) is ok
    doc = (tmp_path / "summary.json").read_text()
    assert '"impossible"' in doc


def test_every_factory_team_default_is_a_known_mission_key() -> None:
    """The [mission] key check (runtime) knows every key the factory robots read."""
    from teamtree.agents.capability.robot import TEAM_DEFAULTS
    from teamtree.agents.runtime.config import MISSION_KEYS

    assert set(TEAM_DEFAULTS) <= MISSION_KEYS["factory"]
