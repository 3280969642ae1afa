"""Helpers for the vda5050 tests and benchmark: the third-party virtual AGV (vda-5050-lib
under Node) as a child process, a sniffer that validates every message on the VDA 5050
topics against the official JSON schemas, and team configs with AGV robots."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from teamtree.agents import Agent
from teamtree.drivers.vda5050 import SchemaCheck, SchemasUnavailable

NODE_DIR = Path(__file__).resolve().parent / "vda5050"
MANUFACTURER = "teamtree-lab"
SCHEMA_TOPICS = ("order", "instantActions", "state", "visualization", "connection", "factsheet")

# A small site: the AGVs start at "home" (0, 0); loads wait at A and B.
STATIONS = {
    "home": (0.0, 0.0),
    "A": (2.0, 0.0),
    "B": (2.0, 2.0),
    "C": (0.0, 2.0),
    "dock": (1.0, 1.0),
}


def require_virtual_agv() -> None:
    """Skip unless Node and the pinned vda-5050-lib are installed (tests/run.sh does)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed (apt-get install -y nodejs npm)")
    if not (NODE_DIR / "node_modules" / "vda-5050-lib").is_dir():
        pytest.skip("vda-5050-lib is not installed: cd tests/vda5050 && npm ci")
    try:
        SchemaCheck()
    except SchemasUnavailable as exc:
        pytest.skip(str(exc))


