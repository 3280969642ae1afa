"""Observations of changed objects only (``objects_since``): a driver that merges them
(``merge_changed``) sees every object exactly as a full observation shows it, through
PLACEs (held objects move with the arm), moves by hand, cancels and idle polls; and
the ZeroMQ request keeps working without the field (older clients)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.drivers import merge_changed
from teamtree.hardware import World
from teamtree.hardware.sim_protocol import answer
from teamtree.hardware.sim_wire import encode

CUP = {"shape": "cylinder", "dims": [0.04, 0.10], "position": [0.10, -0.05, 0.80],
       "goal": [-0.05, 0.05, 0.80]}  # fmt: skip
APPLE = {"shape": "sphere", "dims": [0.04], "position": [0.45, 0.20, 0.79],
         "goal": [-0.30, -0.60, 0.79]}  # fmt: skip
BOX = {"shape": "box", "dims": [0.1, 0.1, 0.04], "position": [0.2, 0.3, 0.77],
       "goal": [-0.3, 0.2, 0.77]}  # fmt: skip
ROBOTS = {
    "pr2": {"profile": "pr2", "base": [-0.75, 0.0, 0.0], "yaw": 0.0},
    "baxter": {"profile": "baxter", "base": [0.95, 0.0, 0.0], "yaw": math.pi},
}
NAMES = ["cup", "apple", "box"]


def make_world() -> World:
    return World.from_spec({"cup": CUP, "apple": APPLE, "box": BOX}, ROBOTS)


def test_first_observation_has_every_object_then_only_changes() -> None:
    w = make_world()
    first = w.observe("pr2", 0.0, objects_since=0)
    assert set(first["objects"]) == set(NAMES)
    version = first["objects_version"]
    assert w.observe("pr2", 0.1, objects_since=version)["objects"] == {}
    assert w.observe("baxter", 0.1, objects_since=version)["objects"] == {}  # one counter
    w.move_object("cup", [0.0, 0.1, 0.8], 0.2)
    again = w.observe("baxter", 0.3, objects_since=version)
    assert list(again["objects"]) == ["cup"] and again["objects_version"] > version
    assert "objects_version" not in w.observe("pr2", 0.4)  # as before without it
    assert set(w.observe("pr2", 0.4)["objects"]) == set(NAMES)


def test_a_version_the_world_never_gave_gets_every_object() -> None:
    w = make_world()
    w.observe("pr2", 0.0, objects_since=0)
    assert set(w.observe("pr2", 0.1, objects_since=10**6)["objects"]) == set(NAMES)


OPS = st.one_of(
    st.tuples(st.just("place"), st.sampled_from(["pr2", "baxter"]), st.sampled_from(NAMES)),
    st.tuples(
        st.just("move"),
        st.sampled_from(NAMES),
        st.floats(-0.4, 0.4),
        st.floats(-0.4, 0.4),
    ),
    st.tuples(st.just("cancel"), st.sampled_from(["pr2", "baxter"])),
    st.tuples(st.just("wait"), st.floats(0.01, 3.0)),
)


@settings(max_examples=60, deadline=None, print_blob=True)
@given(st.lists(OPS, max_size=25), st.lists(st.booleans(), min_size=25, max_size=25))
def test_merged_changes_equal_the_full_view(ops: list[tuple], polls: list[bool]) -> None:
    w = make_world()
    t = 0.0
    seen = {robot: ({}, 0) for robot in ROBOTS}  # each driver: (objects, version)
    for i, op in enumerate(ops):
        t += 0.05
        match op:
            case ("place", robot, obj):
                w.execute(robot, f"c{i}", "n", "PLACE", {"object": obj}, t)
            case ("move", obj, x, y):
                w.move_object(obj, [x, y, 0.8], t)
            case ("cancel", robot):
                w.cancel(robot, None, t)
            case ("wait", dt):
                t += dt
        for robot, (objects, version) in seen.items():
            if robot == "baxter" and not polls[i]:
                continue  # a driver that skips polls still catches up
            reply = w.observe(robot, t, objects_since=version)
            objects, version = merge_changed(objects, version, reply)
            seen[robot] = (objects, version)
            assert objects == w.observe(robot, t)["objects"], f"after op {i}: {op}"


def test_over_zeromq_with_and_without_objects_since() -> None:
    w = make_world()

    def ask(**fields: object) -> dict:
        return answer(w, encode({"op": "observe", "rid": 1, **fields}), 0.5)

    full = ask(robot="pr2")
    assert set(full["objects"]) == set(NAMES) and "objects_version" not in full
    first = ask(robot="pr2", objects_since=0)
    assert set(first["objects"]) == set(NAMES)
    later = ask(robot="pr2", objects_since=first["objects_version"])
    assert later["ok"] and later["objects"] == {}
    bad = ask(robot="pr2", objects_since=-1)
    assert bad["reason"] == "bad_request" and "objects_since" in bad["detail"]
