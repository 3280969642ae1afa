"""Shared fixtures: real brokers on free ports, agent processes, unique teams."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from teamtree.agents.runtime.resync import SYNC_CHANNEL
from teamtree.broker import (
    Endpoint,
    MosquittoBroker,
    find_mosquitto,
    free_port,
    topics,
    wait_for_port,
)

REPO = Path(__file__).resolve().parent.parent
BROKER_KINDS = ["mosquitto", "embedded"]
# Agents the tests start by hand start at once, in the order each test chooses (some
# start members first on purpose); tests/integration/test_services_wait.py checks the
# wait itself with an explicit --wait-services.
os.environ.setdefault("TEAMTREE_WAIT_SERVICES_S", "0")


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as a module (the folder is not a package), for
    tests that check a benchmark's figures or reuse its trials."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def teamtree_cmd(*args: str) -> list[str]:
    """The teamtree CLI run with this interpreter."""
    return [sys.executable, "-m", "teamtree.agents", *args]


def study_cli() -> tuple[argparse.ArgumentParser, dict]:
    """The parser and handlers of ``teamtree study`` and ``allocator``, in-process."""
    from teamtree.agents.cli.study import register

    parser = argparse.ArgumentParser(prog="teamtree")
    handlers = register(parser.add_subparsers(dest="command", required=True))
    return parser, handlers


@dataclass
class BrokerUnderTest:
    """A broker for one test; mosquitto ones can be stopped and started on the same port."""

    kind: str
    endpoint: Endpoint
    mosquitto: MosquittoBroker | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.endpoint.url

    async def stop(self) -> None:
        if self.mosquitto is not None:
            await self.mosquitto.stop()
        elif self.process is not None:
            self.process.terminate()
            self.process.wait(10)

    async def start(self) -> None:
        assert self.mosquitto is not None, "only mosquitto restarts in tests"
        await self.mosquitto.start()


def run_recorded(config: Path, record: str, cwd: Path, *args: str) -> tuple[str, list[dict]]:
    """``teamtree run <config> --broker-kind mosquitto <args>`` in `cwd`: its stdout and
    the records its recorder wrote to ``runs/<record>``; fails with the output's tail
    when the run does not exit 0."""
    out = subprocess.run(
        teamtree_cmd("run", str(config), "--broker-kind", "mosquitto", *args),
        capture_output=True, text=True, timeout=180, cwd=cwd,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    lines = (cwd / "runs" / record).read_text().splitlines()
    return out.stdout, [json.loads(line) for line in lines]


TEA_PARTY_IDS = frozenset(
    {"pr2", "baxter", "world", "pr2-driver", "baxter-driver", "recorder", "run"}
)


def assert_observer_kept_out(recorded: list[dict], prefix: str, team: str) -> None:
    """An observer (client ids ``<prefix>-…``) is no member of a recorded tea party: it
    sent nothing on the team's wire but its re-sync requests (which a run starting
    during its rounds records), and every other sender is one of the config's agents."""
    sent = {(r["topic"], r["kind"]) for r in recorded if r["sender"].startswith(f"{prefix}-")}
    assert sent <= {(topics.build(team, None, SYNC_CHANNEL), "sync.request")}, sent
    members = {r["sender"] for r in recorded if not r["sender"].startswith(f"{prefix}-")}
    assert members <= TEA_PARTY_IDS, members - TEA_PARTY_IDS


