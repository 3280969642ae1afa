"""World and sim_driver end to end through mosquitto: a world process, a driver process
(``teamtree agent``), and an in-test robot agent that commands the driver; then the
driver and world in-process for pause/resume/cancel, agent loss and violations."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from teamtree.agents import Agent, RuntimeSettings, build_agent, load_config
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.hardware import CommandStatus
from tests.conftest import AgentProcs, eventually, scaled, write_config

pytestmark = pytest.mark.integration

AGENTS = """
[[agents]]
id = "world"
kind = "world"
role = "service"
time_factor = {time_factor}

[agents.objects.cup]
shape = "cylinder"
dims = [0.04, 0.10]
position = [0.10, -0.05, 0.80]
goal = [-0.05, 0.05, 0.80]

[agents.objects.apple]
shape = "sphere"
dims = [0.04]
position = [0.30, 0.30, 0.79]
goal = [0.20, 0.40, 0.79]

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

[[agents]]
id = "baxter-driver"
kind = "sim_driver"
role = "service"
robot = "baxter"
"""


class FakeRobot(Agent):
    """Stands in for the robot agent: records observations, progress, world messages."""

    kind = "robot"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.observations: dict[str, dict[str, Any]] = {}
        self.n_observations = 0
        self.progress: list[tuple[str, str, dict[str, Any]]] = []
        self.states: list[dict[str, Any]] = []
        self.violations: list[dict[str, Any]] = []

    async def setup(self) -> None:
        self.on_agents("observation", self._on_observation, kind="observation")
        self.on_agents("progress", self._on_progress)
        self.on_agents("state", self._on_state, kind="world.state")
        self.on_agents("events", self._on_event, kind="world.violation")

    async def _on_observation(self, env: Envelope, topic: Topic) -> None:
        """Keep each driver's newest observation with every object: a keyframe, and
        the changed-only ones merged over it (drivers/observation_delta.py)."""
        body = dict(env.body)
        known = self.observations.get(env.sender)
        if not body.get("full", True):
            if known is None:
                return  # a delta before any keyframe
            body["objects"] = {**known["objects"], **body["objects"]}
        self.observations[env.sender] = body
        self.n_observations += 1

    async def _on_progress(self, env: Envelope, topic: Topic) -> None:
        self.progress.append((env.sender, env.kind, env.body))

    async def _on_state(self, env: Envelope, topic: Topic) -> None:
        self.states.append(env.body)

    async def _on_event(self, env: Envelope, topic: Topic) -> None:
        self.violations.append(env.body)

    def kinds(self, command_id: str) -> list[str]:
        return [k for _, k, b in self.progress if b.get("command_id") == command_id]

    def obj(self, driver: str, name: str) -> dict[str, Any] | None:
        obs = self.observations.get(driver)
        return None if obs is None else obs["objects"][name]

    async def command(self, driver: str, kind: str, **body: Any) -> None:
        await self.publish("command", kind, body, recipient=driver)


def fake(agent_id: str, team: str, broker: Any) -> FakeRobot:
    return FakeRobot(agent_id, team=team, endpoint=broker.endpoint, runtime=RuntimeSettings())


async def test_world_and_driver_processes(mosquitto, team, tmp_path, agent_procs) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS.format(time_factor=20.0))
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    robot = fake("pr2", team, mosquitto)
    async with asyncio.timeout(scaled(25)), robot:
        procs.start("pr2-driver")  # before the world: it waits for the world's factsheet
        procs.start("world")
        world = await eventually(lambda: robot.team_view.get("world"), 15, what="world presence")
        await eventually(lambda: world.factsheet.get("zmq"), 15, what="world factsheet")
        assert world.factsheet["kind"] == "world"
        assert world.factsheet["zmq"].startswith("tcp://127.0.0.1:")
        await eventually(lambda: "pr2-driver" in robot.observations, 15, what="observations")
        sheet = robot.team_view.get("pr2-driver").factsheet
        assert sheet["kind"] == "sim_driver" and sheet["robot"] == "pr2"
        assert sheet["profile"]["name"] == "pr2" and sheet["profile"]["mobile_base"] is True
        obs = robot.observations["pr2-driver"]
        assert obs["robot"]["name"] == "pr2" and obs["robot"]["busy"] is None
        assert set(obs["objects"]) == {"cup", "apple"}
        assert obs["objects"]["cup"]["at_goal"] is False

        await robot.command(
            "pr2-driver",
            "behaviour.execute",
            command_id="c1",
            node="place_cup",
            behaviour="PLACE",
            params={"object": "cup"},
        )
        await eventually(lambda: "behaviour.finished" in robot.kinds("c1"), 10, what="finished")
        assert robot.kinds("c1") == ["behaviour.started", "behaviour.finished"]
        done = next(b for _, k, b in robot.progress if k == "behaviour.finished")
        assert done == {"command_id": "c1", "node": "place_cup", "robot": "pr2", "ok": True,
                        "reason": None, "t": done["t"]}  # fmt: skip
        assert done["t"] > 1.0  # simulated seconds
        await eventually(lambda: robot.obj("pr2-driver", "cup")["at_goal"], 5, what="cup at goal")
        cup = robot.obj("pr2-driver", "cup")
        assert cup["position"] == [-0.05, 0.05, 0.8] and cup["held_by"] is None
        assert robot.observations["pr2-driver"]["robot"]["busy"] is None

        # a second execute of c1 does nothing; an unknown object fails with a reason
        await robot.command("pr2-driver", "behaviour.execute", command_id="c1", node="place_cup",
                            behaviour="PLACE", params={"object": "cup"})  # fmt: skip
        await robot.command("pr2-driver", "behaviour.execute", command_id="c2", node="x",
                            behaviour="PLACE", params={"object": "mug"})  # fmt: skip
        await eventually(lambda: robot.kinds("c2"), 5, what="c2 failed")
        assert robot.kinds("c2") == ["behaviour.failed"]
        assert [b["reason"] for _, k, b in robot.progress if b["command_id"] == "c2"] == [
            "unknown_object"
        ]
        assert robot.kinds("c1") == ["behaviour.started", "behaviour.finished"]

        # moving an object shows in the observations and in the retained world state
        reply = await robot.request(
            "world", "world.move_object", {"object": "apple", "position": [0.0, 0.3, 0.79]}
        )
        assert reply.kind == "world.move_object.reply" and reply.body["ok"] is True
        await eventually(
            lambda: robot.obj("pr2-driver", "apple")["position"] == [0.0, 0.3, 0.79], 5,
            what="apple moved in the observation",
        )  # fmt: skip
        await eventually(
            lambda: robot.states and robot.states[-1]["objects"]["apple"]["position"]
            == [0.0, 0.3, 0.79], 5, what="apple moved in world/state",
        )  # fmt: skip
        assert robot.states[-1]["objects"]["cup"]["at_goal"] is True
        await robot.publish(
            "world", "world.move_object", {"object": "apple", "position": [0.1, 0.3, 0.79]},
            team=True,
        )  # fmt: skip
        await eventually(
            lambda: robot.obj("pr2-driver", "apple")["position"] == [0.1, 0.3, 0.79], 5,
            what="apple moved again (fire and forget)",
        )  # fmt: skip
        before = robot.n_observations
        await asyncio.sleep(0.5)
        assert robot.n_observations - before >= 3  # ~10 Hz even when nothing changes
        assert robot.violations == []


async def start_in_process(config: Path, team: str, broker: Any, *ids: str) -> list[Agent]:
    cfg = load_config(config)
    agents = [build_agent(cfg, agent_id, endpoint=broker.endpoint, team=team) for agent_id in ids]
    for agent in agents:
        await agent.__aenter__()
        agent.spawn(agent.main(), "main")
    return agents


async def test_pause_resume_cancel_agent_loss_and_violations(mosquitto, team, tmp_path) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS.format(time_factor=5.0))
    services: list[Agent] = []
    async with asyncio.timeout(scaled(25)):
        try:
            services = await start_in_process(
                config, team, mosquitto, "world", "pr2-driver", "baxter-driver"
            )
            pr2, baxter = fake("pr2", team, mosquitto), fake("baxter", team, mosquitto)
            async with pr2, baxter:
                for r, d in ((pr2, "pr2-driver"), (baxter, "baxter-driver")):
                    await eventually(lambda r=r, d=d: d in r.observations, 10, what=f"{d} obs")
                # pause and resume (and a command from a stranger is ignored)
                await baxter.command("pr2-driver", "behaviour.execute", command_id="evil",
                                     node="n", behaviour="PLACE", params={"object": "cup"})  # fmt: skip
                await pr2.command("pr2-driver", "behaviour.execute", command_id="p1",
                                  node="cup", behaviour="PLACE", params={"object": "cup"})  # fmt: skip
                await eventually(lambda: pr2.kinds("p1"), 5, what="p1 started")
                await pr2.command("pr2-driver", "behaviour.pause", command_id="p1")
                await eventually(lambda: "behaviour.paused" in pr2.kinds("p1"), 5, what="paused")
                await eventually(
                    lambda: pr2.observations["pr2-driver"]["robot"]["paused"], 5, what="frozen"
                )
                arm = pr2.observations["pr2-driver"]["robot"]["arm"]
                await asyncio.sleep(0.4)
                assert pr2.observations["pr2-driver"]["robot"]["arm"] == arm
                assert pr2.observations["pr2-driver"]["robot"]["paused"] is True
                await pr2.command("pr2-driver", "behaviour.resume", command_id="p1")
                await eventually(lambda: "behaviour.finished" in pr2.kinds("p1"), 5, what="p1")
                assert pr2.kinds("p1") == [
                    "behaviour.started", "behaviour.paused", "behaviour.resumed",
                    "behaviour.finished",
                ]  # fmt: skip
                assert pr2.kinds("evil") == []

                # placing the cup a second time is a violation, published on world/events
                await baxter.command("baxter-driver", "behaviour.execute", command_id="b1",
                                     node="cup", behaviour="PLACE", params={"object": "cup"})  # fmt: skip
                await eventually(lambda: pr2.violations, 8, what="violation")
                assert pr2.violations[0]["kind"] == "placed_twice"
                assert pr2.violations[0]["robots"] == ["baxter"]

                # cancel mid-way: the apple is put down where the gripper is
                await pr2.command("pr2-driver", "behaviour.execute", command_id="p2",
                                  node="apple", behaviour="PLACE", params={"object": "apple"})  # fmt: skip
                await eventually(
                    lambda: pr2.obj("pr2-driver", "apple")["held_by"] == "pr2", 8, what="held"
                )
                await pr2.command("pr2-driver", "behaviour.cancel", command_id="p2")
                await eventually(lambda: "behaviour.failed" in pr2.kinds("p2"), 5, what="p2")
                failed = [b for _, k, b in pr2.progress if k == "behaviour.failed"][-1]
                assert failed["reason"] == "cancelled" and failed["ok"] is False
                await eventually(lambda: pr2.obj("pr2-driver", "apple")["held_by"] is None, 5)

                # the robot agent vanishes mid-behaviour: its driver cancels it
                await baxter.command("baxter-driver", "behaviour.execute", command_id="b2",
                                     node="apple", behaviour="PLACE",
                                     params={"object": "apple"})  # fmt: skip
                await eventually(lambda: baxter.kinds("b2"), 5, what="b2 started")
            # both fakes left (OFFLINE): watch the world from a third agent
            watcher = fake("watcher", team, mosquitto)
            async with watcher:
                await eventually(
                    lambda: watcher.observations.get("baxter-driver", {})
                    .get("robot", {}).get("busy", "x") is None, 5, what="baxter idle",
                )  # fmt: skip
                apple = watcher.obj("baxter-driver", "apple")
                assert apple["held_by"] is None and apple["at_goal"] is False
            world = services[0].world  # type: ignore[attr-defined]
            assert world.command_status("baxter", "b2") is CommandStatus.CANCELLED
        finally:
            for agent in services:
                await agent.stop()


async def test_driver_follows_a_restarted_world(mosquitto, team, tmp_path, agent_procs) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS.format(time_factor=20.0))
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    robot = fake("pr2", team, mosquitto)
    async with asyncio.timeout(scaled(25)), robot:
        procs.start("world")
        procs.start("pr2-driver")
        await eventually(lambda: "pr2-driver" in robot.observations, 15, what="observations")
        first = robot.team_view.get("world").factsheet["zmq"]
        procs.kill("world")
        await eventually(lambda: not robot.team_view.get("world").online, 5, what="world Last Will")
        procs.start("world")
        await eventually(
            lambda: robot.team_view.get("world").factsheet.get("zmq") not in (None, first),
            15, what="a new world address",
        )  # fmt: skip
        await robot.command("pr2-driver", "behaviour.execute", command_id="r1", node="cup",
                            behaviour="PLACE", params={"object": "cup"})  # fmt: skip
        await eventually(lambda: "behaviour.finished" in robot.kinds("r1"), 10, what="r1 done")
        assert robot.team_view.get("pr2-driver").factsheet["world"] != first
