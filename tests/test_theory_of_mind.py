"""Theory of mind (seed 000 §2.3): geometry, intent inference on synthetic noisy hand
trajectories (accuracy and latency reported), the simulated human controller, the
world's hands, and the simulated human's policies."""

from __future__ import annotations

import math
import random

import pytest

from teamtree.agents.humans.human import enabled_leaves
from teamtree.hardware.world import World
from teamtree.planners.tasktree import (
    HandSample,
    HumanModel,
    IntentParams,
    IntentTracker,
    NodeStatus,
    approach_geometry,
    fit_motion,
    parse_tree,
)
from teamtree.planners.tasktree.reach_trials import reach_trial

# -- geometry ----------------------------------------------------------------------------


def test_approach_geometry_straight_at_the_object() -> None:
    d, closing, angle = approach_geometry((0, 0, 0), (1, 0, 0), (2, 0, 0))
    assert d == pytest.approx(2) and closing == pytest.approx(1) and angle == pytest.approx(0)


def test_approach_geometry_sideways_and_away() -> None:
    _, closing, angle = approach_geometry((0, 0, 0), (0, 1, 0), (2, 0, 0))
    assert closing == pytest.approx(0) and angle == pytest.approx(math.pi / 2)
    _, closing, angle = approach_geometry((0, 0, 0), (-1, 0, 0), (2, 0, 0))
    assert closing == pytest.approx(-1) and angle == pytest.approx(math.pi)
    _, closing, angle = approach_geometry((0, 0, 0), (1, 1, 0), (2, 0, 0))
    assert angle == pytest.approx(math.pi / 4) and closing == pytest.approx(1.0)


def test_approach_geometry_degenerate_cases() -> None:
    assert approach_geometry((1, 1, 1), (1, 0, 0), (1, 1, 1)) == (0.0, 0.0, math.pi / 2)
    d, closing, angle = approach_geometry((0, 0, 0), (0, 0, 0), (3, 4, 0))
    assert (d, closing, angle) == (5.0, 0.0, math.pi / 2)


def test_fit_motion_recovers_velocity_and_smooths_noise() -> None:
    rng = random.Random(1)
    samples = [
        HandSample(t / 20, (0.5 * t / 20 + rng.gauss(0, 0.002), 0.2, 0.9)) for t in range(10)
    ]
    position, velocity = fit_motion(samples)
    assert velocity[0] == pytest.approx(0.5, abs=0.05)
    assert position[0] == pytest.approx(0.5 * 9 / 20, abs=0.01)
    assert fit_motion(samples[:1]) is None
    assert fit_motion([HandSample(1.0, (0, 0, 0)), HandSample(1.0, (1, 0, 0))]) is None


# -- the tracker ------------------------------------------------------------------------

OBJECTS = {"cup": (0.0, 0.3, 0.8), "sugar": (0.0, -0.3, 0.8), "tea_pot": (-0.4, 0.0, 0.8)}


def feed_line(tracker: IntentTracker, start, end, speed=0.5, dt=0.05, objects=OBJECTS):
    """Move a hand in a straight line (continuing the tracker's clock); return the
    intent after each update."""
    t0 = tracker.samples[-1].t + dt if tracker.samples else 0.0
    n = max(2, int(math.dist(start, end) / speed / dt))
    out = []
    for i in range(n + 1):
        f = i / n
        p = tuple(a + (b - a) * f for a, b in zip(start, end, strict=True))
        tracker.add([HandSample(t0 + i * dt, p)])
        tracker.update(objects)
        out.append(tracker.intent)
    return out


def test_tracker_finds_the_object_reached_for_and_confirms_first() -> None:
    tracker = IntentTracker()
    intents = feed_line(tracker, (0.6, 0.3, 0.9), OBJECTS["cup"])
    first = next(i for i, x in enumerate(intents) if x is not None)
    assert intents[first] == "cup"
    assert first >= tracker.params.confirm  # min_samples, then `confirm` agreeing updates
    assert set(intents[first:]) == {"cup"}


