"""The pure world model: PLACE durations, reach, busy, held, cancel/pause/resume,
idempotency per command id, violations; and the robot profiles."""

from __future__ import annotations

import math
import random

import pytest

from teamtree.broker import SpecificationError
from teamtree.hardware import (
    BAXTER,
    PR2,
    CommandStatus,
    RobotProfileSpec,
    World,
    arm_base_position,
    arm_model,
    can_place,
    drive_to_reach,
    profile,
)

TABLE_Z = 0.75
CUP = {"shape": "cylinder", "dims": [0.04, 0.10], "position": [0.10, -0.05, 0.80],
       "goal": [-0.05, 0.05, 0.80]}  # fmt: skip
APPLE = {"shape": "sphere", "dims": [0.04], "position": [0.45, 0.20, 0.79],
         "goal": [-0.30, -0.60, 0.79]}  # fmt: skip
FAR = {"shape": "box", "dims": [0.1, 0.1, 0.04], "position": [0.9, 0.0, 0.77],
       "goal": [-0.3, 0.2, 0.77]}  # fmt: skip
ROBOTS = {
    "pr2": {"profile": "pr2", "base": [-0.75, 0.0, 0.0], "yaw": 0.0},
    "baxter": {"profile": "baxter", "base": [0.95, 0.0, 0.0], "yaw": math.pi},
}


def make_world(**objects: dict) -> World:
    return World.from_spec(objects or {"cup": CUP, "apple": APPLE, "far": FAR}, ROBOTS)


def place(world: World, robot: str, obj: str, cid: str, t: float, node: str = "n") -> dict:
    return world.execute(robot, cid, node, "PLACE", {"object": obj}, t)


def events(world: World, robot: str | None = None) -> list[tuple[str, str, str | None]]:
    return [(e["kind"], e["command_id"], e["reason"]) for e in world.events_since(0, robot)]


def finished_at(world: World, cid: str) -> float:
    (t,) = [
        e["t"] for e in world.events_since(0) if e["command_id"] == cid and e["kind"] == "finished"
    ]
    return t


def expected_fixed(world: World, robot: str, obj: str) -> float:
    """approach + grasp + carry + release for a robot that need not drive."""
    body, o = world.robots[robot], world.objects[obj]
    spec = body.spec
    return (
        math.dist(body.arm, o.position) / spec.arm_speed
        + spec.grasp_time
        + math.dist(o.position, o.goal) / spec.arm_speed
        + spec.release_time
    )


# -- profiles ----------------------------------------------------------------------


def test_profiles_and_arm_model() -> None:
    assert profile("pr2") is PR2 and profile("baxter") is BAXTER
    assert PR2.mobile_base and not BAXTER.mobile_base
    assert str(PR2.orientation) == "sideways" and str(BAXTER.orientation) == "top_down"
    with pytest.raises(SpecificationError, match="pr2"):
        profile("r2d2")
    arm = arm_model("pr2", (1.0, 2.0, 0.0, math.pi / 2))
    assert arm.base_position == pytest.approx((1.0 + 0.19, 2.0, 0.75))
    assert arm.mobile_base and arm.base_travel == PR2.base_travel
    assert arm_model(PR2, (1.0, 2.0, 0.0), yaw=math.pi / 2).base_position == arm.base_position
    fixed = arm_model(BAXTER, (0.0, 0.0, 0.0))
    assert not fixed.mobile_base and fixed.base_travel == 0.0
    assert fixed.gripper_max_width == BAXTER.gripper_max_width
    assert str(fixed.orientation) == "top_down"
    assert RobotProfileSpec.from_dict(PR2.to_dict()) == PR2
    with pytest.raises(SpecificationError):
        RobotProfileSpec.from_dict({"name": "x"})
    with pytest.raises(SpecificationError):
        arm_model(PR2, (0.0, 0.0))


# -- durations and reach -------------------------------------------------------------


