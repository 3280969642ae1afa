"""Helpers for the ros2 tests and benchmark: a ROS 2 domain of the test's own, the test
robot node (tests/ros2/robot_node.py) as a child process, and team configs with ROS 2
robots driven by ``ros2_driver``."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

NODE = Path(__file__).resolve().parent / "ros2" / "robot_node.py"
ACTION_TYPE = "test_msgs/action/Fibonacci"


def require_rclpy() -> None:
    """Skip unless rclpy and the test interfaces import (the ros2 extra's wheels need
    CPython 3.11; tests/run.sh installs them there)."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip(f"the ROS 2 Jazzy wheels need CPython 3.11, this is {sys.version.split()[0]}")
    try:
        import rclpy  # noqa: F401
        import test_msgs.action  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"rclpy is not installed ({exc}): pip install -e '.[ros2]' ros-jazzy-test-msgs")


def own_domain(monkeypatch: pytest.MonkeyPatch) -> int:
    """A ROS_DOMAIN_ID for this test, with discovery kept to this host, set in the
    environment every child process inherits: parallel runs never see each other's
    nodes (a clash needs the same of 100 ids on the same host at once)."""
    domain = random.Random(f"{os.getpid()}-{time.time_ns()}").randint(1, 100)
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.delenv("ROS_STATIC_PEERS", raising=False)
    return domain


@dataclass
class RobotNode:
    """One test robot node process (see tests/ros2/robot_node.py)."""

    ns: str
    domain: int
    objects: dict[str, tuple[int, tuple[float, float]]]  # name -> (id, (x, y))
    workdir: Path
    options: dict[str, Any] = field(default_factory=dict)
    proc: subprocess.Popen[str] | None = None

    @property
    def state_path(self) -> Path:
        return self.workdir / f"{self.ns.strip('/')}.state.json"

    def start(self, timeout: float = 30.0) -> RobotNode:
        opts = {
            "ns": self.ns,
            "domain_id": self.domain,
            "objects": {str(i): [name, list(xy)] for name, (i, xy) in self.objects.items()},
            "state": str(self.state_path),
            **self.options,
        }
        log = (self.workdir / f"{self.ns.strip('/')}.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(NODE), json.dumps(opts)],
            stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            if line.strip() == "READY":
                return self
            if not line and self.proc.poll() is not None:
                break
        raise AssertionError(f"robot node {self.ns} did not start: rc={self.proc.poll()}")

    def own_state(self) -> dict[str, Any]:
        """The robot's own record of what it did (executions, done, canceled, ...)."""
        return json.loads(self.state_path.read_text())

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def ros2_agents(
    robot: str,
    ns: str,
    domain: int,
    objects: dict[str, tuple[int, tuple[float, float]]],
    *,
    stations: dict[str, tuple[int, tuple[float, float]]] | None = None,
    extra: str = "",
    robot_extra: str = "",
) -> str:
    """TOML for one ROS 2 robot (kind robot) and its ros2_driver, which maps PLACE and
    MOVE to the robot node's action (goal ``order`` = the target's ``id``)."""
    tables = []
    for name, (i, (x, y)) in objects.items():
        tables.append(
            f"[agents.objects.{name}]\nposition = [{x}, {y}, 0.8]\ngoal = [{x}, {y + 0.3}, 0.8]\nid = {i}\n"
        )
    for name, (i, (x, y)) in (stations or {}).items():
        tables.append(f"[agents.stations.{name}]\nx = {x}\ny = {y}\nid = {i}\n")
    return f"""
[[agents]]
id = "{robot}"
kind = "robot"
profile = "pr2"
metric = "distance"
start_timeout_s = 3.0
{robot_extra}
[[agents]]
id = "{robot}-driver"
kind = "ros2_driver"
role = "service"
domain_id = {domain}
pose = {{ topic = "{ns}/odom", type = "nav_msgs/msg/Odometry" }}
battery = {{ topic = "{ns}/battery", type = "sensor_msgs/msg/BatteryState" }}
diagnostics = {{ topic = "/diagnostics", type = "diagnostic_msgs/msg/DiagnosticArray" }}
{extra}
[agents.behaviours.PLACE]
action = "{ns}/do"
type = "{ACTION_TYPE}"
goal = {{ order = "{{target.id}}" }}

[agents.behaviours.MOVE]
action = "{ns}/do"
type = "{ACTION_TYPE}"
goal = {{ order = "{{target.id}}" }}

{chr(10).join(tables)}
"""
