"""One compose project in real containers (podman + podman-compose), for the container
tests: up, down, run, kill, and the files and exit codes they leave.

Images come from ``tests/container_images.py`` (TEAMTREE_IMAGE / MOSQUITTO_IMAGE);
host ports are free ones on 127.0.0.1 (MQTT_PORT, MQTT_WS_PORT, MQTT_HOST_IP, WEB_PORT), so a
local mosquitto or a parallel run does not clash. Each stack has its own project name,
hence its own network and volumes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from teamtree.broker import free_port
from tests.conftest import REPO
from tests.container_images import Images, progress

TEAM = "tea-party"


def podman_compose() -> list[str]:
    """The podman-compose command of this interpreter's environment (else PATH's)."""
    local = Path(sys.executable).parent / "podman-compose"
    return [str(local)] if local.exists() else [shutil.which("podman-compose") or "podman-compose"]


class Stack:
    """A compose project: ``compose.yaml`` with the test images and free host ports."""

    def __init__(
        self,
        images: Images,
        *,
        image: str | None = None,
        config: str | None = None,
        mission_timeout_s: int = 300,
    ):
        self.project = f"ttc{uuid.uuid4().hex[:6]}"
        self.mqtt_port = free_port()
        self.web_port = free_port()
        self.env = dict(
            os.environ,
            TEAMTREE_IMAGE=image or images.teamtree,
            MOSQUITTO_IMAGE=images.broker,
            MQTT_PORT=str(self.mqtt_port),
            MQTT_WS_PORT=str(free_port()),
            MQTT_HOST_IP="127.0.0.1",
            WEB_PORT=str(self.web_port),
            WEB_HOST_IP="127.0.0.1",
            TEAMTREE_MISSION_TIMEOUT=str(mission_timeout_s),
        )
        if config:
            self.env["TEAMTREE_CONFIG"] = config

    # -- compose ---------------------------------------------------------------------

    def compose(
        self, *args: str, timeout: float = 300, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [*podman_compose(), "-p", self.project, "-f", str(REPO / "compose.yaml"), *args]
        proc = subprocess.run(
            cmd, env=self.env, cwd=REPO, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                f"{proc.stderr[-3000:]}"
            )
        return proc

    def up(self) -> float:
        """``up -d`` (no build: the images exist); returns the seconds it took."""
        t0 = time.monotonic()
        self.compose("up", "-d", "--no-build", timeout=600)
        progress(f"{self.project}: up -d in {time.monotonic() - t0:.0f} s")
        return time.monotonic() - t0

    def down(self, *, volumes: bool) -> None:
        self.compose(*(["down", "-v"] if volumes else ["down"]), "-t", "5", timeout=300)

    # -- containers ------------------------------------------------------------------

    def containers(self) -> dict[str, str]:
        """service -> container name, for every container of the project (any state)."""
        out = subprocess.run(
            ["podman", "ps", "-a", "--format", "json", "--filter",
             f"label=io.podman.compose.project={self.project}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        found: dict[str, str] = {}
        for c in json.loads(out or "[]"):
            service = (c.get("Labels") or {}).get("com.docker.compose.service")
            if service:
                found.setdefault(service, c["Names"][0])
        return found

    def container(self, service: str) -> str:
        name = self.containers().get(service)
        assert name, f"no container for service {service} in {self.project}"
        return name

    def wait_exit(self, service: str, timeout: float) -> int:
        """The exit code of `service`'s container once it stops."""
        proc = subprocess.run(
            ["podman", "wait", self.container(service)],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout.strip().splitlines()[-1])

    def logs(self, service: str) -> str:
        name = self.containers().get(service)
        if name is None:
            return f"(no container for {service})"
        proc = subprocess.run(["podman", "logs", name], capture_output=True, text=True)
        return (proc.stdout + proc.stderr)[-4000:]

    def remove(self, service: str) -> None:
        """Kill the service's container and remove it (no restart policy brings it back)."""
        subprocess.run(["podman", "rm", "-f", "-t", "0", self.container(service)], check=True,
                       capture_output=True)  # fmt: skip

    # -- volumes -----------------------------------------------------------------------

    def volume(self, name: str) -> Path:
        """The host directory of the project's named volume `name`."""
        proc = subprocess.run(
            ["podman", "volume", "inspect", f"{self.project}_{name}",
             "--format", "{{.Mountpoint}}"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return Path(proc.stdout.strip())

    def record(self) -> list[dict[str, Any]]:
        """The recorder's file so far, one dict per complete line."""
        path = self.volume("runs") / "mission.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                break  # a line still being written
        return out

    def wait_record(self, predicate: Any, timeout: float, what: str) -> list[dict[str, Any]]:
        """Poll the record until `predicate(records)` holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            records = self.record()
            if predicate(records):
                return records
            time.sleep(0.5)
        raise AssertionError(
            f"{what}: not seen in {timeout:.0f} s ({len(self.record())} records; last "
            f"presence: {last_presence(self.record())})\n{self.diagnose()}"
        )

    def password(self, user: str) -> str:
        return (self.volume("broker-config") / "credentials" / user).read_text().strip()

    def diagnose(self) -> str:
        """The tails of every service's log (and the containers' states), for a failure
        message."""
        ps = subprocess.run(
            ["podman", "ps", "-a", "--filter", f"label=io.podman.compose.project={self.project}",
             "--format", "{{.Names}} {{.Status}}"],
            capture_output=True, text=True,
        )  # fmt: skip
        logs = "\n".join(f"--- {s}\n{self.logs(s)[-1500:]}" for s in sorted(self.containers()))
        return f"containers:\n{ps.stdout}{ps.stderr}\n{logs}"


def last_presence(records: list[dict[str, Any]]) -> dict[str, str]:
    """Each sender's latest presence state in a record (for failure messages)."""
    state: dict[str, str] = {}
    for r in records:
        if r.get("kind") == "presence" and isinstance(r.get("body"), dict):
            state[str(r.get("sender"))] = str(r["body"].get("state"))
    return state
