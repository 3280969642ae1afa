"""Without access control (a broker with no logins) ``teamtree run`` and every agent
say so once at start-up, naming the risk and ``teamtree acl``."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import REPO, teamtree_cmd

pytestmark = pytest.mark.integration


def test_run_and_each_agent_warn_once_that_access_control_is_off() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMTREE_PASSWORD")}
    env.pop("TEAMTREE_CREDENTIALS_DIR", None)
    out = subprocess.run(
        teamtree_cmd("run", str(REPO / "configs" / "hello.toml"), "--timeout", "90"),
        capture_output=True, text=True, timeout=150, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    lines = (out.stdout + out.stderr).splitlines()
    run = [line for line in lines if "warning: access control is off: this run" in line]
    assert len(run) == 1, lines[:20]
    assert "teamtree acl" in run[0] and "any member's name" in run[0]
    for agent in ("alpha", "beta", "gamma"):
        said = [x for x in lines if x.startswith(agent) and "access_control.off" in x]
        assert len(said) == 1, f"{agent}: {said}\n" + "\n".join(lines[:40])