@dataclass
class VirtualAgv:
    """One virtual AGV process (vda-5050-lib's AgvController + VirtualAgvAdapter)."""

    serial: str
    broker_url: str
    log_path: Path
    options: dict[str, Any] = field(default_factory=dict)
    proc: subprocess.Popen[str] | None = None
    lines: list[str] = field(default_factory=list)

    def start(self, timeout: float = 20.0) -> VirtualAgv:
        opts = {
            "broker": self.broker_url,
            "manufacturer": MANUFACTURER,
            "serialNumber": self.serial,
            "tickRate": 20,
            "timeLapse": 4,
            "vehicleSpeed": 2,
            "publishStateInterval": 1000,
            "factsheet": FACTSHEET,
            **self.options,
        }
        self.proc = subprocess.Popen(
            ["node", str(NODE_DIR / "virtual_agv.js"), json.dumps(opts)],
            stdout=subprocess.PIPE,
            stderr=self.log_path.open("ab"),
            text=True,
            cwd=NODE_DIR,
            env=dict(os.environ, DEBUG=""),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            if line.strip() == "READY":
                return self
            if not line and self.proc.poll() is not None:
                break
        raise AssertionError(
            f"virtual AGV {self.serial} did not start: {self.log_path.read_text()}"
        )

    async def own_state(self) -> dict[str, Any]:
        """The running AGV's own state (SIGUSR2 makes it print one STATE line)."""
        assert self.proc is not None and self.proc.stdout is not None
        self.proc.send_signal(signal.SIGUSR2)
        while True:
            line = await asyncio.wait_for(asyncio.to_thread(self.proc.stdout.readline), 10)
            if line.startswith("STATE "):
                return json.loads(line[6:])
            assert line, "the virtual AGV closed its output"

    def kill(self) -> None:
        """SIGKILL: the broker publishes the AGV's Last Will (CONNECTIONBROKEN)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> dict[str, Any] | None:
        """SIGTERM; returns the AGV's own final state (what it printed), if running."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        states = [json.loads(x[6:]) for x in out.splitlines() if x.startswith("STATE ")]
        return states[-1] if states else None


@dataclass
class Sniffed:
    t: float
    subtopic: str
    serial: str
    payload: dict[str, Any]
    errors: list[str]


class Sniffer:
    """Subscribes to every VDA 5050 topic and validates each message it sees."""

    def __init__(self, host: str, port: int, interface: str = "uagv"):
        self.host, self.port, self.interface = host, port, interface
        self.check = SchemaCheck()
        self.seen: list[Sniffed] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def __aenter__(self) -> Sniffer:
        self._task = asyncio.create_task(self._run())
        await asyncio.wait_for(self._ready.wait(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        async with aiomqtt.Client(self.host, self.port, identifier=f"sniffer-{os.getpid()}") as c:
            await c.subscribe(f"{self.interface}/#", qos=1)
            self._ready.set()
            async for message in c.messages:
                parts = str(message.topic).split("/")
                if len(parts) != 5:
                    continue
                sub = parts[4]
                try:
                    payload = json.loads(message.payload)  # type: ignore[arg-type]
                except ValueError as exc:
                    errors = [f"not JSON: {exc}"]
                    self.seen.append(Sniffed(time.monotonic(), sub, parts[3], {}, errors))
                    continue
                errors = self.check.errors(sub, payload) if sub in SCHEMA_TOPICS else ["no schema"]
                self.seen.append(Sniffed(time.monotonic(), sub, parts[3], payload, errors))

    def of(self, subtopic: str, serial: str | None = None) -> list[Sniffed]:
        return [s for s in self.seen if s.subtopic == subtopic and serial in (None, s.serial)]

    def failures(self) -> list[Sniffed]:
        return [s for s in self.seen if s.errors]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.seen:
            out[s.subtopic] = out.get(s.subtopic, 0) + 1
        return out


def agv_agents(
    robot: str,
    serial: str,
    *,
    loads: dict[str, tuple[str, str]],
    station_types: dict[str, str] | None = None,
    agv_broker: str | None = None,
    extra: str = "",
) -> str:
    """TOML for one AGV robot (kind robot) and its vda5050_driver."""
    stations = []
    for name, (x, y) in STATIONS.items():
        kind = (station_types or {}).get(name)
        line = f"[agents.stations.{name}]\nx = {x}\ny = {y}\n"
        if kind:
            line += f'station_type = "{kind}"\n'
        stations.append(line)
    load_tables = "\n".join(
        f'[agents.loads.{name}]\nat = "{at}"\ngoal = "{goal}"\n'
        for name, (at, goal) in loads.items()
    )
    broker = f'agv_broker = "{agv_broker}"\n' if agv_broker else ""
    return f"""
[[agents]]
id = "{robot}"
kind = "robot"
profile = "pr2"
metric = "distance"
start_timeout_s = 3.0

[[agents]]
id = "{robot}-driver"
kind = "vda5050_driver"
role = "service"
manufacturer = "{MANUFACTURER}"
serial_number = "{serial}"
validate = true
ack_timeout_s = 5.0
{broker}{extra}
[agents.action_parameters]
duration = 0.5

{chr(10).join(stations)}
{load_tables}
"""


SIM_AGENTS = """
[[agents]]
id = "pr2"
kind = "robot"
profile = "pr2"
metric = "distance"
start_timeout_s = 3.0

[[agents]]
id = "pr2-driver"
kind = "sim_driver"
role = "service"
robot = "pr2"

[[agents]]
id = "world"
kind = "world"
role = "service"
time_factor = 8.0

[agents.robots.pr2]
profile = "pr2"
base = [-0.75, 0.0, 0.0]

[agents.objects.cup]
shape = "cylinder"
dims = [0.04, 0.10]
position = [0.10, -0.05, 0.80]
goal = [-0.05, 0.05, 0.80]
"""


def team_config(path: Path, team: str, tree: str, agents: str, record: Path) -> Path:
    """A tasktree team config with a recorder writing to `record`."""
    path.write_text(
        f"""
[team]
name = "{team}"

[runtime]
tick_hz = 20
heartbeat_s = 0.5
keepalive_s = 2
request_timeout_s = 3.0

[mission]
kind = "tasktree"
timeout_s = 90
tree = "{tree}"
{agents}
[[agents]]
id = "recorder"
kind = "recorder"
role = "service"
path = "{record}"
"""
    )
    return path


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def progress(records: list[dict[str, Any]], kind: str, sender: str | None = None) -> list[dict]:
    """Progress bodies of `kind` (e.g. ``behaviour.finished``), optionally from one driver."""
    return [
        r["body"] for r in records if r.get("kind") == kind and sender in (None, r.get("sender"))
    ]


# The virtual AGV's factsheet (its controller publishes it on factsheetRequest): the
# actions VirtualAgvAdapter implements and its limits, as VDA 5050 2.0 §6.15 lays out.
FACTSHEET: dict[str, Any] = {
    "typeSpecification": {
        "seriesName": "virtual-agv",
        "agvKinematic": "OMNI",
        "agvClass": "CARRIER",
        "maxLoadMass": 1000,
        "localizationTypes": ["NATURAL"],
        "navigationTypes": ["AUTONOMOUS"],
    },
    "physicalParameters": {
        "speedMin": 0.0,
        "speedMax": 2.0,
        "accelerationMax": 1.0,
        "decelerationMax": 1.0,
        "heightMin": 0.2,
        "heightMax": 0.3,
        "width": 0.8,
        "length": 1.2,
    },
    "protocolLimits": {
        "maxStringLens": {},
        "maxArrayLens": {},
        "timing": {"minOrderInterval": 0.1, "minStateInterval": 0.05},
    },
    "protocolFeatures": {
        "optionalParameters": [],
        "agvActions": [
            {"actionType": kind, "actionScopes": scopes}
            for kind, scopes in (
                ("pick", ["NODE"]),
                ("drop", ["NODE"]),
                ("startPause", ["INSTANT"]),
                ("stopPause", ["INSTANT"]),
                ("cancelOrder", ["INSTANT"]),
                ("factsheetRequest", ["INSTANT"]),
                ("initPosition", ["INSTANT", "NODE"]),
            )
        ],
    },
    "agvGeometry": {},
    "loadSpecification": {},
}


class Watcher(Agent):
    """Records every teamtree message of the team (an in-test observer, kind ``agent``:
    robots never count it as a peer)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.messages: list[tuple[str, str, Any]] = []

    async def setup(self) -> None:
        self.on_any(self._record)

    async def _record(self, env: Any, topic: Any) -> None:
        self.messages.append((env.sender, env.kind, env.body))

    def bodies(self, kind: str, sender: str | None = None) -> list[dict[str, Any]]:
        return [b for s, k, b in self.messages if k == kind and sender in (None, s)]

    def done(self) -> list[tuple[str, str]]:
        return [
            (b["agent"], b["node"])
            for b in self.bodies("node.transition")
            if b.get("status") == "done"
        ]

    async def command(self, driver: str, kind: str, **body: Any) -> None:
        await self.publish("command", kind, body, recipient=driver)
