"""A task-tree robot's keys reach it whole (``RobotParams``), with the body's lease
terms as the lease keys' defaults, and a lease it cannot keep is a ConfigError naming
the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from teamtree.agents.runtime.config import load_config
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import ConfigError, Endpoint
from teamtree.planners.tasktree import LeaseTerms

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "tea_party_s1.toml"


def test_the_lease_keys_default_to_the_bodys_lease_terms() -> None:
    params = RobotParams(profile="pr2", driver="pr2-driver")
    assert params.lease() == LeaseTerms()


def test_the_config_gives_the_robot_its_keys_whole() -> None:
    config = load_config(CONFIG)
    values = RobotAgent.params_from_config(config.agent("pr2"), config)
    params = values["params"]
    assert isinstance(params, RobotParams) and params.driver == "pr2-driver"
    robot = RobotAgent("pr2", team="t1", endpoint=Endpoint("127.0.0.1", 1), **values)
    assert robot.params is params and robot.link.lease == params.lease()
    assert robot.factsheet()["metric"] == params.metric


def test_a_renewal_not_below_the_lease_names_the_key(tmp_path: Path) -> None:
    text = CONFIG.read_text().replace('driver = "pr2-driver"\n', 'driver = "pr2-driver"\nlease_s = 1.0\nlease_renew_s = 2.0\n', 1)  # fmt: skip
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    config = load_config(bad)
    with pytest.raises(ConfigError, match=r"lease_renew_s.*renew_s is 2.0; give a positive"):
        RobotAgent.params_from_config(config.agent("pr2"), config)
