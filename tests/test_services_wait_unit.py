"""Which services a hand-started member waits for before its first claim."""

from __future__ import annotations

from teamtree.agents.cli.services_wait import services_to_await
from teamtree.agents.runtime.config import load_config
from tests.conftest import REPO


def test_a_member_waits_for_its_own_driver_and_the_services_not_for_other_robots_drivers():
    config = load_config(REPO / "configs" / "tea_party_s1.toml")
    specs = {s.id: s for s in [*config.members, *config.services]}
    pr2 = services_to_await(config, specs["pr2"])
    assert "pr2-driver" in pr2 and "world" in pr2
    assert "baxter-driver" not in pr2  # starts with the Baxter, which may join later
    assert "baxter-driver" in services_to_await(config, specs["baxter"])
    assert services_to_await(config, specs["world"]) == []  # services wait for nobody