def test_place_duration_from_distances_and_speeds() -> None:
    w = make_world()
    expected = expected_fixed(w, "pr2", "cup")
    reply = place(w, "pr2", "cup", "c1", 0.0)
    assert reply == {"ok": True, "reason": None, "status": "running", "command_id": "c1",
                     "fence": 1}  # fmt: skip
    w.advance(expected - 0.01)
    assert w.command_status("pr2", "c1") is CommandStatus.RUNNING
    assert w.objects["cup"].held_by == "pr2"
    w.advance(expected + 0.01)
    assert finished_at(w, "c1") == pytest.approx(expected, abs=1e-3)
    cup = w.object_view("cup")
    assert cup["at_goal"] and cup["held_by"] is None and cup["position"] == CUP["goal"]
    assert w.robot_view("pr2")["arm"] == CUP["goal"]  # the gripper stays where it let go
    assert w.robot_view("pr2")["busy"] is None
    assert events(w) == [("started", "c1", None), ("finished", "c1", None)]


def test_arm_moves_along_a_straight_line() -> None:
    w = make_world()
    start = w.robots["pr2"].arm
    place(w, "pr2", "cup", "c1", 0.0)
    leg = math.dist(start, CUP["position"]) / PR2.arm_speed
    w.advance(leg / 2)
    mid = [(a + b) / 2 for a, b in zip(start, CUP["position"], strict=True)]
    assert w.robot_view("pr2")["arm"] == pytest.approx(mid, abs=1e-3)
    assert w.object_view("cup")["position"] == CUP["position"]  # not yet grasped
    w.advance(leg + PR2.grasp_time + 0.5)  # carrying: the cup moves with the gripper
    assert w.object_view("cup")["position"] == w.robot_view("pr2")["arm"]
    assert w.object_view("cup")["position"] != CUP["position"]


def test_mobile_base_drives_when_out_of_reach() -> None:
    w = make_world()
    shoulder = w.robots["pr2"].shoulder
    assert math.dist(shoulder, APPLE["position"]) > PR2.reach
    start_arm = w.robots["pr2"].arm
    assert place(w, "pr2", "apple", "a1", 0.0)["ok"]
    w.advance(1000.0)
    assert finished_at(w, "a1") > expected_fixed(w, "pr2", "apple")  # includes base travel
    base = w.robot_view("pr2")["base"]
    assert base[0] > -0.75 and base[2] == 0.0  # drove towards the apple
    w2 = make_world()
    place(w2, "pr2", "apple", "a1", 0.0)
    w2.advance(0.5)
    assert w2.robot_view("pr2")["base"][0] > -0.75  # driving first
    arm = w2.robot_view("pr2")["arm"]
    moved = [a - s for a, s in zip(arm, start_arm, strict=True)]
    assert moved[2] == pytest.approx(0.0, abs=1e-6)  # the arm rides along with the base


def test_fixed_base_fails_unreachable() -> None:
    w = make_world()
    assert math.dist(w.robots["baxter"].shoulder, FAR["position"]) < BAXTER.reach
    assert math.dist(w.robots["baxter"].shoulder, FAR["goal"]) > BAXTER.reach
    reply = place(w, "baxter", "far", "b1", 0.0)
    assert reply["ok"] is False and reply["reason"] == "unreachable"
    assert events(w) == [("failed", "b1", "unreachable")]
    assert w.robot_view("baxter")["busy"] is None
    # the PR2 drives there and back
    assert place(w, "pr2", "far", "p1", 0.0)["ok"]


def test_rejections() -> None:
    w = make_world()
    assert w.execute("r2d2", "x1", "n", "place", {"object": "cup"}, 0)["reason"] == "unknown_robot"
    assert (
        w.execute("pr2", "x2", "n", "juggle", {"object": "cup"}, 0)["reason"] == "unknown_behaviour"
    )
    assert w.execute("pr2", "x3", "n", "place", {"object": "mug"}, 0)["reason"] == "unknown_object"
    assert w.execute("pr2", "x4", "n", "place", {}, 0)["reason"] == "unknown_object"
    assert (
        w.execute("pr2", "x5", "n", "place", {"object": "cup", "goal": "up"}, 0)["reason"]
        == "bad_params"
    )
    nogoal = World.from_spec({"cup": {**CUP, "goal": None}}, ROBOTS)
    assert place(nogoal, "pr2", "cup", "x6", 0)["reason"] == "no_goal"
    custom = w.execute("pr2", "x7", "n", "place", {"object": "cup", "goal": [-0.3, 0.1, 0.8]}, 0)
    assert custom["ok"]
    w.advance(100)
    assert w.object_view("cup")["position"] == [-0.3, 0.1, 0.8]


# -- one behaviour at a time, held objects, violations --------------------------------


