"""The robot's view of the world, alone (no agent, no broker): what a keyframe and the
deltas after it show, which leaves the world shows done or undone, which leaves only
the world may call done, and whether the body holds a leaf's object."""

from __future__ import annotations

from typing import Any

import msgspec

from teamtree.agents.runtime.observation_wire import ObservationBody, decode_observation
from teamtree.agents.tasktree.world_view import WorldView
from teamtree.planners.tasktree import (
    EffectConfirmed,
    EffectUndone,
    EvidenceChanged,
    TaskController,
    WorldShown,
    parse_tree,
)

TREE = parse_tree("AND(PLACE(object=cup), PLACE(object=tea), PLACE(object=jam, goal=shelf))")
CUP, TEA, JAM = "root/0", "root/1", "root/2"


def _object(x: float, **view: Any) -> dict[str, Any]:
    return {"shape": "cylinder", "dims": [0.03, 0.1], "position": [x, 0.0, 0.8],
            "goal": [x, -0.2, 0.8], "at_goal": False, "held_by": None} | view  # fmt: skip


def _obs(objects: dict[str, Any], *, full: bool = True, arm_z: float = 0.9) -> ObservationBody:
    body = {
        "t": 1.0,
        "robot": {"name": "pr2", "arm": [0.0, -0.3, arm_z], "base": [0.0, -0.65, 0.0],
                  "yaw": 1.5708, "busy": None, "paused": False},
        "objects": objects,
        "full": full,
    }  # fmt: skip
    return decode_observation(body)


def _seen(world: WorldView, obs: ObservationBody) -> tuple[ObservationBody, set[str], bool]:
    """Merge and absorb `obs` as the robot does: (the whole world, changed, moved)."""
    merged = world.merge(obs)
    assert merged is not None
    names = None if obs.full else list(obs.objects)
    whole = msgspec.structs.replace(obs, objects=merged, full=True)
    changed, moved = world.absorb(whole, names)
    return whole, changed, moved


def test_a_delta_before_any_keyframe_is_not_taken() -> None:
    world = WorldView(TREE, "pr2", "pr2")
    assert world.merge(_obs({"cup": _object(0.0)}, full=False)) is None
    assert world.world_objects is None and world.objects == {}


def test_deltas_change_only_the_objects_they_carry_and_the_arm_moves_all() -> None:
    world = WorldView(TREE, "pr2", "pr2")
    _, changed, moved = _seen(world, _obs({"cup": _object(0.0), "tea": _object(0.2)}))
    assert changed == {"cup", "tea"} and moved and world.arm is not None
    _, changed, moved = _seen(world, _obs({"tea": _object(0.25)}, full=False))
    assert changed == {"tea"} and not moved
    assert world.objects["tea"].position == (0.25, 0.0, 0.8)
    assert world.objects["cup"].position == (0.0, 0.0, 0.8)  # kept from the keyframe
    _, changed, moved = _seen(world, _obs({}, full=False, arm_z=1.0))
    assert changed == set() and moved  # the arm moved: every potential may change
    # an object held by another body, or at its goal, is not one this robot may grasp
    _seen(world, _obs({"cup": _object(0.0, held_by="baxter")}, full=False))
    assert "cup" not in world.objects
    _seen(world, _obs({"tea": _object(0.2, at_goal=True)}))  # a keyframe without the cup
    assert world.objects == {} and set(world.world_objects or {}) == {"tea"}


def test_done_and_undone_leaves_are_what_the_world_shows() -> None:
    world = WorldView(TREE, "pr2", "pr2")
    placed = {"cup": _object(0.0, at_goal=True), "tea": _object(0.2), "jam": _object(0.4)}
    whole, _, _ = _seen(world, _obs(placed))
    assert world.confirmed(whole, set()) == [CUP]
    assert world.confirmed(whole, {CUP}) == []  # already done
    assert world.undone(whole, {CUP}) == []  # seen at its goal: remembered
    whole, changed, _ = _seen(world, _obs({"cup": _object(0.05)}, full=False))
    assert world.undone(whole, {CUP}, changed) == [CUP]  # moved away: open again
    assert world.undone(whole, {CUP}, changed) == []  # once
    # a leaf with a goal of its own: the world's at_goal is about another goal
    whole, changed, _ = _seen(world, _obs({"jam": _object(0.4, at_goal=True)}, full=False))
    assert world.confirmed(whole, set(), changed) == []


def test_only_leaves_the_world_shows_with_a_goal_need_its_evidence() -> None:
    world = WorldView(TREE, "pr2", "pr2")
    assert world.evidence_leaves() == {CUP, TEA}  # before a keyframe: every object leaf
    _seen(world, _obs({"cup": _object(0.0), "tea": _object(0.2, goal=None)}))
    assert world.evidence_leaves() == {CUP}


def test_the_events_of_an_observation_come_in_order() -> None:
    world = WorldView(TREE, "pr2", "pr2")
    controller = TaskController(TREE, "pr2", evidence_leaves=world.evidence_leaves())
    shown = {"cup": _object(0.0, at_goal=True), "tea": _object(0.2, goal=None)}
    whole, _, _ = _seen(world, _obs(shown))
    events = list(world.events(whole, controller, None, keyframe=True))
    # the keyframe's last word frees the leaves held back on peers' reports
    assert events == [EvidenceChanged(frozenset({CUP})), EffectConfirmed(CUP), WorldShown()]
    for event in events:
        controller.handle(event, (1, 0, "pr2"))
    assert CUP in controller.done
    whole, changed, _ = _seen(world, _obs({"cup": _object(0.05)}, full=False))
    assert list(world.events(whole, controller, changed, keyframe=False)) == [EffectUndone(CUP)]


def test_the_body_holds_what_the_world_shows_it_holding() -> None:
    world = WorldView(TREE, "pr2", "pr2")
    _seen(world, _obs({"cup": _object(0.0, held_by="pr2"), "tea": _object(0.2)}))
    assert world.holds(CUP) and not world.holds(TEA) and not world.holds(JAM)