async def start_broker(kind: str) -> BrokerUnderTest:
    if kind == "mosquitto":
        if find_mosquitto() is None:
            pytest.skip("mosquitto is not installed (apt-get install -y mosquitto)")
        broker = MosquittoBroker()
        await broker.start()
        return BrokerUnderTest(kind, broker.endpoint, mosquitto=broker)
    port = free_port()
    process = subprocess.Popen(
        teamtree_cmd("broker", "--kind", "embedded", "--port", str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    await wait_for_port("127.0.0.1", port, timeout=30)
    return BrokerUnderTest(kind, Endpoint("127.0.0.1", port), process=process)


async def close_broker(broker: BrokerUnderTest) -> None:
    if broker.mosquitto is not None:
        await broker.mosquitto.close()
    if broker.process is not None and broker.process.poll() is None:
        broker.process.terminate()
        try:
            broker.process.wait(10)
        except subprocess.TimeoutExpired:
            broker.process.kill()


@pytest.fixture(params=BROKER_KINDS)
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[BrokerUnderTest]:
    """A real broker, parametrised over mosquitto and the embedded one."""
    b = await start_broker(request.param)
    try:
        yield b
    finally:
        await close_broker(b)


@pytest.fixture
async def mosquitto() -> AsyncIterator[BrokerUnderTest]:
    """A real mosquitto (restartable on its port)."""
    b = await start_broker("mosquitto")
    try:
        yield b
    finally:
        await close_broker(b)


@pytest.fixture
def team(request: pytest.FixtureRequest) -> str:
    """A team id unique to this test run and test, so runs never collide."""
    name = "".join(c if c.isalnum() else "-" for c in request.node.name)[:32].strip("-")
    return f"t{uuid.uuid4().hex[:6]}-{name}"


@dataclass
class AgentProcs:
    """Agent processes started from one temporary config."""

    config: Path
    broker_url: str
    team: str
    logdir: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, agent_id: str) -> subprocess.Popen[bytes]:
        log = (self.logdir / f"{agent_id}.log").open("ab")
        proc = subprocess.Popen(
            teamtree_cmd(
                "agent", "--config", str(self.config), "--id", agent_id,
                "--broker", self.broker_url, "--team", self.team, "--log-format", "json",
            ),
            stdout=log,
            stderr=log,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
        self.procs[agent_id] = proc
        return proc

    def log(self, agent_id: str) -> str:
        return (self.logdir / f"{agent_id}.log").read_text(errors="replace")

    def kill(self, agent_id: str) -> None:
        proc = self.procs[agent_id]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def agent_procs(tmp_path: Path) -> Iterator[list[AgentProcs]]:
    """Collects AgentProcs made by a test and stops their processes afterwards."""
    made: list[AgentProcs] = []
    yield made
    for group in made:
        group.stop_all()


def write_config(path: Path, team: str, agents: str, *, keepalive: int = 1) -> Path:
    path.write_text(
        f"""
[team]
name = "{team}"

[runtime]
tick_hz = 20
heartbeat_s = 0.2
keepalive_s = {keepalive}
request_timeout_s = 3.0

[mission]
kind = "test"
timeout_s = 60

{agents}
"""
    )
    return path


async def eventually(predicate, timeout: float = 10.0, interval: float = 0.02, what: str = ""):
    """Poll `predicate` until true; fail naming `what` after `timeout` seconds on an
    idle machine, stretched by ``slowness()`` (beside other work it waits longer; what
    it waits for stays the same)."""
    loop = asyncio.get_running_loop()
    timeout = scaled(timeout)
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            pytest.fail(f"timed out after {timeout:.3g} s waiting for {what or predicate}")
        await asyncio.sleep(interval)


@contextlib.contextmanager
def no_leftover(pids: list[int]) -> Iterator[None]:
    yield
    alive = [p for p in pids if Path(f"/proc/{p}").exists() and "zombie" not in _state(p)]
    assert not alive, f"processes left behind: {alive}"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


SLOWNESS_ENV = "TEAMTREE_TEST_SLOWNESS"
"""A floor for ``slowness()`` on a machine known to be slow (e.g. ``3`` for an
emulated CPU); unset, only the measurement counts."""

_SLOWNESS_TTL_S = 5.0
_slowness_at: tuple[float, float] | None = None  # (monotonic time measured, value)


def _contention(sample_s: float = 0.05) -> float:
    """Wall time over the CPU time a busy loop of `sample_s` got: 1 when this process
    has a core to itself, 2 when it gets half of one."""
    wall0, cpu0 = time.monotonic(), time.thread_time()
    while time.monotonic() - wall0 < sample_s:
        pass
    cpu = time.thread_time() - cpu0
    return (time.monotonic() - wall0) / max(cpu, 1e-3)


def slowness() -> float:
    """How many times slower than on an idle machine things run now (at least 1,
    at most 10): the larger of this process's CPU contention (``_contention``) and
    the load average per core, or ``TEAMTREE_TEST_SLOWNESS`` if that is larger.
    Deadlines on work done by other processes (agents, brokers) are multiplied by
    it, so a test beside other work waits longer instead of failing; what a test
    asserts stays the same. Measured at most every few seconds."""
    global _slowness_at
    now = time.monotonic()
    if _slowness_at is None or now - _slowness_at[0] > _SLOWNESS_TTL_S:
        per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
        floor = float(os.environ.get(SLOWNESS_ENV) or 1.0)
        _slowness_at = (now, min(10.0, max(1.0, floor, per_core, _contention())))
    return _slowness_at[1]


def scaled(seconds: float) -> float:
    """`seconds` on an idle machine, stretched by the current ``slowness()``."""
    return seconds * slowness()


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """Put structlog's and logging's set-up back after each test: a test that runs
    ``teamtree``'s ``main`` in-process binds the log to pytest's captured stderr, which
    is closed after the test, and later in-process agents would log to a closed file."""
    import logging

    import structlog

    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)
