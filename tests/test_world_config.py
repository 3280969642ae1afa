"""Config validation of the world and sim_driver kinds: errors name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from teamtree.agents import AGENT_KINDS, load_config, validate_kinds
from teamtree.agents.world.world_agent import WorldAgent
from teamtree.broker import ConfigError
from teamtree.drivers import SimDriverAgent

WORLD = """
[[agents]]
id = "world"
kind = "world"
role = "service"
time_factor = 10.0

[agents.objects.cup]
shape = "cylinder"
dims = [0.04, 0.10]
position = [0.10, -0.05, 0.80]
goal = [-0.05, 0.05, 0.80]

[agents.objects.apple]
shape = "sphere"
dims = [0.04]
position = [0.45, 0.20, 0.79]
goal = [0.40, 0.30, 0.79]
yaw = 0.5

[agents.robots.pr2]
profile = "pr2"
base = [-0.75, 0.0, 0.0]

[agents.robots.baxter]
profile = "baxter"
base = [0.95, 0.0, 0.0]
yaw = 3.14159

[[agents]]
id = "pr2-driver"
kind = "sim_driver"
role = "service"
robot = "pr2"
"""


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(f'[team]\nname = "t"\n{text}')
    return path


def test_kinds_are_registered() -> None:
    assert AGENT_KINDS["world"] is WorldAgent
    assert AGENT_KINDS["sim_driver"] is SimDriverAgent


def test_valid_config(tmp_path: Path) -> None:
    cfg = load_config(config(tmp_path, WORLD))
    validate_kinds(cfg)
    params = WorldAgent.params_from_config(cfg.agent("world"), cfg)
    assert params["time_factor"] == 10.0 and params["zmq_port"] == 0
    assert params["objects"]["apple"] == {
        "shape": "sphere",
        "dims": [0.04],
        "position": [0.45, 0.2, 0.79],
        "goal": [0.4, 0.3, 0.79],
        "yaw": 0.5,
    }
    assert params["robots"]["baxter"]["yaw"] == pytest.approx(3.14159)
    driver = SimDriverAgent.params_from_config(cfg.agent("pr2-driver"), cfg)
    assert driver["robot"] == "pr2" and driver["agent"] == "pr2" and driver["profile"] is None
    assert driver["cancel_on_agent_loss"] is True


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("time_factor = 10.0", "time_factor = -1", "agents[0].time_factor"),
        ('shape = "cylinder"', 'shape = "cone"', "agents[0].objects.cup.shape"),
        ("dims = [0.04, 0.10]", "dims = [0.04]", "agents[0].objects.cup.dims"),
        ("dims = [0.04, 0.10]", "dims = [0.04, -0.1]", "agents[0].objects.cup.dims"),
        ("position = [0.10, -0.05, 0.80]", "position = [0.1]", "agents[0].objects.cup.position"),
        ("goal = [-0.05, 0.05, 0.80]", 'goal = "bowl"', "agents[0].objects.cup.goal"),
        ("yaw = 0.5", 'yaw = "up"', "agents[0].objects.apple.yaw"),
        ("yaw = 0.5", "colour = 1", "agents[0].objects.apple.colour"),
        ('profile = "pr2"', 'profile = "r2d2"', "agents[0].robots.pr2.profile"),
        ("base = [-0.75, 0.0, 0.0]", "base = 1", "agents[0].robots.pr2.base"),
        ("[agents.objects.cup]", '[agents.objects."c u p"]', "agents[0].objects.c u p"),
        ("time_factor = 10.0", "time_factor = 10.0\nzmq_port = 70000", "agents[0].zmq_port"),
        ("time_factor = 10.0", "time_factor = 10.0\nworlds = 2", "agents[0]"),
        ('robot = "pr2"', 'robot = "pr2"\nprofile = "r2d2"', "agents[1].profile"),
        ('robot = "pr2"', "", "agents[1].robot"),
        ('robot = "pr2"', 'robot = "pr2"\npoll_hz = 0', "agents[1].poll_hz"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, old: str, new: str, key: str) -> None:
    assert old in WORLD
    cfg = load_config(config(tmp_path, WORLD.replace(old, new, 1)))
    with pytest.raises(ConfigError) as err:
        validate_kinds(cfg)
    assert err.value.key == key, str(err.value)


def test_objects_and_robots_are_required(tmp_path: Path) -> None:
    text = '[[agents]]\nid = "world"\nkind = "world"\n'
    cfg = load_config(config(tmp_path, text))
    with pytest.raises(ConfigError) as err:
        validate_kinds(cfg)
    assert err.value.key == "agents[0].objects"
