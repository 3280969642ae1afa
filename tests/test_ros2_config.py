"""The ``ros2_driver`` kind's config: interface types are found by name at check time,
and a config naming one that is malformed or not installed, a goal field its type
lacks, or an unknown placeholder fails before anything starts, naming the key and how
to fix it. The leaf -> goal mapping is pure and checked here too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from teamtree.agents.runtime.config import parse_config
from teamtree.agents.runtime.kinds import validate_kinds
from teamtree.broker import ConfigError
from teamtree.drivers.ros2 import BehaviourError, fill_placeholders, site_from_config

PATH = Path("team.toml")


def _config(driver: dict[str, Any]) -> Any:
    return parse_config(
        {
            "team": {"name": "t"},
            "agents": [
                {"id": "r1", "kind": "robot", "profile": "pr2"},
                {"id": "r1-driver", "kind": "ros2_driver", "role": "service", **driver},
            ],
        },
        PATH,
    )


def _error(driver: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        validate_kinds(_config(driver), only="r1-driver")
    return err.value


def test_an_interface_that_is_not_installed_is_named_with_the_fix() -> None:
    err = _error({"behaviours": {"MOVE": {"action": "/navigate_to_pose",
                                          "type": "nav2_msgs/action/NavigateToPose"}}})  # fmt: skip
    assert err.key == "agents[1].behaviours.MOVE.type"
    assert "'nav2_msgs/action/NavigateToPose' is not installed" in str(err)
    assert "source the ROS 2 workspace" in str(err)


def test_a_malformed_type_name_and_a_wrong_kind_are_refused() -> None:
    err = _error({"behaviours": {"MOVE": {"action": "/go", "type": "NavigateToPose"}}})
    assert err.key == "agents[1].behaviours.MOVE.type"
    assert "expected pkg/action/Name" in str(err)
    err = _error({"behaviours": {"MOVE": {"action": "/go", "type": "std_msgs/msg/String"}}})
    assert "names a msg; this needs a action type" in str(err)


def test_one_of_action_service_topic() -> None:
    err = _error({"behaviours": {"MOVE": {"type": "std_srvs/srv/Trigger"}}})
    assert err.key == "agents[1].behaviours.MOVE"
    assert "exactly one of action, service or topic" in str(err)
    err = _error({"behaviours": {}})
    assert err.key == "agents[1].behaviours"


def test_goal_fields_and_placeholders_are_checked_against_the_type() -> None:
    pytest.importorskip("test_msgs.action", reason="needs ros-jazzy-test-msgs (ros2 extra)")
    fib = {"action": "/do", "type": "test_msgs/action/Fibonacci"}
    err = _error({"behaviours": {"PLACE": {**fib, "goal": {"ordr": 1}}}})
    assert err.key == "agents[1].behaviours.PLACE.goal"
    assert "Fibonacci_Goal has no field 'ordr' (it has: order)" in str(err)
    err = _error({"behaviours": {"PLACE": {**fib, "goal": {"order": "{targt.id}"}}}})
    assert "unknown placeholder {targt.id}" in str(err)
    ok = _config({"behaviours": {"place": {**fib, "goal": {"order": "{target.id}"}}},
                  "objects": {"cup": {"position": [0, 0, 0.8], "id": 3}}})  # fmt: skip
    validate_kinds(ok, only="r1-driver")


def test_a_leaf_becomes_goal_values() -> None:
    site = site_from_config(
        {"dock": {"x": 2.0, "y": 1.0, "theta": 3.14159265, "id": 7}},
        {"cup": {"position": [0.5, 0.1, 0.8], "goal": [0.2, 0.3, 0.8], "id": 3}},
    )
    ctx = site.context("MOVE", {"object": "dock"})
    goal = fill_placeholders({"pose": "{pose}", "behavior_tree": "", "n": "{target.id}"}, ctx)
    assert goal["n"] == 7
    assert goal["pose"]["header"]["frame_id"] == "map"
    assert goal["pose"]["pose"]["position"] == {"x": 2.0, "y": 1.0, "z": 0.0}
    assert goal["pose"]["pose"]["orientation"]["z"] == pytest.approx(1.0)
    ctx = site.context("PLACE", {"object": "cup"})
    goal = fill_placeholders({"name": "pick {object}", "to": "{goal_pose}"}, ctx)
    assert goal["name"] == "pick cup"
    assert goal["to"]["pose"]["position"] == {"x": 0.2, "y": 0.3, "z": 0.8}
    with pytest.raises(BehaviourError, match="unknown_target: 'mug'"):
        site.context("PLACE", {"object": "mug"})
    with pytest.raises(BehaviourError, match=r"goal.x: placeholder \{params.to\} has no value"):
        fill_placeholders({"x": "{params.to}"}, ctx)
    site.finished("PLACE", {"object": "cup"})
    assert site.placed == {"cup": (0.2, 0.3, 0.8)}
