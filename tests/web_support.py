"""Helpers for the web view's tests and benchmark: a headless Debian chromium driven by
Selenium, ``teamtree web`` as a process, page size figures, and a synthetic team that
keeps a page busy for as long as wanted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker import Endpoint
from tests.conftest import REPO, scaled, teamtree_cmd

CHROMIUM = os.environ.get("TEAMTREE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TEAMTREE_CHROMEDRIVER", "/usr/bin/chromedriver")
#: where screenshots and figures go (not committed; docs/ holds the chosen copies)
ARTEFACTS = Path(os.environ.get("TEAMTREE_ARTEFACTS", REPO / "runs" / "artefacts" / "web"))
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def browser_missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).exists() or shutil.which(path)):
            return f"{path} is missing (apt-get install -y chromium chromium-driver)"
    return None


@contextlib.contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A headless Debian chromium (never a downloaded one) with a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="teamtree-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        driver.execute_cdp_cmd("Performance.enable", {})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def page_figures(driver: Any) -> dict[str, float]:
    """The page's size: nodes in its document (elements and text), Blink's count of
    live DOM nodes (``renderer_nodes``: detached ones too, until Blink's own collector
    runs), JS heap in use (bytes, after a V8 garbage collection) and listeners."""
    driver.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
    metrics = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
    values = {m["name"]: m["value"] for m in metrics}
    return {
        "dom_nodes": driver.execute_script(
            "const w = document.createTreeWalker(document, NodeFilter.SHOW_ALL);"
            "let n = 0; while (w.nextNode()) n++; return n;"
        ),
        "renderer_nodes": values.get("Nodes", 0),
        "js_heap_used": values.get("JSHeapUsedSize", 0),
        "listeners": values.get("JSEventListeners", 0),
        "elements": driver.execute_script("return document.getElementsByTagName('*').length"),
    }


def screenshot(driver: Any, name: str, *, full: bool = True) -> Path:
    """Save a (full-height) screenshot to ARTEFACTS/name and return its path."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    if full:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        size = driver.get_window_size()
        driver.set_window_size(size["width"], max(600, int(height) + 20))
        time.sleep(0.4)
    path = ARTEFACTS / name
    driver.save_screenshot(str(path))
    return path


class WebProcess:
    """``teamtree web`` as a child process on a port the system picks (``--port 0``,
    so parallel tests never race for one); ``url`` and ``port`` are read from the line
    it prints once it serves."""

    def __init__(self, broker_url: str, team: str, logdir: Path, *extra: str):
        self.log = logdir / "web.log"
        self._url: str | None = None
        self.proc = subprocess.Popen(
            teamtree_cmd(
                "web",
                "--broker",
                broker_url,
                "--team",
                team,
                "--port",
                "0",
                "--log-level",
                "info",
                *extra,
            ),
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )

    @property
    def url(self) -> str:
        """The page's base URL (waits for the server to print it)."""
        if self._url is None:
            self.wait_ready()
        assert self._url is not None
        return self._url

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").rsplit(":", 1)[1])

    def _printed_url(self) -> str | None:
        match = re.search(r" at (http://\S+/) ", self.log.read_text(errors="replace"))
        return match.group(1) if match else None

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"teamtree web exited: {self.log.read_text()[-2000:]}")
            self._url = self._url or self._printed_url()
            if self._url is not None:
                with (
                    contextlib.suppress(OSError),
                    urllib.request.urlopen(self._url + "healthz", timeout=1) as reply,
                ):
                    if reply.status == 200:
                        return
            time.sleep(0.1)
        raise TimeoutError(f"teamtree web not ready: {self.log.read_text()[-2000:]}")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class ChurnRobot(Agent):
    """A synthetic robot for a long mission: it works leaves of a wide AND tree one
    after another and releases each (so the mission never ends), loses claims now and
    then, and resolves dialogs with a person — every kind of thing the page draws."""

    kind = "robot"

    def __init__(self, *args: Any, leaves: int = 20, rate_hz: float = 10.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.leaves = leaves
        self.period = 1.0 / rate_hz
        self.spans = 0

    def tree(self) -> dict[str, Any]:
        children = [
            {"id": f"root/{i}", "behavior": "PLACE", "params": {"object": f"o{i}"}}
            for i in range(self.leaves)
        ]
        return {"id": "root", "type": "and", "children": children}

    async def main(self) -> None:
        await self.wait_connected()
        tree = self.tree()
        await self.publish(
            "mission", "mission.tree", {"kind": "tasktree", "tree": tree, "text": "churn"},
            team=True, retain=True,
        )  # fmt: skip
        n = 0
        while True:
            node = f"root/{n % self.leaves}"
            body = {"node": node, "agent": self.id}
            await self.publish("state", "node.transition", {**body, "status": "working"})
            await asyncio.sleep(self.period / 2)
            await self.publish("state", "node.transition", {**body, "status": "inactive"})
            if n % 7 == 0:
                await self.publish(
                    "state",
                    "node.claim_decided",
                    {"claim_id": f"{self.id}-{n}", "node": node, "won": False, "reason": "churn"},
                )
            if n % 11 == 0:
                await self.publish(
                    "dialog", "dialog.resolved",
                    {"dialog_id": f"{self.id}-{n}", "robot": self.id, "human": "alice",
                     "node": node, "label": f"PLACE(o{n % self.leaves})", "answer": "concede",
                     "how": "answered", "robot_continues": True},
                )  # fmt: skip
            self.spans += 1
            n += 1
            await asyncio.sleep(self.period / 2)


@contextlib.asynccontextmanager
async def churn_team(endpoint: Endpoint, team: str, robots: int = 2, rate_hz: float = 10.0):
    """`robots` ChurnRobots running in this process until the block ends."""
    agents = [
        ChurnRobot(
            f"churn{i}",
            team=team,
            endpoint=endpoint,
            rate_hz=rate_hz,
            leaves=20,
            runtime=RuntimeSettings(heartbeat_s=1.0, keepalive_s=2),
        )
        for i in range(robots)
    ]
    tasks = []
    try:
        for agent in agents:
            await agent.__aenter__()
            tasks.append(asyncio.create_task(agent.run_until_stopped()))
        yield agents
    finally:
        for agent in agents:
            agent.request_stop()
        await asyncio.gather(*tasks, return_exceptions=True)
        for agent in agents:
            await agent.stop()


class CuttableRelay:
    """A TCP relay from a local port to `port`, on its own thread and event loop (a
    blocking Selenium call must not stall it), that can cut the line: ``cut()`` closes
    every open connection and refuses new ones (accepts and closes them) until
    ``restore()``, as a phone losing its Wi-Fi would see it."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0  # the system picks one when the relay listens
        self.url = ""
        self._cut = False
        self._writers: set[Any] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def pipe(reader: Any, writer: Any) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        async def client(reader: Any, writer: Any) -> None:
            if self._cut:
                writer.close()
                return
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
            except OSError:
                writer.close()
                return
            self._writers |= {writer, up_writer}
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            self._writers -= {writer, up_writer}

        async def serve() -> None:
            self._server = await asyncio.start_server(client, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{self.port}/"
            self._ready.set()

        self._loop.run_until_complete(serve())
        self._loop.run_forever()

    def cut(self) -> None:
        def drop() -> None:
            self._cut = True
            for writer in list(self._writers):
                writer.transport.abort()
            self._writers.clear()

        self._loop.call_soon_threadsafe(drop)

    def restore(self) -> None:
        self._loop.call_soon_threadsafe(lambda: setattr(self, "_cut", False))

    def close(self) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