def test_busy_until_finished() -> None:
    w = make_world()
    place(w, "pr2", "cup", "c1", 0.0)
    reply = place(w, "pr2", "apple", "c2", 1.0)
    assert (reply["ok"], reply["reason"]) == (False, "busy")
    assert w.command_status("pr2", "c2") is CommandStatus.FAILED
    w.advance(100.0)
    assert place(w, "pr2", "apple", "c3", 100.0)["ok"]


def test_held_by_another_fails_without_violation() -> None:
    w = make_world()
    t_reach = math.dist(w.robots["pr2"].arm, CUP["position"]) / PR2.arm_speed
    place(w, "pr2", "cup", "p1", 0.0)
    w.advance(t_reach + 0.1)
    assert w.objects["cup"].held_by == "pr2"
    reply = place(w, "baxter", "cup", "b1", t_reach + 0.1)
    assert (reply["ok"], reply["reason"]) == (False, "held")
    assert w.violations == []


def test_two_robots_reaching_one_object_is_a_violation() -> None:
    w = make_world()
    assert place(w, "pr2", "cup", "p1", 0.0, node="cup")["ok"]
    assert place(w, "baxter", "cup", "b1", 0.0, node="cup")["ok"]
    t_pr2 = math.dist(w.robots["pr2"].arm, CUP["position"]) / PR2.arm_speed
    t_baxter = math.dist(w.robots["baxter"].arm, CUP["position"]) / BAXTER.arm_speed
    assert t_baxter < t_pr2  # the Baxter gets there first and holds the cup
    w.advance(100.0)
    assert finished_at(w, "b1") > t_baxter
    assert ("failed", "p1", "held") in events(w, "pr2")
    assert [e["t"] for e in w.events_since(0, "pr2") if e["kind"] == "failed"] == [
        pytest.approx(t_pr2, abs=1e-3)
    ]
    run, v = w.violations  # both bodies were sent for the cup, then both reached it
    assert run["kind"] == "double_run" and run["robots"] == ["pr2", "baxter"]
    assert v["kind"] == "double_hold" and v["object"] == "cup" and v["robots"] == ["baxter", "pr2"]
    assert v["command_id"] == "p1" and v["node"] == "cup"
    assert w.state(100.0)["violations"] == 2


def test_placing_twice_is_a_violation_unless_moved_between() -> None:
    w = make_world()
    place(w, "pr2", "cup", "p1", 0.0)
    w.advance(50.0)
    assert place(w, "baxter", "cup", "b1", 50.0)["ok"]
    w.advance(100.0)
    (v,) = w.violations
    assert v["kind"] == "placed_twice" and v["object"] == "cup" and v["robots"] == ["baxter"]
    assert w.move_object("cup", CUP["position"], 100.0)["ok"]
    place(w, "pr2", "cup", "p2", 100.0)
    w.advance(200.0)
    assert len(w.violations) == 1


# -- cancel, pause, resume, idempotency -------------------------------------------------


def test_cancel_puts_the_object_down_where_the_gripper_is() -> None:
    w = make_world()
    t_reach = math.dist(w.robots["pr2"].arm, CUP["position"]) / PR2.arm_speed
    place(w, "pr2", "cup", "p1", 0.0)
    t = t_reach + PR2.grasp_time + 0.5  # carrying
    reply = w.cancel("pr2", "p1", t)
    assert reply == {"ok": True, "reason": "cancelled", "status": "cancelled", "command_id": "p1"}
    cup = w.object_view("cup")
    assert cup["held_by"] is None and not cup["at_goal"]
    assert cup["position"] == w.robot_view("pr2")["arm"] != CUP["position"]
    assert w.robot_view("pr2")["busy"] is None
    assert events(w)[-1] == ("failed", "p1", "cancelled")
    again = w.cancel("pr2", "p1", t + 1)
    assert again["ok"] and again["status"] == "cancelled"
    assert len(events(w)) == 2  # nothing new
    frozen = w.object_view("cup")["position"]
    w.advance(100)
    assert w.object_view("cup")["position"] == frozen
    assert w.cancel("pr2", None, 100)["status"] == "idle"


