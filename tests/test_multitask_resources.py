"""Robot resources (seed 004 §III.B): channels, owners, locks, hand-offs, profiles."""

from __future__ import annotations

import pytest

from teamtree.broker import SpecificationError
from teamtree.hardware.resources import (
    PR2_RESOURCES,
    Access,
    Channel,
    Resource,
    ResourceNeed,
    ResourceState,
    ResourceType,
    pr2_profile,
    resource_profile_from_dict,
)

BASE_STILL = ResourceNeed(ResourceType.BASE, Access.SHARED, "still at 1,1")
BASE_ELSEWHERE = ResourceNeed(ResourceType.BASE, Access.SHARED, "still at 2,2")
BASE_GO = ResourceNeed(ResourceType.BASE, Access.EXCLUSIVE, "go to 3,3")
GRIPPER = ResourceNeed(ResourceType.GRIPPER, Access.EXCLUSIVE, "hold x")


def test_pr2_profile_has_the_four_resources_of_fig_2() -> None:
    profile = pr2_profile()
    assert [(r.name, r.type) for r in profile.resources] == [
        ("left_gripper", "gripper"),
        ("right_gripper", "gripper"),
        ("base", "base"),
        ("head", "head"),
    ]
    assert profile.count(ResourceType.GRIPPER) == 2
    state = profile.initial_state()
    assert all(r.free and r.n_owners == 0 and not r.locked for r in state)
    assert profile.resources == PR2_RESOURCES


def test_exclusive_excludes_and_shared_joins_only_same_intention() -> None:
    state = pr2_profile().initial_state()
    a = state.resolve([BASE_STILL], {"pick-1"})
    assert a == (("base", Channel(Access.SHARED, "still at 1,1")),)
    state = state.acquire("pick-1", a)
    base = state["base"]
    assert base.locked and base.n_owners == 1 and base.channel == BASE_STILL.channel
    # a second pick at the same spot shares; one elsewhere, or a move, does not
    assert state.resolve([BASE_STILL], {"pick-2"}) is not None
    assert state.resolve([BASE_ELSEWHERE], {"pick-2"}) is None
    assert state.resolve([BASE_GO], {"move-3"}) is None
    state = state.acquire("pick-2", state.resolve([BASE_STILL], {"pick-2"}))
    assert state["base"].n_owners == 2
    assert state.violations() == []
    state = state.release("pick-1").release("pick-2")
    assert state["base"].free and state["base"].channel is None


def test_two_gripper_needs_take_two_grippers_and_a_third_fails() -> None:
    state = pr2_profile().initial_state()
    two = state.resolve([GRIPPER, GRIPPER], {"b"})
    assert two is not None and {n for n, _ in two} == {"left_gripper", "right_gripper"}
    state = state.acquire("b", two)
    assert state.resolve([GRIPPER], {"c"}) is None
    with pytest.raises(SpecificationError, match="cannot take"):
        state.acquire("c", (("left_gripper", GRIPPER.channel),))


def test_owned_resources_are_preferred_and_reservations_count_for_descendants() -> None:
    state = pr2_profile().initial_state()
    state = state.acquire("move", (("base", Channel(Access.EXCLUSIVE, "go")),))
    # the move hands the base to its heir (a subtree id); a leaf below it owns it
    state = state.transfer("move", "task-1", {"base"}, {"base": BASE_STILL.channel})
    assert state["base"].owners == {"task-1"}
    assert state.resolve([BASE_STILL], {"pick-1", "task-1", "root"}) is not None
    state = state.acquire("pick-1", state.resolve([BASE_STILL], {"pick-1", "task-1"}), {"task-1"})
    assert state["base"].owners == {"pick-1"}
    # a specific gripper by name, owned already
    state = state.acquire("place-1", (("right_gripper", GRIPPER.channel),))
    need = ResourceNeed(ResourceType.GRIPPER, Access.EXCLUSIVE, "hold x", name="right_gripper")
    assert state.resolve([need], {"place-1"}) == (("right_gripper", GRIPPER.channel),)
    assert state.resolve([need], {"other"}) is None


def test_out_of_service_resource_is_never_given() -> None:
    profile = resource_profile_from_dict(
        {
            "kind": "one-arm",
            "resources": [
                {"name": "g0", "type": "gripper", "locked": True},
                {"name": "g1", "type": "gripper"},
                {"name": "base", "type": "base"},
            ],
        }
    )
    assert profile.count("gripper") == 1
    state = profile.initial_state()
    assert state["g0"].out_of_service
    assert state.resolve([GRIPPER], {"p"}) == (("g1", GRIPPER.channel),)
    assert state.resolve([GRIPPER, GRIPPER], {"p"}) is None


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ("r2d2", "unknown profile"),
        ({"resources": []}, "non-empty"),
        ({"resources": [{"type": "gripper"}]}, "name"),
        ({"resources": [{"name": "g", "type": ""}]}, "type"),
        (
            {"resources": [{"name": "g", "type": "gripper"}, {"name": "g", "type": "base"}]},
            "unique",
        ),
    ],
)
def test_bad_profiles_name_the_key(data: object, match: str) -> None:
    with pytest.raises(SpecificationError, match=match):
        resource_profile_from_dict(data)  # type: ignore[arg-type]


def test_violations_report_two_exclusive_owners() -> None:
    bad = ResourceState(
        (
            Resource(
                "base",
                "base",
                owners=frozenset({"a", "b"}),
                channel=Channel(Access.EXCLUSIVE),
                locked=True,
            ),
        )
    )
    assert any("exclusive" in v for v in bad.violations())
    rows = pr2_profile().initial_state().to_rows()
    assert rows[0] == {
        "name": "left_gripper",
        "type": "gripper",
        "owners": [],
        "n_owners": 0,
        "channel": None,
        "locked": False,
    }
