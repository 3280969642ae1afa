"""compose.yaml, checked without docker: its structure, and its services' commands run
as local processes against a local mosquitto (compose host names → 127.0.0.1, ports →
free ports, volumes → temporary directories) until the tea party is done."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from teamtree.agents.observers.timeline import load_records
from teamtree.broker import find_mosquitto, free_port, wait_for_port
from tests.conftest import REPO
from tests.mission_record import assert_each_leaf_done_once
from tests.ops_support import agent_cmd, ops_cmd

yaml = pytest.importorskip("yaml")

COMPOSE = REPO / "compose.yaml"
AGENT_SERVICES = {
    "world",
    "allocator-1",
    "allocator-2",
    "pr2-driver",
    "baxter-driver",
    "pr2",
    "baxter",
    "human",
}
MEMBERS = {"pr2", "baxter", "human"}  # they exit 0 when the mission is done


def load_compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


_VAR = re.compile(r"\$\$|\$\{(\w+)(?::?-([^}]*))?\}")


def interpolate(value: str, env: dict[str, str]) -> str:
    """compose's variable interpolation: ${X}, ${X:-default}, $$ for a literal $."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1)) or (m.group(2) or "")

    return _VAR.sub(sub, value)


# -- structure --------------------------------------------------------------------


def test_compose_structure() -> None:
    compose = load_compose()
    services = compose["services"]
    assert {"mosquitto", "broker-config", "monitor"} | AGENT_SERVICES <= set(services)
    config_path = REPO / "configs" / "compose_tea_party.toml"
    config = tomllib.loads(config_path.read_text())
    kinds = {a["id"]: a["kind"] for a in config["agents"]}
    assert {kinds["allocator-1"], kinds["allocator-2"]} == {"allocator"}
    assert kinds["pr2"] == kinds["baxter"] == "robot"
    assert kinds["human"] == "human"
    roles = {a["id"]: a.get("role", "member") for a in config["agents"]}
    assert {i for i, r in roles.items() if r == "member"} == MEMBERS

    # the broker: generated config, explicit listeners, websockets, persistence
    broker = services["mosquitto"]
    assert interpolate(broker["image"], {}).startswith("eclipse-mosquitto:2")
    assert interpolate(broker["image"], {"MOSQUITTO_IMAGE": "m:1"}) == "m:1"
    image = services["world"]["image"]
    assert interpolate(image, {}) == "teamtree:latest"
    assert interpolate(image, {"TEAMTREE_IMAGE": "t:1"}) == "t:1"
    base = services["world"]["build"]["args"]["BASE_IMAGE"]
    assert interpolate(base, {}) == "python:3.11-slim"
    assert "ARG BASE_IMAGE=python:3.11-slim" in (REPO / "Dockerfile").read_text()
    assert broker["command"][-1] == "/mosquitto/config/mosquitto.conf"
    assert broker["depends_on"]["broker-config"]["condition"] == "service_completed_successfully"
    assert {v.split(":")[1] for v in broker["volumes"]} >= {"/mosquitto/config", "/mosquitto/data"}
    assert {p.rsplit(":", 1)[1] for p in broker["ports"]} == {"1883", "9001"}
    moved = {"MQTT_PORT": "11883", "MQTT_WS_PORT": "19001", "MQTT_HOST_IP": "127.0.0.1"}
    assert {interpolate(p, moved) for p in broker["ports"]} == {
        "127.0.0.1:11883:1883",
        "127.0.0.1:19001:9001",
    }
    # the world is reachable from the drivers' containers: every interface, a fixed
    # port, and the compose service name in its factsheet
    world = next(a for a in config["agents"] if a["id"] == "world")
    assert world["zmq_host"] == "0.0.0.0" and world["zmq_port"] == 5555
    assert world["zmq_advertise"] in services
    gen = [interpolate(a, {}) for a in services["broker-config"]["command"]]
    assert gen[:2] == ["teamtree", "acl"] and "--conf" in gen
    assert gen[gen.index("--websockets-port") + 1] == "9001"
    assert gen[gen.index("--persistence-dir") + 1] == "/mosquitto/data"
    assert gen[gen.index("--bind") + 1] == "0.0.0.0"
    assert services["broker-config"]["restart"] == "no"

    for name in AGENT_SERVICES:
        service = services[name]
        argv = [interpolate(a, {}) for a in service["command"]]
        assert argv[:2] == ["teamtree", "agent"], name
        assert argv[argv.index("--id") + 1] == name, f"{name} runs another agent"
        assert argv[argv.index("--config") + 1] == "configs/compose_tea_party.toml"
        assert argv[argv.index("--broker") + 1] == "mqtt://mosquitto:1883"
        assert name in kinds, f"{name} is not in the compose config"
        health = service["healthcheck"]["test"]
        assert health[:3] == ["CMD", "teamtree", "monitor"] and health[-1] == name
        assert "/run/teamtree" in " ".join(service["volumes"])
        assert service["environment"]["TEAMTREE_CREDENTIALS_DIR"] == "/run/teamtree/credentials"
        members = name in MEMBERS
        assert service["restart"] == ("on-failure" if members else "unless-stopped"), name
        assert service["depends_on"], f"{name} starts before its broker"
    assert services["pr2"]["depends_on"]["pr2-driver"]["condition"] == "service_healthy"
    for driver in ("pr2-driver", "baxter-driver"):  # healthy once it reached the world
        health = services[driver]["healthcheck"]["test"]
        assert health[health.index("--require-fact") + 1] == f"{driver}:world"
    assert services["pr2-driver"]["depends_on"]["world"]["condition"] == "service_healthy"
    monitor = [interpolate(a, {}) for a in services["monitor"]["command"]]
    assert monitor[:2] == ["teamtree", "monitor"] and "--team" in monitor
    # attachable (`docker compose attach monitor`), but not clearing `up`'s output
    assert services["monitor"]["tty"] and services["monitor"]["stdin_open"]
    assert services["monitor"]["attach"] is False
    # the recorder ends the mission with its outcome (`up --exit-code-from recorder`)
    recorder = services["recorder"]
    rec = [interpolate(a, {}) for a in recorder["command"]]
    assert rec[:2] == ["teamtree", "record"] and "--until-done" in rec
    assert rec[rec.index("-o") + 1].startswith("/app/runs/")
    assert recorder["restart"] == "no" and "runs:/app/runs" in recorder["volumes"]
    for member in MEMBERS:  # the recorder hears each member's mission from its start
        assert services[member]["depends_on"]["recorder"]["condition"] == "service_started"
    # the web view: reachable from the host on an overridable port, read-only, healthy
    # while connected to the broker
    web = services["web"]
    argv = [interpolate(a, {}) for a in web["command"]]
    assert argv[:2] == ["teamtree", "web"] and argv[argv.index("--port") + 1] == "8080"
    assert argv[argv.index("--host") + 1] == "0.0.0.0", "reachable from outside its container"
    assert argv[argv.index("--team") + 1] == "tea-party" and "--username" not in argv
    assert [interpolate(p, {}) for p in web["ports"]] == ["127.0.0.1:8080:8080"]
    moved = {"WEB_PORT": "18080", "WEB_HOST_IP": "0.0.0.0"}
    assert [interpolate(p, moved) for p in web["ports"]] == ["0.0.0.0:18080:8080"]
    assert "/healthz" in " ".join(web["healthcheck"]["test"])
    assert web["environment"]["TEAMTREE_CREDENTIALS_DIR"] == "/run/teamtree/credentials"
    # observers are no team members: no config entry, no broker user of their own
    assert not {"monitor", "recorder", "web"} & set(kinds)
    assert "healthcheck" in broker and "healthcheck" in services["monitor"]
    assert set(compose["volumes"]) == {"broker-config", "broker-data", "runs"}
    for name, service in services.items():  # every dependency exists
        for dep in service.get("depends_on") or {}:
            assert dep in services, f"{name} depends on unknown {dep}"
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pip install --no-deps ." in dockerfile and "COPY configs/" in dockerfile
    assert "/run/teamtree" in dockerfile  # the broker-config volume starts out writable


