"""World.restore: a world restarted within one mission takes its objects' poses and
placed state from its predecessor's last ``world.state`` (hardware/world/restore.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from teamtree.broker import SpecificationError
from teamtree.hardware import World
from tests.test_world_model import APPLE, CUP, FAR, ROBOTS, place

SPEC = {"cup": CUP, "apple": APPLE, "far": FAR}
HANDS = {"alice": {"rest": [0.0, 0.6, 0.9], "speed": 0.5}}


def fresh(**kw) -> World:
    return World.from_spec(SPEC, ROBOTS, **kw)


coordinate = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
#: where one object ends up: at its goal (within the tolerance), or anywhere
placement = st.one_of(
    st.tuples(st.just("goal"), st.tuples(*[st.floats(-0.01, 0.01)] * 3), st.floats(-3.0, 3.0)),
    st.tuples(st.just("anywhere"), st.tuples(coordinate, coordinate, coordinate),
              st.floats(-math.pi, math.pi)),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SPEC)), placement), st.floats(0.0, 100.0))
def test_restore_round_trips_object_poses(placements, t) -> None:
    before = fresh()
    for name, (where, offset, yaw) in placements.items():
        base = before.objects[name].goal if where == "goal" else (0.0, 0.0, 0.0)
        position = [b + o for b, o in zip(base, offset, strict=True)]
        # not on the tolerance's edge, where the views' 0.1 mm rounding may flip at_goal
        assume(abs(math.dist(position, before.objects[name].goal) - 0.02) > 1e-3)
        assert before.move_object(name, position, t, yaw=yaw)["ok"]
    state = before.state(t)
    after = fresh()
    assert after.restore(state) == sorted(SPEC)
    assert after.state(0.0)["objects"] == state["objects"]
    # and again: a restored world's state restores to the same
    again = fresh()
    again.restore(after.state(0.0))
    assert again.state(0.0)["objects"] == state["objects"]


def test_a_placed_object_stays_placed() -> None:
    before = fresh()
    assert place(before, "pr2", "cup", "c1", 0.0)["ok"]
    before.advance(60.0)
    state = before.state(60.0)
    assert state["objects"]["cup"]["at_goal"] and before.violations == []
    after = fresh()
    after.restore(state)
    cup = after.state(0.0)["objects"]["cup"]
    assert cup["at_goal"] and cup["position"] == state["objects"]["cup"]["position"]
    # it counts as placed: placing it again is a second place, as in the old world
    assert place(after, "pr2", "cup", "c2", 0.0)["ok"]
    after.advance(60.0)
    assert [v["kind"] for v in after.violations] == ["placed_twice"]


def test_an_object_held_at_the_crash_is_put_down_where_last_shown() -> None:
    before = fresh()
    assert place(before, "pr2", "cup", "c1", 0.0)["ok"]
    t = 0.0  # mid-carry: the cup held and away from its start
    while True:
        t += 0.05
        assert t < 30.0
        state = before.state(t)
        shown = state["objects"]["cup"]
        if shown["held_by"] is not None and shown["position"] != CUP["position"]:
            break
    assert shown["held_by"] == "pr2"
    after = fresh()
    after.restore(state)
    cup = after.state(0.0)["objects"]["cup"]
    assert cup["held_by"] is None and cup["position"] == shown["position"]
    assert after.objects["cup"].placements == 0
    # nobody holds it: a robot may take it from there, without a violation
    assert place(after, "pr2", "cup", "c2", 0.0)["ok"]
    after.advance(60.0)
    assert after.state(60.0)["objects"]["cup"]["at_goal"] and after.violations == []


def test_an_object_in_a_hand_is_put_down_too() -> None:
    before = fresh(hands=HANDS)
    assert before.hand_reach("alice", "h1", "apple", 0.0, then="hold")["ok"]
    before.advance(30.0)
    state = before.state(30.0)
    assert state["objects"]["apple"]["held_by"] == "alice"
    after = World.from_spec(SPEC, ROBOTS, HANDS)
    after.restore(state)
    apple = after.state(0.0)["objects"]["apple"]
    assert apple["held_by"] is None
    assert apple["position"] == state["objects"]["apple"]["position"]
    assert after.state(0.0)["hands"]["alice"]["holding"] is None


def test_objects_the_state_lacks_keep_their_config_pose() -> None:
    before = fresh()
    before.move_object("cup", [0.2, 0.2, 0.8], 0.0, yaw=1.0)
    state = before.state(0.0)
    del state["objects"]["apple"]
    after = fresh()
    assert after.restore(state) == ["cup", "far"]
    assert after.objects["apple"].position == tuple(APPLE["position"])
    assert after.objects["cup"].position == (0.2, 0.2, 0.8) and after.objects["cup"].yaw == 1.0


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ({}, "no objects table"),
        ({"objects": []}, "no objects table"),
        ({"objects": {"mug": {"position": [0, 0, 0]}}}, "'mug', which this world lacks"),
        ({"objects": {"cup": [1, 2, 3]}}, "'cup' is not a table"),
        ({"objects": {"cup": {"position": [0, 0]}}}, "position"),
        ({"objects": {"cup": {"position": [0, 0, float("nan")]}}}, "not finite"),
        ({"objects": {"cup": {"position": [0, 0, 1], "yaw": "north"}}}, "yaw"),
        ({"objects": {"cup": {"position": [0, 0, 1], "yaw": float("inf")}}}, "yaw"),
    ],
)
def test_a_bad_state_changes_nothing(state, why) -> None:
    world = fresh()
    good = {"apple": {"position": [0.3, 0.3, 0.8], "yaw": 0.5}}
    state = (
        {**state, "objects": {**good, **state["objects"]}}
        if isinstance(state.get("objects"), dict)
        else state
    )
    before = world.state(0.0)
    with pytest.raises(SpecificationError, match=why):
        world.restore(state)
    assert world.state(0.0) == before


def test_a_running_world_is_not_restored() -> None:
    world = fresh()
    assert place(world, "pr2", "cup", "c1", 0.0)["ok"]
    with pytest.raises(SpecificationError, match="busy"):
        world.restore(fresh().state(0.0))
