"""A member of the config started by hand (``teamtree agent``) after its teammate began
the mission: both work, and the teammate counts the leaf the late member did.

r1 cannot reach the cup (its fixed base stands 3 m from it) and r2 cannot reach the
sugar, and the tree is THEN(cup, sugar): only r2 can do the first leaf, and r1 must
go on once it is done. r2 joins a running team, so it receives r1's retained presence
together with the declaration of interest r1 addressed to it on seeing it come online,
and that declaration must count (docs/protocol.md, "Declared interest"): dropped, it
would stay unacknowledged and r1 could claim nothing until its timed resend. Separate
processes on mosquitto, judged from what the broker carried and the robots' logs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from teamtree.agents.observers.monitor import TeamObserver
from tests.conftest import AgentProcs, eventually, scaled

pytestmark = pytest.mark.integration

CONFIG = """
[team]
name = "{team}"

[runtime]
tick_hz = 20
heartbeat_s = 1.0
keepalive_s = 2
request_timeout_s = 3.0

[mission]
kind = "tasktree"
timeout_s = 120
tree = "THEN(cup, sugar)"

[[agents]]
id = "r1"
kind = "robot"
profile = "baxter"
driver = "r1-driver"
seed = 1
start_timeout_s = 1.0

[[agents]]
id = "r2"
kind = "robot"
profile = "baxter"
driver = "r2-driver"
seed = 2
start_timeout_s = 1.0

[[agents]]
id = "world"
kind = "world"
role = "service"
time_factor = 4.0

[agents.robots.r1]
profile = "baxter"
base = [-1.5, 0.65, 0.0]
yaw = -1.5707963

[agents.robots.r2]
profile = "baxter"
base = [1.5, 0.65, 0.0]
yaw = -1.5707963

[agents.objects.cup]
shape = "cylinder"
dims = [0.035, 0.09]
position = [1.45, 0.00, 0.795]
goal = [1.66, -0.22, 0.810]

[agents.objects.sugar]
shape = "box"
dims = [0.06, 0.06, 0.08]
position = [-1.48, 0.08, 0.790]
goal = [-1.34, -0.10, 0.800]

[[agents]]
id = "r1-driver"
kind = "sim_driver"
role = "service"
robot = "r1"

[[agents]]
id = "r2-driver"
kind = "sim_driver"
role = "service"
robot = "r2"
"""


def _acks_r1(kind: str, body: dict) -> bool:
    """Whether a message of `kind` from r2 acknowledges a declaration of r1's."""
    if kind == "node.interest_ack":
        return body.get("declarer") == "r1"
    if kind == "node.interest_acks":
        return any(a.get("declarer") == "r1" for a in body.get("acks") or ())
    return False


async def test_a_member_started_after_the_mission_began_works_with_its_teammate(
    mosquitto, team, tmp_path: Path, agent_procs
) -> None:
    config = tmp_path / "late.toml"
    config.write_text(CONFIG.format(team=team))
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    transitions: list[dict] = []
    r2_acks_of_r1: list[int] = []  # r2's acknowledgements of r1's declarations (ts)
    violations: list[int] = []

    def hook(env, topic, message) -> None:
        if env.kind == "node.transition":
            transitions.append({**env.body, "ts": env.ts})
        elif env.sender == "r2" and _acks_r1(env.kind, env.body):
            r2_acks_of_r1.append(env.ts)
        elif env.kind == "world.state":
            violations.append(env.body["violations"])

    async with (
        asyncio.timeout(scaled(240)),
        TeamObserver(mosquitto.endpoint, team, on_message=hook) as obs,
    ):
        await obs.wait_connected()
        for agent_id in ("world", "r1-driver", "r2-driver", "r1"):
            procs.start(agent_id)
        await eventually(
            lambda: '"mission.started"' in procs.log("r1"), 60, what="r1 began the mission"
        )
        procs.start("r2")  # a plain `teamtree agent` of a member, after the start
        robots = [procs.procs["r1"], procs.procs["r2"]]
        await eventually(
            lambda: all(p.poll() is not None for p in robots), 120, what="both robots done"
        )
        await asyncio.sleep(0.5)  # the world's last state
    r1_log, r2_log = procs.log("r1"), procs.log("r2")
    assert procs.procs["r1"].returncode == 0, r1_log[-3000:]
    assert procs.procs["r2"].returncode == 0, r2_log[-3000:]
    assert '"missing": ["r2"]' in r1_log, "r2 was not late: r1 waited for it"
    done = {(t["node"], t["agent"]) for t in transitions if t["status"] == "done"}
    assert done == {("root/0", "r2"), ("root/1", "r1")}, done
    assert '"mission.done"' in r1_log and '"mission.done"' in r2_log
    # r1's copy of the tree has r2's cup done: it started the sugar, which waits for it
    assert "not_peer" not in r2_log, "r2 dropped r1's declaration of interest"
    r2_working = min(t["ts"] for t in transitions if t["agent"] == "r2")
    assert r2_acks_of_r1 and min(r2_acks_of_r1) < r2_working, (
        "r2 acknowledged r1's declaration only after it worked (r1's timed resend): "
        f"acks at {r2_acks_of_r1}, r2 working at {r2_working}"
    )
    assert violations and violations[-1] == 0, "the world saw a double hold or place"
