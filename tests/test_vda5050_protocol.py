"""The pure parts of the VDA 5050 driver: topics and headers, behaviours -> stops,
orders and updates (checked against the official JSON schemas), and reading a state
as order progress. Randomised with hypothesis where there is a space to cover."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.drivers.vda5050 import (
    AgvAddress,
    BehaviourError,
    Headers,
    OrderBuilder,
    SchemaCheck,
    SchemasUnavailable,
    assess,
    instant_action,
    site_from_config,
)

STATIONS = {"home": {"x": 0, "y": 0}, "A": {"x": 2, "y": 0}, "B": {"x": 2, "y": 2, "theta": 1.5},
            "C": {"x": 0, "y": 2, "station_type": "floor-2"}}  # fmt: skip
LOADS = {"p1": {"at": "A", "goal": "B"}, "p2": {"at": "C"}}


def site():
    return site_from_config(STATIONS, LOADS, {"duration": 0.5})


@pytest.fixture(scope="module")
def schemas() -> SchemaCheck:
    try:
        return SchemaCheck()
    except SchemasUnavailable as exc:
        pytest.skip(str(exc))


def test_topics_and_headers() -> None:
    addr = AgvAddress("acme", "agv-7", "uagv", "2.0.0")
    assert addr.topic("order") == "uagv/v2/acme/agv-7/order"
    assert addr.subtopic("uagv/v2/acme/agv-7/state") == "state"
    assert addr.subtopic("uagv/v2/acme/agv-8/state") is None
    assert addr.subtopic("uagv/v2/acme/agv-7/other") is None
    headers = Headers(addr)
    a, b, c = (headers.stamp(t, {}) for t in ("order", "order", "instantActions"))
    assert (a["headerId"], b["headerId"], c["headerId"]) == (0, 1, 0)  # per topic
    when = dt.datetime.fromisoformat(a["timestamp"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - when).total_seconds()) < 5
    assert a["version"] == "2.0.0" and a["serialNumber"] == "agv-7"
    with pytest.raises(ValueError, match="version"):
        AgvAddress("acme", "x", version="3.0.0")
    with pytest.raises(ValueError, match="serial_number"):
        AgvAddress("acme", "a/b")


def test_behaviours_become_stops() -> None:
    s = site()
    assert [x.station for x in s.stops("MOVE", {"object": "B"})] == ["B"]
    place = s.stops("PLACE", {"object": "p1"})
    assert [(x.station, [a for a, _ in x.actions]) for x in place] == [
        ("A", ["pick"]), ("B", ["drop"])
    ]  # fmt: skip
    params = place[0].actions[0][1]
    assert params == {"stationType": "floor", "stationName": "A", "loadType": "EPAL",
                      "loadId": "p1", "duration": 0.5}  # fmt: skip
    assert [x.station for x in s.stops("transport", {"object": "p2", "to": "home"})] == [
        "C",
        "home",
    ]
    for behaviour, params, reason in [
        ("WELD", {"object": "p1"}, "unsupported_behaviour"),
        ("MOVE", {"object": "Z"}, "unknown_station"),
        ("PICK", {"object": "p9"}, "unknown_load"),
        ("PLACE", {"object": "p2"}, "no_goal"),
    ]:
        with pytest.raises(BehaviourError) as err:
            s.stops(behaviour, params)
        assert err.value.reason == reason and reason in str(err.value)


def test_site_config_errors_name_the_entry() -> None:
    with pytest.raises(ValueError, match=r"stations\.A: needs numbers x and y"):
        site_from_config({"A": {"x": 1}}, {}, {})
    with pytest.raises(ValueError, match=r"loads\.p: unknown key"):
        site_from_config(STATIONS, {"p": {"at": "A", "weight": 3}}, {})
    with pytest.raises(ValueError, match="unknown station 'Q'"):
        site_from_config(STATIONS, {"p": {"at": "Q"}}, {})


behaviours = st.one_of(
    st.tuples(st.just("MOVE"), st.sampled_from(sorted(STATIONS))),
    st.tuples(st.sampled_from(["PLACE", "PICK", "DROP"]), st.just("p1")),
    st.tuples(st.just("TRANSPORT"), st.just("p2")),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(behaviours, st.booleans()), min_size=1, max_size=8))
def test_orders_are_valid_chains(schemas: SchemaCheck, plan) -> None:
    """Any sequence of behaviours, each sent as a new order or as an update of the
    previous one, gives schema-valid orders with even node / odd edge sequence ids in
    steps of one, edges joining their nodes, updates starting where the last ended,
    and action ids unique over the whole run."""
    s = site()
    builder = OrderBuilder("drv")
    headers = Headers(AgvAddress("acme", "agv7"))
    seen_actions: set[str] = set()
    previous = None
    for i, ((behaviour, obj), extend) in enumerate(plan):
        params = {"object": obj, "to": "home"} if behaviour != "MOVE" else {"object": obj}
        stops = s.stops(behaviour, params)
        sent = builder.build(stops, s, command_id=f"c{i}", extend=extend, start_node="n0",
                             start_position={"x": 0.0, "y": 0.0, "mapId": "local"})  # fmt: skip
        message = headers.stamp("order", sent.body)
        assert schemas.errors("order", message) == []
        nodes, edges = sent.body["nodes"], sent.body["edges"]
        assert len(edges) == len(nodes) - 1 == len(stops)
        seqs = [n["sequenceId"] for n in nodes]
        assert seqs[0] % 2 == 0 and seqs == list(range(seqs[0], seqs[0] + 2 * len(nodes), 2))
        for k, edge in enumerate(edges):
            assert edge["sequenceId"] == nodes[k]["sequenceId"] + 1
            assert (edge["startNodeId"], edge["endNodeId"]) == (
                nodes[k]["nodeId"],
                nodes[k + 1]["nodeId"],
            )
        if extend and previous is not None:
            assert sent.order_id == previous.order_id
            assert sent.order_update_id == previous.order_update_id + 1
            assert (nodes[0]["nodeId"], nodes[0]["sequenceId"]) == previous.last_node
        else:
            assert sent.order_update_id == 0 and nodes[0]["nodeId"] == "n0"
            assert previous is None or sent.order_id != previous.order_id
        ids = [a for a, _ in sent.actions]
        assert not seen_actions & set(ids)
        seen_actions |= set(ids)
        previous = sent


def test_instant_actions_are_valid(schemas: SchemaCheck) -> None:
    headers = Headers(AgvAddress("acme", "agv7"))
    for kind in ("cancelOrder", "startPause", "stopPause", "factsheetRequest"):
        actions = [instant_action(kind, f"id-{kind}")]
        msg = headers.stamp("instantActions", {"actions": actions, "instantActions": actions})
        assert schemas.errors("instantActions", msg) == []
    bad = headers.stamp("instantActions", {"actions": [{"actionType": "x"}]})
    assert schemas.errors("instantActions", bad)  # actionId and blockingType missing


def _state(sent, **kw):
    base = {"orderId": sent.order_id, "orderUpdateId": sent.order_update_id, "errors": [],
            "nodeStates": [], "edgeStates": [], "actionStates": []}  # fmt: skip
    return {**base, **kw}


def test_assess_reads_progress_from_the_state() -> None:
    s = site()
    sent = OrderBuilder("d").build(s.stops("PLACE", {"object": "p1"}), s, command_id="c",
                                   extend=False, start_node="n0", start_position=None)  # fmt: skip
    nodes = [{"nodeId": n, "sequenceId": q, "released": True} for n, q in sent.nodes]
    running = [{"actionId": a, "actionType": t, "actionStatus": "WAITING"} for a, t in sent.actions]
    assert assess(sent, {"orderId": "", "orderUpdateId": 0, "errors": []}) is None
    assert assess(sent, _state(sent, nodeStates=nodes, actionStates=running)).status == "accepted"
    done = [{**a, "actionStatus": "FINISHED"} for a in running]
    assert assess(sent, _state(sent, actionStates=done)).status == "finished"
    # nodes passed but the drop still running: not finished
    half = [done[0], running[1]]
    assert assess(sent, _state(sent, actionStates=half)).status == "accepted"
    failed = [done[0], {**running[1], "actionStatus": "FAILED", "resultDescription": "jammed"}]
    verdict = assess(sent, _state(sent, actionStates=failed))
    assert verdict.status == "failed" and "drop failed: jammed" in verdict.reason
    # a rejection names our order; an error about someone else's order is not ours
    other = {"errorType": "orderError", "errorDescription": "nope", "errorLevel": "WARNING",
             "errorReferences": [{"referenceKey": "orderId", "referenceValue": "x-1"}]}  # fmt: skip
    ours = {**other, "errorDescription": "no route", "errorReferences": [
        {"referenceKey": "topic", "referenceValue": "order"},
        {"referenceKey": "orderId", "referenceValue": sent.order_id},
        {"referenceKey": "orderUpdateId", "referenceValue": "0"}]}  # fmt: skip
    idle = {"orderId": "", "orderUpdateId": 0, "nodeStates": [], "actionStates": []}
    assert assess(sent, {**idle, "errors": [other]}) is None
    verdict = assess(sent, {**idle, "errors": [other, ours]})
    assert verdict.status == "rejected" and verdict.reason == "orderError: no route"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["WAITING", "INITIALIZING", "RUNNING", "PAUSED", "FINISHED"]),
             min_size=2, max_size=2),
    st.lists(st.booleans(), min_size=2, max_size=2),
)  # fmt: skip
def test_finished_only_when_everything_is_done(statuses, pending) -> None:
    s = site()
    sent = OrderBuilder("d").build(s.stops("PLACE", {"object": "p1"}), s, command_id="c",
                                   extend=False, start_node="n0", start_position=None)  # fmt: skip
    nodes = [{"nodeId": n, "sequenceId": q, "released": True}
             for (n, q), p in zip(sent.nodes, pending, strict=True) if p]  # fmt: skip
    actions = [{"actionId": a, "actionType": t, "actionStatus": st_}
               for (a, t), st_ in zip(sent.actions, statuses, strict=True)]  # fmt: skip
    verdict = assess(sent, _state(sent, nodeStates=nodes, actionStates=actions))
    everything = not any(pending) and all(x == "FINISHED" for x in statuses)
    assert (verdict.status == "finished") == everything


CONFIG = """
[team]
name = "t"