def test_cancel_before_execute_wins() -> None:
    w = make_world()
    assert w.cancel("pr2", "early", 0.0)["status"] == "cancelled"
    reply = place(w, "pr2", "cup", "early", 0.1)
    assert (reply["ok"], reply["status"]) == (False, "cancelled")
    assert events(w) == [("failed", "early", "cancelled")]
    assert place(w, "pr2", "cup", "early", 0.2)["duplicate"]
    assert len(events(w)) == 1
    assert w.robot_view("pr2")["busy"] is None


def test_pause_and_resume_shift_the_finish() -> None:
    w = make_world()
    expected = expected_fixed(w, "pr2", "cup")
    place(w, "pr2", "cup", "p1", 0.0)
    w.advance(1.0)
    arm = w.robot_view("pr2")["arm"]
    assert w.pause("pr2", "p1", 1.0)["status"] == "paused"
    assert w.pause("pr2", None, 2.0)["ok"]  # idempotent, and None means the current one
    w.advance(10.0)
    assert w.robot_view("pr2")["arm"] == arm and w.robot_view("pr2")["paused"]
    assert not w.moving
    assert w.resume("pr2", "p1", 11.0)["status"] == "running"
    assert w.resume("pr2", "p1", 11.5)["ok"]
    w.advance(100.0)
    assert finished_at(w, "p1") == pytest.approx(expected + 10.0, abs=1e-3)
    kinds = [k for k, _, _ in events(w)]
    assert kinds == ["started", "paused", "resumed", "finished"]
    refused = w.pause("pr2", "p1", 101.0)
    assert (refused["ok"], refused["reason"], refused["status"]) == (
        False,
        "not_running",
        "finished",
    )
    assert w.resume("pr2", "zzz", 101.0)["reason"] == "not_running"
    assert w.pause("r2d2", None, 101.0)["reason"] == "unknown_robot"


def test_execute_is_idempotent_per_command_id() -> None:
    w = make_world()
    first = place(w, "pr2", "cup", "p1", 0.0)
    again = place(w, "pr2", "cup", "p1", 0.5)
    assert first["ok"] and again["ok"] and again["duplicate"] and again["status"] == "running"
    w.advance(100.0)
    after = place(w, "pr2", "cup", "p1", 100.0)
    assert after["status"] == "finished" and after["duplicate"]
    assert [k for k, _, _ in events(w)] == ["started", "finished"]
    assert w.robot_view("pr2")["busy"] is None
    # ids are per robot
    other = place(w, "baxter", "apple", "p1", 100.0)
    assert "duplicate" not in other and other["reason"] == "unreachable"


# -- moving objects, views, time ----------------------------------------------------------


def test_move_object_replans_an_approach_and_is_refused_while_held() -> None:
    w = make_world()
    place(w, "pr2", "cup", "p1", 0.0)
    w.advance(0.2)
    v0 = w.version
    assert w.move_object("cup", [-0.2, 0.2, 0.8], 0.2)["ok"]
    assert w.version > v0
    w.advance(5.0)
    assert w.objects["cup"].held_by == "pr2"
    assert w.move_object("cup", [0, 0, 0.8], 5.0) == {"ok": False, "reason": "held"}
    w.advance(100.0)
    assert w.object_view("cup")["at_goal"]
    assert w.move_object("mug", [0, 0, 0], 100.0)["reason"] == "unknown_object"
    assert w.move_object("cup", [0, 0], 100.0)["reason"] == "bad_params"


def test_move_object_out_of_reach_fails_a_fixed_robot() -> None:
    w = make_world()
    assert place(w, "baxter", "apple", "b1", 0.0)["ok"] is False  # goal beyond Baxter's reach
    w2 = World.from_spec({"apple": {**APPLE, "goal": [0.5, 0.3, 0.79]}}, ROBOTS)
    assert place(w2, "baxter", "apple", "b1", 0.0)["ok"]
    w2.move_object("apple", [-1.5, 0.0, 0.79], 0.1)
    assert events(w2)[-1] == ("failed", "b1", "unreachable")
    assert w2.robot_view("baxter")["busy"] is None


