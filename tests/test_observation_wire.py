"""The driver's ``observation`` body is a declared type (``ObservationBody``): what the
simulated world shows decodes to it and back unchanged, any other body decodes or names
its fault, docs/protocol.md lists its fields, and a robot drops a malformed one with
the runtime's drop warning naming the field, and keeps going."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.web.state import WebState
from teamtree.agents.runtime.observation_wire import (
    HandView,
    ObjectView,
    ObservationBody,
    ObservationWireError,
    RobotView,
    WorldStateBody,
    decode_observation,
    decode_world_state,
)
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build, parse
from teamtree.drivers.observation_delta import ObservationDelta
from teamtree.drivers.vda5050.driver import Vda5050DriverAgent
from teamtree.drivers.vda5050.site import site_from_config
from teamtree.hardware.world import World
from teamtree.planners.tasktree import parse_tree
from tests.test_protocol_docs import braces, fields, keys
from tests.wire_strategies import WIRE_INTS

DOCS = Path(__file__).resolve().parent.parent / "docs"
OBJECTS = {
    "cup": {"shape": "cylinder", "dims": [0.04, 0.1], "position": [0.6, 0.1, 0.75],
            "goal": [0.6, -0.2, 0.75]},
    "tea": {"shape": "box", "dims": [0.05, 0.05, 0.1], "position": [0.5, 0.2, 0.75]},
}  # fmt: skip


def driver_body(world: World, robot: str, t: float) -> dict[str, Any]:
    """What the simulated driver publishes (drivers/sim_driver.py), over the wire."""
    obs = world.observe(robot, t)
    key = ObservationDelta().body(  # a keyframe: every object, "full": true
        obs["t"], obs["robot"], obs["objects"], obs.get("hands"), now=0.0, every_s=0.1
    )
    return msgpack.unpackb(msgpack.packb(key), raw=False)


def test_the_worlds_observation_decodes_and_encodes_back_unchanged() -> None:
    world = World.from_spec(
        OBJECTS, {"pr2": {"profile": "pr2", "base": [0, 0, 0]}}, {"alice": {"rest": [1, 0, 0.9]}}
    )
    assert world.execute("pr2", "c1", "n1", "place", {"object": "cup"}, 0.0)["ok"]
    seen = []
    for t in (0.5, 2.0, 60.0):
        body = driver_body(world, "pr2", t)
        obs = decode_observation(body)
        assert msgpack.unpackb(msgspec.msgpack.encode(obs), raw=False) == body
        seen.append(obs)
    assert seen[0].robot.command_id == "c1" and seen[0].robot.node == "n1"
    assert seen[-1].robot.command_id is None and seen[-1].objects["cup"].at_goal


def test_the_vda5050_bridges_observation_is_read_with_defaults() -> None:
    """The VDA 5050 bridge sends little: ``busy`` a bool, no goals, extra robot keys
    (``connection``, ``battery``: ignored)."""
    site = site_from_config({"A": {"x": 1, "y": 2}, "B": {"x": 3, "y": 0}},
                            {"p1": {"at": "A", "goal": "B"}}, {})  # fmt: skip
    driver = Vda5050DriverAgent(
        "agv7-driver", team="t1", endpoint=Endpoint("127.0.0.1", 1), agent="agv7",
        manufacturer="m", serial_number="s1", site=site, validate=False,
    )  # fmt: skip
    driver.connection_state = "ONLINE"
    driver.agv_state = {"agvPosition": {"x": 1.0, "y": 2.0, "theta": 0.5},
                        "batteryState": {"batteryCharge": 80}}  # fmt: skip
    obs = decode_observation(msgpack.unpackb(msgpack.packb(driver.observation()), raw=False))
    assert obs.robot.command_id is None and obs.robot.arm == (1.0, 2.0, 0.0)
    assert obs.objects["B"] == ObjectView("box", (0.5, 0.5, 0.05), (3.0, 0.0, 0.0))
    assert set(obs.objects) == {"A", "B", "p1"} and obs.hands == {}
    assert driver.observation()["robot"]["errors"] == []
    driver.agv_state["errors"] = [
        {"errorType": "noRouteError", "errorLevel": "WARNING", "errorDescription": "B blocked"},
        "not an error object",
    ]
    assert driver.observation()["robot"]["errors"] == ["noRouteError: B blocked"]
    for hostile in (3, "errors", {"errorType": "x"}, None):  # never raised on
        driver.agv_state["errors"] = hostile
        assert driver.observation()["robot"]["errors"] == []


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("t",), "now", "$.t"),
        (("robot", "arm"), [1, 2], "$.robot.arm"),
        (("robot", "busy"), 3, "$.robot.busy"),
        (("objects", "cup", "position"), None, "$.objects[...].position"),
        (("objects", "cup", "at_goal"), "yes", "$.objects[...].at_goal"),
        (("hands", "alice", "track"), [[0, 1, 2]], "$.hands[...].track[0]"),
    ],
)
def test_a_bad_field_is_named(path: tuple[str, ...], value: Any, named: str) -> None:
    """msgspec names a map's entries ``[...]``: the field, not the object's name."""
    body = {"t": 0.0, "robot": {"arm": [0, 0, 1]},
            "objects": {"cup": {"shape": "box", "dims": [1, 1, 1], "position": [0, 0, 0]}},
            "hands": {"alice": {"position": [0, 0, 0]}}}  # fmt: skip
    where: Any = body
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    with pytest.raises(ObservationWireError, match=re.escape(f"`{named}`")):
        decode_observation(body)


scalars = st.none() | st.booleans() | WIRE_INTS | st.floats() | st.text(max_size=6)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)  # fmt: skip
vec = st.lists(st.floats(-2, 2) | st.integers(-2, 2) | st.text(max_size=2), min_size=2, max_size=4)
robots = st.fixed_dictionaries(
    {"arm": vec}, optional={"base": vec, "busy": scalars, "yaw": scalars, "paused": scalars}
)
objects = st.fixed_dictionaries(
    {"shape": st.sampled_from(["box", "cylinder", 3]), "dims": vec, "position": vec},
    optional={"goal": vec | st.none(), "at_goal": scalars, "held_by": scalars},
)
bodies = values | st.fixed_dictionaries(
    {"t": scalars, "robot": robots | values, "objects": st.dictionaries(st.text(max_size=3), objects | values, max_size=3)},
    optional={"hands": values},
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(bodies)
def test_any_observation_body_decodes_or_names_its_fault(body: Any) -> None:
    try:
        obs = decode_observation(body)
    except ObservationWireError as exc:
        assert str(exc).startswith("bad observation body: ")
        return
    assert decode_observation(msgspec.to_builtins(obs)) == obs


def test_protocol_md_observation_body_matches_the_types() -> None:
    text = (DOCS / "protocol.md").read_text()
    start = text.index("`<driver>/observation` (`observation`")
    documented = keys(braces(text, start))
    assert set(documented) == fields(ObservationBody)
    assert set(keys(braces(documented["robot"]))) == fields(RobotView)
    assert set(keys(braces(braces(documented["objects"])))) == fields(ObjectView)
    assert set(keys(braces(braces(documented["hands"])))) == fields(HandView)


def _incoming(body: Any, hid: int) -> Incoming:
    topic = build("t1", "pr2-driver", "observation")
    env = Envelope("observation", "pr2-driver", hid, 1, HlcStamp(1, 0, "pr2-driver"), body)
    return Incoming(topic, encode(env), False, 0)


def test_a_robot_drops_a_malformed_observation_naming_the_field_and_reads_the_next() -> None:
    world = World.from_spec(OBJECTS, {"pr2": {"profile": "pr2", "base": [0, -0.65, 0]}})
    good = driver_body(world, "pr2", 0.0)
    bad = driver_body(world, "pr2", 0.0)
    bad["objects"]["cup"]["position"] = [0.6, "left", 0.75]

    async def run() -> RobotAgent:
        robot = RobotAgent(
            "pr2", team="t1", endpoint=Endpoint("127.0.0.1", 1),
            tree=parse_tree("AND(PLACE(object=cup), PLACE(object=tea))"),
            params=RobotParams(profile="pr2", driver="pr2-driver", metric="distance"),
            roster=["pr2"],
        )  # fmt: skip
        await robot.setup()
        await robot.receiver.receive(_incoming(bad, 1))
        assert robot.world.objects == {}
        await robot.receiver.receive(_incoming(good, 2))
        return robot

    with structlog.testing.capture_logs() as logs:
        robot = asyncio.run(run())
    drops = [e for e in logs if e["event"] == "message.dropped"]
    assert len(drops) == 1 and drops[0]["reason"] == "malformed"
    assert "$.objects[...].position[1]" in drops[0]["detail"], drops[0]
    assert robot.stats["dropped.malformed"] == 1
    assert set(robot.world.objects) == {"cup", "tea"}
    assert robot.world.arm_position == tuple(good["robot"]["arm"])


def test_the_worlds_state_is_a_world_state_body() -> None:
    world = World.from_spec(
        OBJECTS, {"pr2": {"profile": "pr2", "base": [0, 0, 0]}}, {"alice": {"rest": [1, 0, 0.9]}}
    )
    assert world.execute("pr2", "c1", "n1", "place", {"object": "cup"}, 0.0)["ok"]
    for t in (0.5, 60.0):
        body = msgpack.unpackb(msgpack.packb(world.state(t, shared=True)), raw=False)
        state = decode_world_state(body)
        back = msgpack.unpackb(msgspec.msgpack.encode(state), raw=False)
        assert back["hands"]["alice"].pop("track") == []  # the state carries no track
        assert back == body
    assert state.objects["cup"].at_goal and state.violations == 0


@settings(max_examples=100, deadline=None)
@given(bodies | st.fixed_dictionaries({"t": scalars, "objects": values, "robots": values,
                                       "violations": scalars}))  # fmt: skip
def test_any_world_state_body_decodes_or_names_its_fault(body: Any) -> None:
    try:
        state = decode_world_state(body)
    except ObservationWireError as exc:
        assert str(exc).startswith("bad world.state body: ")
        return
    assert decode_world_state(msgspec.to_builtins(state)) == state


def test_an_observer_ignores_a_malformed_world_state() -> None:
    web = WebState("t1")
    topic = parse(build("t1", "world", "state"))
    world = World.from_spec(OBJECTS, {"pr2": {"profile": "pr2", "base": [0, 0, 0]}})
    good = msgpack.unpackb(msgpack.packb(world.state(0.0)), raw=False)
    web.feed(Envelope("world.state", "world", 1, 1000, HlcStamp(1000, 0, "world"), good), topic)
    bad = {**good, "violations": "many"}
    web.feed(Envelope("world.state", "world", 2, 2000, HlcStamp(2000, 0, "world"), bad), topic)
    assert web.world["violations"] == 0 and set(web.world["objects"]) == {"cup", "tea"}


def test_protocol_md_world_state_body_matches_the_type() -> None:
    text = (DOCS / "protocol.md").read_text()
    start = text.index("`<world>/state` (`world.state`")
    assert set(keys(braces(text, start))) == fields(WorldStateBody)