[mission]
kind = "tasktree"
tree = "p1"

[[agents]]
id = "agv7"
kind = "robot"
profile = "pr2"

[[agents]]
id = "agv7-driver"
kind = "vda5050_driver"
role = "service"
{keys}

[agents.stations.A]
x = 1.0
y = 0.0

[agents.loads.p1]
at = "A"
"""


@pytest.mark.parametrize(
    ("keys", "key", "text"),
    [
        ('serial_number = "s"', "agents[1].manufacturer", "is missing"),
        ('manufacturer = "m"\nserial_number = "a/b"', "agents[1].serial_number", "without /"),
        ('manufacturer = "m"\nserial_number = "s"\nversion = "1.1.0"', "agents[1].version",
         "2.0.0, 2.1.0"),
        ('manufacturer = "m"\nserial_number = "s"\nagv_broker = "localhost"', "agents[1].agv_broker",
         "mqtt://"),
        ('manufacturer = "m"\nserial_number = "s"\nspeed = 3', "agents[1]", "unknown key(s) speed"),
    ],
)  # fmt: skip
def test_driver_config_errors_name_the_key(tmp_path, keys, key, text) -> None:
    from teamtree.agents import load_config, validate_kinds
    from teamtree.broker import ConfigError

    path = tmp_path / "team.toml"
    path.write_text(CONFIG.format(keys=keys))
    with pytest.raises(ConfigError) as err:
        validate_kinds(load_config(path))
    assert err.value.key == key and text in str(err.value)


def test_driver_config_defaults(tmp_path) -> None:
    from teamtree.agents import AGENT_KINDS, load_config

    path = tmp_path / "team.toml"
    path.write_text(CONFIG.format(keys='manufacturer = "m"\nserial_number = "s"'))
    cfg = load_config(path)
    params = AGENT_KINDS["vda5050_driver"].params_from_config(cfg.agent("agv7-driver"), cfg)
    assert params["agent"] == "agv7"  # the robot whose driver it is
    assert (params["interface_name"], params["version"], params["agv_broker"]) == (
        "uagv",
        "2.0.0",
        None,
    )
    assert params["site"].where == {"p1": "A"}