def test_views_have_the_contract_fields() -> None:
    w = make_world()
    obs = w.observe("pr2", 0.0)
    assert obs["ok"] and obs["t"] == 0.0 and obs["seq"] == 0 and obs["events"] == []
    assert set(obs["robot"]) >= {"name", "arm", "base", "yaw", "busy", "paused"}
    assert set(obs["objects"]["cup"]) == {
        "shape", "dims", "position", "yaw", "goal", "at_goal", "held_by",
    }  # fmt: skip
    assert obs["objects"]["cup"]["shape"] == "cylinder"
    assert w.observe("r2d2", 0.0) == {"ok": False, "reason": "unknown_robot"}
    state = w.state(0.0)
    assert set(state) == {"t", "objects", "robots", "violations"}
    assert set(state["robots"]) == {"pr2", "baxter"}
    info = w.info()
    assert info["robots"]["pr2"]["profile"]["name"] == "pr2" and "cup" in info["objects"]
    assert arm_base_position(PR2, info["robots"]["pr2"]["base"]) == w.robots["pr2"].shoulder


def test_events_filter_by_robot_and_sequence() -> None:
    w = make_world()
    place(w, "pr2", "cup", "p1", 0.0)
    place(w, "baxter", "cup", "b1", 0.0)
    w.advance(100)
    seqs = [e["seq"] for e in w.events_since(0)]
    assert seqs == sorted(seqs) and seqs[-1] == w.seq
    assert all(e["robot"] == "pr2" for e in w.events_since(0, "pr2"))
    assert w.events_since(w.seq) == []
    assert w.observe("pr2", 100, since=1)["events"][0]["seq"] > 1


def test_time_never_runs_backwards() -> None:
    w = make_world()
    w.advance(10.0)
    w.advance(5.0)
    assert w.t == 10.0
    reply = place(w, "pr2", "cup", "p1", 3.0)
    assert reply["ok"] and w.events_since(0)[0]["t"] == 10.0


def test_bad_specs_are_refused() -> None:
    with pytest.raises(SpecificationError):
        World.from_spec({"cup": {**CUP, "shape": "cone"}}, ROBOTS)
    with pytest.raises(SpecificationError):
        World.from_spec({"cup": {**CUP, "position": [0, 0]}}, ROBOTS)
    with pytest.raises(SpecificationError):
        World.from_spec({"cup": CUP}, {"x": {"profile": "r2d2", "base": [0, 0, 0]}})
    assert CUP["position"][2] > TABLE_Z


def test_can_place_is_the_worlds_reach_rule() -> None:
    """A robot agent can check object and goal reach before claiming (same rule)."""
    rng = random.Random(4)
    for _ in range(200):
        pos = [rng.uniform(-1.5, 1.5), rng.uniform(-1.2, 1.2), 0.79]
        goal = [rng.uniform(-1.5, 1.5), rng.uniform(-1.2, 1.2), 0.79]
        w2 = World.from_spec({"ball": {**APPLE, "position": pos, "goal": goal}}, ROBOTS)
        for name, body in w2.robots.items():
            expected = can_place(body.spec, body.base, body.yaw, pos, goal)
            reply = place(w2, name, "ball", f"{name}-x", 0.0)
            assert reply["ok"] is expected or reply["reason"] == "held", (name, pos, goal)
            if reply["ok"]:
                w2.cancel(name, None, 0.0)
    assert drive_to_reach(BAXTER, (0.0, 0.0, 0.0), 0.0, (3.0, 0.0, 1.0)) is None
    assert drive_to_reach(PR2, (0.0, 0.0, 0.0), 0.0, (0.3, -0.19, 0.75)) == (0.0, 0.0, 0.0)
    drive = drive_to_reach(PR2, (0.0, 0.0, 0.0), 0.0, (2.0, -0.19, 0.75))
    assert drive is not None and drive[0] == pytest.approx(2.0 - 0.95 * PR2.reach)


def test_object_views_follow_the_object_and_are_the_callers_to_keep() -> None:
    w = make_world()
    first = w.object_view("cup")
    first["position"][0] = 99.0  # the caller's copy: the world's next view is unaffected
    first["dims"].append(1.0)
    assert w.object_view("cup")["position"] == [0.1, -0.05, 0.8]
    assert w.object_view("cup")["dims"] == [0.04, 0.1]
    assert w.move_object("cup", [0.2, 0.1, 0.8], t=0.0)["ok"]
    assert w.object_view("cup")["position"] == [0.2, 0.1, 0.8]
    assert not w.object_view("cup")["at_goal"]
    w.move_object("cup", CUP["goal"], t=0.0)
    assert w.object_view("cup")["at_goal"]