# -- running the services' commands locally ----------------------------------------


@dataclass
class LocalService:
    name: str
    spec: dict[str, Any]
    argv: list[str]
    env: dict[str, str]
    health: list[str] | None
    mounts: dict[str, Path]
    process: subprocess.Popen[bytes] | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    healthy: asyncio.Event = field(default_factory=asyncio.Event)
    completed: asyncio.Event = field(default_factory=asyncio.Event)


class LocalCompose:
    """Runs compose services as processes: names, ports and volumes mapped locally."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.ports = {"1883": str(free_port()), "9001": str(free_port()), "8080": str(free_port())}
        self.volumes = {v: workdir / "volumes" / v for v in load_compose()["volumes"]}
        for path in self.volumes.values():
            path.mkdir(parents=True)
        self.host_env = {"TEAMTREE_BROKER": f"mqtt://127.0.0.1:{self.ports['1883']}"}
        self.services: dict[str, LocalService] = {}
        self.logs = workdir / "logs"
        self.logs.mkdir()
        self._prepare_app()
        for name, spec in load_compose()["services"].items():
            self.services[name] = self._service(name, spec)

    def _prepare_app(self) -> None:
        """The image's /app: the compose config with the world's ZeroMQ on loopback."""
        (self.workdir / "configs").mkdir()
        text = (REPO / "configs" / "compose_tea_party.toml").read_text()
        for old, new in [
            ('zmq_host = "0.0.0.0"', 'zmq_host = "127.0.0.1"'),
            ('zmq_advertise = "world"', 'zmq_advertise = "127.0.0.1"'),
            ("zmq_port = 5555", f"zmq_port = {free_port()}"),
        ]:
            assert old in text, f"the compose config no longer says {old}"
            text = text.replace(old, new)
        (self.workdir / "configs" / "compose_tea_party.toml").write_text(text)

    def _map(self, value: str, mounts: dict[str, Path]) -> str:
        value = interpolate(value, self.host_env)
        value = value.replace("mosquitto:1883", f"127.0.0.1:{self.ports['1883']}")
        value = value.replace("127.0.0.1:8080", f"127.0.0.1:{self.ports['8080']}")
        if value in self.ports:
            return self.ports[value]
        for inside in sorted(mounts, key=len, reverse=True):
            if inside in value:
                value = value.replace(inside, str(mounts[inside]))
        return value

    def _local(self, argv: list[str]) -> list[str]:
        if argv[0] == "python3":
            return [sys.executable, *argv[1:]]
        if argv[0] != "teamtree":
            return argv
        if argv[1] == "agent":
            return agent_cmd(*argv[2:])
        return ops_cmd(*argv[1:])

    def _service(self, name: str, spec: dict[str, Any]) -> LocalService:
        mounts = {}
        for volume in spec.get("volumes", []):
            source, inside = volume.split(":")[:2]
            mounts[inside] = self.volumes[source]
        argv = [self._map(a, mounts) for a in spec["command"]]
        if argv[0] == "mosquitto":
            argv[0] = find_mosquitto() or "mosquitto"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.update(
            {k: self._map(str(v), mounts) for k, v in (spec.get("environment") or {}).items()}
        )
        health = None
        if "healthcheck" in spec:
            test = [self._map(a, mounts) for a in spec["healthcheck"]["test"]]
            if test[0] == "CMD-SHELL":  # map each word of the shell line
                words = " ".join(test[1:]).split()
                test = ["bash", "-c", " ".join(self._map(w, mounts) for w in words)]
            else:
                test = self._local(test[1:])
            health = test
        return LocalService(name, spec, self._local(argv), env, health, mounts)

    async def _check(self, service: LocalService) -> bool:
        proc = await asyncio.create_subprocess_exec(
            *service.health, env=service.env, cwd=self.workdir,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        return await proc.wait() == 0

    async def _run(self, service: LocalService) -> None:
        for dep, cond in (service.spec.get("depends_on") or {}).items():
            other = self.services[dep]
            event = {
                "service_started": other.started,
                "service_healthy": other.healthy,
                "service_completed_successfully": other.completed,
            }[cond["condition"]]
            await event.wait()
        if service.name == "mosquitto":  # the paths inside the generated file, too
            conf = self.volumes["broker-config"] / "mosquitto.conf"
            text = "\n".join(
                self._map(line, service.mounts) for line in conf.read_text().split("\n")
            )
            if os.geteuid() == 0:
                text += "user root\n"  # as MosquittoBroker does
            conf.write_text(text)
        log = (self.logs / f"{service.name}.log").open("ab")
        service.process = subprocess.Popen(
            service.argv, stdout=log, stderr=log, env=service.env, cwd=self.workdir
        )
        service.started.set()
        if service.name == "mosquitto":
            await wait_for_port("127.0.0.1", int(self.ports["1883"]), timeout=10)
        if service.spec.get("restart") == "no":
            while service.process.poll() is None:
                await asyncio.sleep(0.05)
            assert service.process.returncode == 0, self.log(service.name)
            service.completed.set()
            return
        while service.health is not None and not service.healthy.is_set():
            if service.process.poll() is not None:
                return
            if await self._check(service):
                service.healthy.set()
            else:
                await asyncio.sleep(0.5)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]

    async def up(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(self._run(s)) for s in self.services.values()]

    def down(self) -> None:
        running = [
            s.process for s in self.services.values() if s.process and s.process.poll() is None
        ]
        order = sorted(running, key=lambda p: p.args[0] == find_mosquitto())  # broker last
        for proc in order:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.integration
async def test_compose_services_run_locally_and_the_team_completes(tmp_path: Path) -> None:
    if find_mosquitto() is None or shutil.which("mosquitto_sub") is None:
        pytest.skip("mosquitto and mosquitto_sub are needed")
    local = LocalCompose(tmp_path)
    tasks = []
    try:
        # a dozen Python processes start at once (one more with the web view): on a
        # loaded 2-core machine the services alone took over 3 minutes to come up
        async with asyncio.timeout(300):
            tasks = await local.up()
            robots = [local.services[m] for m in MEMBERS]
            while not all(r.process and r.process.poll() is not None for r in robots):
                for s in local.services.values():
                    if s.spec.get("restart") == "unless-stopped" and s.process:
                        assert s.process.poll() is None, f"{s.name} died:\n{local.log(s.name)}"
                await asyncio.sleep(0.2)
            for robot in robots:
                assert robot.process.returncode == 0, local.log(robot.name)
                if robot.name != "human":
                    assert "mission.done" in local.log(robot.name)
            assert local.services["world"].healthy.is_set()
            # the recorder saw the mission end, exited 0, and its file shows each leaf once
            recorder = local.services["recorder"]
            while recorder.process is None or recorder.process.poll() is None:
                await asyncio.sleep(0.2)
            assert recorder.process.returncode == 0, local.log("recorder")
            assert "mission done: 4 leaves" in local.log("recorder")
            records = load_records(local.volumes["runs"] / "mission.jsonl")
            assert_each_leaf_done_once(records)
            # a snapshot of the finished team through the monitor's own command
            monitor = local.services["monitor"]
            once = subprocess.run(
                [*monitor.argv, "--once", "--json", "--wait", "1.5"],
                env=monitor.env, capture_output=True, text=True, timeout=30, cwd=tmp_path,
            )  # fmt: skip
            assert once.returncode == 0, once.stderr
            snap = json.loads(once.stdout)
            assert snap["mission"]["done"] == snap["mission"]["leaves"] > 0, snap["mission"]
            online = set(snap["online"])
            assert {"world", "allocator-1", "allocator-2", "pr2-driver"} <= online
            # left gracefully, done (its log says how, should the Will have stayed)
            assert snap["agents"]["pr2"]["presence"] == "OFFLINE", local.log("pr2")
            assert snap["broker"].get("version", "").startswith("mosquitto")
            assert "pr2" in local.log("monitor")  # the live view showed the team
            # the web view: healthy (its healthcheck), the finished team on its page as the
            # monitor user, and itself no member
            assert local.services["web"].healthy.is_set(), local.log("web")
            page = f"http://127.0.0.1:{local.ports['8080']}/"
            with urllib.request.urlopen(page + "api/state", timeout=10) as reply:
                state = json.loads(reply.read())
            assert state["mission"]["complete"] and state["connected"], state["mission"]
            assert {"pr2", "baxter", "world"} <= set(state["agents"])
            assert not {a for a in state["agents"] if a.startswith("web")}, state["agents"]
            assert state["broker"].get("version", "").startswith("mosquitto"), "read as monitor"
            # operator tools against this access-controlled broker, with the volume's
            # credentials: `tree --broker` reads as the monitor user and joins nothing,
            # `human` logs in as its id
            url = f"mqtt://127.0.0.1:{local.ports['1883']}"
            tree = subprocess.run(
                ops_cmd("tree", "configs/compose_tea_party.toml", "--broker", url, "--wait", "1.5"),
                env=monitor.env, capture_output=True, text=True, timeout=30, cwd=tmp_path,
            )  # fmt: skip
            assert tree.returncode == 0, tree.stderr
            assert "2 robot snapshot(s) read" in tree.stdout, tree.stdout
            human = subprocess.run(
                ops_cmd("human", "--id", "human", "--team", "tea-party", "--broker", url,
                        "--no-world", "--stay"),
                input="status\nquit\n", env=monitor.env, capture_output=True, text=True,
                timeout=30, cwd=tmp_path,
            )  # fmt: skip
            assert human.returncode == 0 and "ready human" in human.stdout, human.stdout
            again = subprocess.run(
                [*monitor.argv, "--once", "--json", "--wait", "1.5"],
                env=monitor.env, capture_output=True, text=True, timeout=30, cwd=tmp_path,
            )  # fmt: skip
            seen = set(json.loads(again.stdout)["agents"])
            assert not {a for a in seen if a.startswith("viewer")}, seen
            # the drivers' healthcheck tells a driver that never reached its world
            lacking = subprocess.run(
                [*monitor.argv, "--once", "--wait", "1", "--require-fact", "pr2-driver:nope"],
                env=monitor.env, capture_output=True, text=True, timeout=30, cwd=tmp_path,
            )  # fmt: skip
            assert lacking.returncode == 1 and "pr2-driver:nope" in lacking.stderr
            anon = subprocess.run(
                ["mosquitto_sub", "-p", local.ports["1883"], "-t", "#", "-C", "1", "-W", "2"],
                capture_output=True, text=True, timeout=10,
            )  # fmt: skip
            assert anon.returncode != 0, "the compose broker let an anonymous client in"
    finally:
        for task in tasks:
            task.cancel()
        local.down()