def test_tracker_still_hand_starts_nothing_and_keeps_the_intent() -> None:
    tracker = IntentTracker()
    for i in range(10):
        tracker.add([HandSample(i * 0.05, (0.6, 0.0, 0.9))])
        assert tracker.update(OBJECTS) is None
    assert tracker.intent is None
    feed_line(tracker, (0.6, -0.3, 0.9), (0.1, -0.3, 0.85))
    assert tracker.intent == "sugar"


def test_tracker_holding_and_touching_win_at_once() -> None:
    tracker = IntentTracker()
    change = tracker.update(OBJECTS, holding="tea_pot")
    assert change is not None and change.new == "tea_pot" and change.reason == "holding"
    tracker = IntentTracker()
    tracker.add([HandSample(0.0, (0.01, 0.3, 0.8))])
    assert tracker.update(OBJECTS).new == "cup"


def test_tracker_moving_away_and_target_gone_clear_the_intent() -> None:
    tracker = IntentTracker()
    feed_line(tracker, (0.6, 0.3, 0.9), (0.2, 0.3, 0.85))
    assert tracker.intent == "cup"
    feed_line(tracker, (0.2, 0.3, 0.85), (1.0, 0.3, 0.85))
    assert tracker.intent is None
    feed_line(tracker, (0.6, 0.3, 0.9), (0.2, 0.3, 0.85))
    change = tracker.update({k: v for k, v in OBJECTS.items() if k != "cup"})
    assert change is not None and change.reason == "target gone"


def test_intent_params_validate() -> None:
    with pytest.raises(ValueError):
        IntentParams(window_s=0)


# -- synthetic noisy reaches through the world's hand model ----------------------------


