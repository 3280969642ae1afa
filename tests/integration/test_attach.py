"""``teamtree attach``: a third robot joins a running tea party mid-mission, learns the
mission from retained topics and snapshots, takes work, and nothing runs twice."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from teamtree.agents.observers.monitor import TeamObserver
from tests.conftest import REPO, AgentProcs, eventually, scaled, slowness
from tests.ops_support import ops_cmd

pytestmark = pytest.mark.integration

TREE = "AND(cup, sugar, tea_pot, sandwich, orange, apple, burger)"
THIRD = """
[[agents]]
id = "robot3"
kind = "robot"
profile = "pr2"
driver = "robot3-driver"
metric = "distance+grasp"
seed = 3

[[agents]]
id = "robot3-driver"
kind = "sim_driver"
role = "service"
robot = "robot3"
"""


def three_robot_config(tmp_path: Path, team: str) -> Path:
    """The tea party with every leaf in one AND, a slower world (slower still on a
    loaded machine), and a third robot (a
    PR2 at the table's -x end) that the first two do not wait for."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = text.replace('name = "tea-party-s1"', f'name = "{team}"')
    text = text.split('[[agents]]\nid = "recorder"')[0]
    text = text.replace(
        'tree = "AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))"',
        f'tree = "{TREE}"',
    )
    # slower on a loaded machine, where ``teamtree attach`` takes longer to start: the
    # others must not finish every leaf before robot3 is in
    text = text.replace("time_factor = 8.0", f"time_factor = {1.5 / slowness():.3f}")
    text = text.replace("seed = 1\n", "seed = 1\nstart_timeout_s = 1.0\n")
    text = text.replace("seed = 2\n", "seed = 2\nstart_timeout_s = 1.0\n")
    text = text.replace(
        "[agents.robots.baxter]",
        '[agents.robots.robot3]\nprofile = "pr2"\nbase = [-0.65, 0.0, 0.0]\nyaw = 0.0\n\n'
        "[agents.robots.baxter]",
    )
    path = tmp_path / "three.toml"
    path.write_text(text + THIRD)
    return path


def check_once_each(transitions: list[dict]) -> dict[str, list[str]]:
    """Every leaf done once, never worked on by two robots at once; returns who did what."""
    spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    open_: dict[tuple[str, str], int] = {}
    done: dict[str, list[str]] = defaultdict(list)
    for t in transitions:
        key = (t["node"], t["agent"])
        if t["status"] == "working":
            open_[key] = t["ts"]
        elif key in open_:
            spans[t["node"]].append((open_.pop(key), t["ts"], t["agent"]))
            if t["status"] == "done":
                done[t["node"]].append(t["agent"])
    for node, s in spans.items():
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(sorted(s)):
            assert start_b >= end_a, f"{a} and {b} worked on {node} at once"
    assert all(len(agents) == 1 for agents in done.values()), f"done twice: {dict(done)}"
    assert len(done) == 7, f"not every leaf done: {dict(done)}"
    by_agent: dict[str, list[str]] = defaultdict(list)
    for node, agents in done.items():
        by_agent[agents[0]].append(node)
    return by_agent


async def test_a_third_robot_attached_mid_mission_takes_work(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    config = three_robot_config(tmp_path, team)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    transitions: list[dict] = []
    violations: list[int] = []

    def hook(env, topic, message) -> None:
        if env.kind == "node.transition":
            transitions.append({**env.body, "ts": env.ts})
        elif env.kind == "world.state":
            violations.append(env.body["violations"])

    attach = None
    async with (
        asyncio.timeout(scaled(150)),
        TeamObserver(mosquitto.endpoint, team, on_message=hook) as obs,
    ):
        await obs.wait_connected()
        for agent_id in ("world", "pr2-driver", "baxter-driver", "robot3-driver", "pr2", "baxter"):
            procs.start(agent_id)
        await eventually(
            lambda: any(t["status"] == "working" for t in transitions), 60, what="a leaf started"
        )
        log = (tmp_path / "attach.log").open("wb")
        attach = subprocess.Popen(
            ops_cmd("attach", "--config", str(config), "--id", "robot3", "--broker",
                    mosquitto.url, "--team", team, "--log-format", "json"),
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        members = [procs.procs["pr2"], procs.procs["baxter"], attach]
        await eventually(
            lambda: all(p.poll() is not None for p in members), 120, what="every robot done"
        )
        await asyncio.sleep(0.5)
    output = (tmp_path / "attach.log").read_text(errors="replace")
    assert attach.returncode == 0, output[-3000:]
    assert "attaching robot3 (robot) to team" in output
    assert procs.procs["pr2"].returncode == 0 and procs.procs["baxter"].returncode == 0
    first3 = min((t["ts"] for t in transitions if t["agent"] == "robot3"), default=None)
    assert first3 is not None, f"the attached robot did nothing: {output[-3000:]}"
    started_before = [t for t in transitions if t["status"] == "working" and t["ts"] < first3]
    assert started_before, "robot3 was not attached mid-mission"
    by_agent = check_once_each(transitions)
    assert by_agent.get("robot3"), f"the attached robot did nothing: {dict(by_agent)}"
    assert violations and violations[-1] == 0, "the world saw a double hold or place"


async def test_attach_refuses_a_team_that_is_not_running(mosquitto, team, tmp_path) -> None:
    config = three_robot_config(tmp_path, team)
    out = subprocess.run(
        ops_cmd("attach", "--config", str(config), "--id", "robot3", "--broker", mosquitto.url,
                "--wait", "1"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"team {team!r} has no live agent" in out.stderr
    assert "Traceback" not in out.stderr


async def test_attach_refuses_an_id_that_is_already_online(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    config = three_robot_config(tmp_path, team)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    procs.start("world")
    async with TeamObserver(mosquitto.endpoint, team) as obs:
        await obs.wait_connected()
        await eventually(lambda: "world" in obs.state.snapshot()["online"], 30, what="world up")
    out = subprocess.run(
        ops_cmd("attach", "--config", str(config), "--id", "world", "--broker", mosquitto.url),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "'world' is already online" in out.stderr
    assert procs.procs["world"].poll() is None, "the running world was disturbed"
