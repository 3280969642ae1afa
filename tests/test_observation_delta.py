"""Changed-only observations (drivers/observation_delta.py) and their merge at the robot
(observation_wire.merge_objects): whatever a receiver skipped, the newest keyframe plus
the newest delta give every object within the thresholds of the truth."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.runtime.observation_wire import decode_observation, merge_objects
from teamtree.drivers.observation_delta import ObservationDelta

ROBOT = {"arm": [0.0, 0.0, 1.0], "busy": None}


def world(n: int) -> dict[str, dict]:
    return {f"o{i}": {"shape": "box", "dims": [0.05] * 3, "position": [0.1 * i, 0.0, 0.8],
                      "yaw": 0.0, "at_goal": False, "held_by": None} for i in range(n)}  # fmt: skip


@settings(max_examples=60, deadline=None, print_blob=True)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 5), st.floats(0.0, 0.01), st.booleans()), min_size=1,
        max_size=60,
    ),
    delivered=st.lists(st.booleans(), min_size=60, max_size=60),
)  # fmt: skip
def test_newest_keyframe_and_newest_delta_give_every_object(steps, delivered) -> None:
    """Objects only move forward (as they do, table to goal); a receiver gets any subset
    of the bodies (the inbound queue keeps only the newest observation) but always the
    newest keyframe and the newest body. Its merged view is the truth within 1 mm,
    and exact in every field but the pose."""
    delta = ObservationDelta(keyframe_s=0.5)
    objects = world(6)
    bodies = []
    for k, (i, dx, goal) in enumerate(steps):
        o = objects[f"o{i}"] = dict(objects[f"o{i}"])
        o["position"] = [o["position"][0] + dx, 0.0, 0.8]
        o["at_goal"] = o["at_goal"] or goal
        body = delta.body(k * 0.05, ROBOT, objects, now=k * 0.1 * 1.0, every_s=0.1)
        if body is not None:
            bodies.append(body)
    last_key = max(i for i, b in enumerate(bodies) if b["full"])
    seen = [b for i, b in enumerate(bodies) if i in (last_key, len(bodies) - 1)
            or (i > last_key and delivered[i % 60])]  # fmt: skip
    known = None
    for body in seen:
        known = merge_objects(known, decode_observation(body))
    assert known is not None and set(known) == set(objects)
    for name, truth in objects.items():
        got = known[name]
        assert math.dist(got.position, truth["position"]) <= 0.001 + 1e-12, name
        assert got.at_goal == truth["at_goal"], name


def test_deltas_carry_only_what_moved_and_a_late_joiner_waits_for_a_keyframe() -> None:
    delta = ObservationDelta(keyframe_s=1.0)
    objects = world(50)
    first = delta.body(0.0, ROBOT, objects, now=0.0, every_s=0.1)
    assert first is not None and first["full"] and len(first["objects"]) == 50
    assert delta.body(0.0, ROBOT, objects, now=0.05, every_s=0.1) is None  # nothing new
    keep_alive = delta.body(0.0, ROBOT, objects, now=0.2, every_s=0.1)
    assert keep_alive is not None and keep_alive["objects"] == {} and not keep_alive["full"]
    objects["o7"] = dict(objects["o7"], position=[0.7005, 0.0, 0.8])  # 0.5 mm: below
    assert delta.body(0.0, ROBOT, objects, now=0.25, every_s=0.1) is None
    objects["o7"] = dict(objects["o7"], position=[0.75, 0.0, 0.8])
    moved = delta.body(0.0, ROBOT, objects, now=0.3, every_s=0.1)
    assert moved is not None and list(moved["objects"]) == ["o7"]
    objects["o8"] = dict(objects["o8"], held_by="r1")  # not the pose: always a change
    both = delta.body(0.0, ROBOT, objects, now=0.35, every_s=0.1)
    assert both is not None and sorted(both["objects"]) == ["o7", "o8"]  # cumulative
    # a robot that starts now sees deltas first: it waits for the keyframe
    assert merge_objects(None, decode_observation(both)) is None
    key = delta.body(0.0, ROBOT, objects, now=1.0, every_s=0.1)
    assert key is not None and key["full"] and len(key["objects"]) == 50
    known = merge_objects(None, decode_observation(key))
    assert known is not None and known["o8"].held_by == "r1"


def test_a_body_without_full_is_every_object() -> None:
    """Drivers that do not send deltas (the VDA 5050 bridge, third-party ones)."""
    body = {"t": 1.0, "robot": ROBOT, "objects": world(2)}
    known = merge_objects({"gone": None}, decode_observation(body))  # type: ignore[dict-item]
    assert known is not None and set(known) == {"o0", "o1"}