@pytest.mark.parametrize(("noise", "speed"), [(0.0, 0.5), (0.005, 0.35), (0.01, 0.8)])
def test_intent_on_noisy_reaches_accuracy_and_latency(noise: float, speed: float) -> None:
    trials = [reach_trial(seed, noise, speed) for seed in range(40)]
    final = [t for t in trials if t.latency is not None]
    first_ok = sum(t.first == t.target for t in trials) / len(trials)
    latencies = sorted(t.latency for t in final)
    shares = sorted(t.latency / t.duration for t in final)
    p50, share50 = latencies[len(latencies) // 2], shares[len(shares) // 2]
    print(
        f"\nintent noise={noise} m speed={speed} m/s: right before the grasp "
        f"{len(final)}/{len(trials)}, first guess right {first_ok:.0%}, latency p50 "
        f"{p50:.2f} s = {share50:.0%} of the reach"
    )
    assert len(final) >= 0.95 * len(trials)  # the model shows the right object in time
    assert share50 < 0.7  # and, typically, well before the hand gets there


# -- the simulated human controller -------------------------------------------------------

TREE = parse_tree("THEN(AND(burger, cup), AND(tea_pot, sugar))")


def views(**over):
    base = {
        "burger": {"position": [-0.2, 0.2, 0.8], "at_goal": False, "held_by": None},
        "cup": {"position": [0.2, -0.2, 0.8], "at_goal": False, "held_by": None},
        "tea_pot": {"position": [0.1, 0.2, 0.8], "at_goal": False, "held_by": None},
        "sugar": {"position": [-0.1, -0.1, 0.8], "at_goal": False, "held_by": None},
    }
    for name, fields in over.items():
        base[name] = {**base[name], **fields}
    return base


def test_model_activates_the_intended_leaf_and_marks_it_done() -> None:
    model = HumanModel(TREE, "alice")
    cup = TREE.find("cup")
    updates = []
    for i in range(12):
        p = (0.8 - 0.05 * i, -0.2, 0.9)
        updates.append(model.observe(i * 0.05, [HandSample(i * 0.05, p)], views()))
    assert model.active == cup and any(u.activated == cup for u in updates)
    assert model.statuses()[cup] is NodeStatus.WORKING
    model.observe(1.0, [HandSample(1.0, (0.2, -0.2, 0.8))], views(cup={"held_by": "alice"}), "cup")
    update = model.observe(2.0, [HandSample(2.0, (-0.4, -0.2, 0.8))], views(cup={"at_goal": True}))
    assert update.done == [cup] and cup in model.done and model.active is None
    assert model.belief()["done"] == [cup]


def test_model_conceded_leaf_stays_inactive_unless_held() -> None:
    model = HumanModel(TREE, "alice")
    cup = TREE.find("cup")
    model.observe(0.0, [], views(), holding="cup")
    assert model.active == cup
    assert model.concede(cup).deactivated == cup
    model.observe(0.1, [HandSample(0.1, (0.2, -0.2, 0.8))], views())
    assert model.active is None  # touching, but conceded and not held
    model.observe(0.2, [], views(cup={"held_by": "alice"}), holding="cup")
    assert model.active == cup


def test_model_ignores_objects_a_robot_holds_and_placements_it_did_not_make() -> None:
    model = HumanModel(TREE, "alice")
    update = model.observe(0.0, [], views(cup={"at_goal": True}))
    assert not update.done  # the robot's placement: the robot reports it
    model.observe(0.1, [HandSample(0.1, (0.2, -0.2, 0.8))], views(cup={"held_by": "pr2"}))
    assert model.active is None


def test_enabled_leaves_follow_the_tree() -> None:
    burger, cup, tea, sugar = (TREE.find(x) for x in ("burger", "cup", "tea_pot", "sugar"))
    assert enabled_leaves(TREE, set()) == [burger, cup]
    assert enabled_leaves(TREE, {burger, cup}) == [tea, sugar]


# -- the world's hands ----------------------------------------------------------------------


def hand_world(**hand) -> World:
    objects = {
        "cup": {"shape": "cylinder", "dims": [0.04, 0.1], "position": [0.2, -0.1, 0.8],
                "goal": [-0.3, -0.1, 0.8]},
    }  # fmt: skip
    robots = {"pr2": {"profile": "pr2", "base": [0.0, -0.65, 0.0], "yaw": 1.5707963}}
    return World.from_spec(objects, robots, {"alice": {"rest": [0.8, 0.0, 0.95], **hand}})


def test_hand_reaches_grasps_and_places_with_tracked_samples() -> None:
    w = hand_world(speed=0.5, noise=0.0)
    assert w.hand_reach("alice", "a1", "cup", 0.0)["ok"]
    w.advance(1.0)
    obs = w.observe("pr2", 1.0)
    track = obs["hands"]["alice"]["track"]
    assert len(track) >= 9 and track[0][0] < track[-1][0]
    assert w.objects["cup"].held_by == "alice" or w.hands["alice"].job.stage.value == "approach"
    w.advance(20.0)
    assert w.objects["cup"].at_goal() and w.violations == []
    kinds = [e["kind"] for e in w.events_since(0, "alice")]
    assert kinds == ["started", "finished"]


def test_hand_and_robot_on_one_object_is_a_violation() -> None:
    w = hand_world(speed=2.0)
    assert w.execute("pr2", "p1", None, "place", {"object": "cup"}, 0.0)["ok"]
    w.hand_reach("alice", "a1", "cup", 0.0, then="hold")
    w.advance(60.0)  # the hand grabs it first; the gripper arrives at a held object
    assert w.hands["alice"].holding == "cup"
    assert [v["kind"] for v in w.violations] == ["double_hold"]
    assert w.execute("pr2", "p2", None, "place", {"object": "cup"}, 61.0)["reason"] == "held"


def test_hand_hold_then_place_and_refusals() -> None:
    w = hand_world(speed=1.0)
    assert w.hand_place("alice", "x", 0.0)["reason"] == "not_holding"
    assert w.hand_reach("bob", "x", "cup", 0.0)["reason"] == "unknown_hand"
    assert w.hand_reach("alice", "a1", "cup", 0.0, then="hold")["ok"]
    w.advance(10.0)
    assert w.hand_reach("alice", "a2", "cup", 10.0)["reason"] == "busy"
    assert w.hand_place("alice", "a3", 10.0)["ok"]
    w.advance(20.0)
    assert w.objects["cup"].at_goal()
    assert w.hand_move("alice", "a4", [0.8, 0.0, 0.95], 20.0)["ok"]
    w.advance(30.0)
    assert w.hand_pose("alice") == pytest.approx((0.8, 0.0, 0.95))
    assert "hands" in w.state(30.0) and "hands" not in World.from_spec({}, {}).state(0.0)
