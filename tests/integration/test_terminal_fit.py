"""Terminal output fits the terminal: the monitor in a real terminal (tmux) with 40
members, a tea party's `run` output in a pty at 80 columns, and `timeline --mission`
on a record holding a succeeded and a cancelled mission."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shlex
import shutil
import signal
import struct
import subprocess
import termios
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from PIL import Image

from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from tests.conftest import REPO, teamtree_cmd

pytestmark = pytest.mark.integration

TEA = REPO / "configs" / "tea_party_s1.toml"
MEMBERS = 40
#: a mission headline longer than 80 columns, so a wide terminal shows more of it
REASON = "waiting for the kitchen: " + " ".join(f"step{i}" for i in range(30))


def _publish_team(url: str, team: str) -> None:
    """40 fake members' retained presence and factsheets (every third one OFFLINE)
    and a running mission's status, from a raw MQTT client."""
    host, port = url.removeprefix("mqtt://").split(":")
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"fake-{uuid.uuid4().hex[:6]}")
    client.connect(host, int(port))
    client.loop_start()
    try:
        infos = []
        for n in range(MEMBERS):
            agent = f"robot-{n:02d}"
            clock = HybridLogicalClock(agent)
            state = "OFFLINE" if n % 3 == 2 else "ONLINE"
            for channel, kind, body in (
                ("connection", "presence", {"state": state, "kind": "robot"}),
                ("factsheet", "factsheet", {"kind": "robot", "profile": "pr2"}),
            ):
                payload = encode(Envelope(kind, agent, n + 1, wall_ms(), clock.now(), body))
                topic = f"teamtree/v1/{team}/{agent}/{channel}"
                infos.append(client.publish(topic, payload, qos=1, retain=True))
        body = {"kind": "tasktree", "state": "running", "reason": REASON, "mission": "m1"}
        payload = encode(
            Envelope("mission.status", "run", 1, wall_ms(), HybridLogicalClock("run").now(), body)
        )
        infos.append(
            client.publish(f"teamtree/v1/{team}/run/mission_status/m1", payload, qos=1, retain=True)
        )
        for info in infos:
            info.wait_for_publish(10)
    finally:
        client.loop_stop()
        client.disconnect()


class Tmux:
    """A tmux server of this test's own (its socket), one detached session."""

    def __init__(self, tmp: Path):
        self.socket = f"tt-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp

    def tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                             capture_output=True, text=True, timeout=20, check=True)  # fmt: skip
        return out.stdout

    def screen(self) -> list[str]:
        """The visible screen, wrapped lines joined (so an over-long line shows)."""
        return self.tmux("capture-pane", "-p", "-J", "-t", "mon").rstrip("\n").split("\n")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def _wait_screen(tmux: Tmux, ready: re.Pattern[str], what: str, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    screen: list[str] = []
    while time.monotonic() < deadline:
        screen = tmux.screen()
        if any(ready.search(line) for line in screen):
            return screen
        time.sleep(0.3)
    raise AssertionError(f"no {what} on the screen:\n" + "\n".join(screen))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
async def test_the_monitor_fits_the_terminal_and_keeps_its_header_with_40_agents(
    mosquitto, team, tmp_path: Path
) -> None:
    _publish_team(mosquitto.url, team)
    tmux = Tmux(tmp_path)
    command = shlex.join(teamtree_cmd("monitor", "--broker", mosquitto.url, "--team", team))
    try:
        tmux.tmux("new-session", "-d", "-s", "mon", "-x", "80", "-y", "24", "-c", str(tmp_path),
                  f"{command}; sleep 600")  # fmt: skip
        screen = _wait_screen(tmux, re.compile(r"^\+\d+ more"), "'+N more' line")
        print("\n".join(screen))
        assert len(screen) <= 24
        assert screen[0].startswith(f"team {team}"), screen[0]
        assert screen[1].startswith("  running: waiting for the kitchen")
        assert max(len(line) for line in screen) <= 80, [line for line in screen if len(line) > 80]
        assert screen[1].endswith("…") and len(screen[1]) == 80
        agents = [line for line in screen if line.startswith("robot-")]
        more = next(line for line in screen if line.startswith("+"))
        assert len(agents) + int(more[1:].split()[0]) == MEMBERS
        assert all(" ONLINE " in line for line in agents), "online members first"

        tmux.tmux("resize-window", "-t", "mon", "-x", "120", "-y", "30")
        wide = re.compile(r"^  running: waiting for the kitchen.{79}")
        screen = _wait_screen(tmux, wide, "header using 120 columns", timeout=30)
        print("\n".join(screen))
        assert screen[0].startswith(f"team {team}")
        assert max(len(line) for line in screen) <= 120 and len(screen) <= 30
        assert len(screen[1]) == 120
    finally:
        tmux.close()


def _pty_run(cwd: Path, columns: int) -> str:
    """`teamtree run` of the tea party with its output on a pty `columns` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        teamtree_cmd("run", str(TEA), "--broker-kind", "mosquitto"),
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=cwd, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the pty
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(30) == 0, b"".join(chunks).decode(errors="replace")[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        os.close(master)
    return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")


def _cancelled_run(cwd: Path) -> str:
    """The tea party interrupted (Ctrl-C) once a robot started working; its output."""
    proc = subprocess.Popen(
        teamtree_cmd("run", str(TEA), "--broker-kind", "mosquitto"),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "behaviour.started" in line:
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    return "".join(lines) + rest


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A tea party run on an 80-column pty, then one cancelled, in one directory: the
    directory and the first run's output."""
    cwd = tmp_path_factory.mktemp("runs")
    output = _pty_run(cwd, 80)
    cancelled = _cancelled_run(cwd)
    assert "interrupted" in cancelled, cancelled[-2000:]
    yield cwd, output


def test_run_output_says_presence_once_per_change_and_fits_80_columns(runs) -> None:
    _, output = runs
    lines = output.rstrip("\n").split("\n")
    print(output)
    assert "peer.presence" not in output  # the agents' own lines are not echoed
    said = [line for line in lines if re.match(r"^run +\| \S+ (ONLINE|OFFLINE)$", line)]
    agents = 6  # pr2, baxter, world, two drivers, the recorder
    assert len(said) <= 2 * agents, said  # each comes and goes once, said once
    assert {"run           | pr2 ONLINE", "run           | pr2 OFFLINE"} <= set(said)
    assert "\\n" not in output
    assert re.search(r"^pr2 +\|   ├── ✔ THEN  \[root/0\]  done$", output, re.M), "tree as lines"
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long
    assert "SUCCEEDED" in output


def _described(png: Path) -> dict:
    return json.loads(Image.open(png).info["Description"])


def test_timeline_draws_one_mission_of_a_record_and_marks_a_cancel(runs) -> None:
    from teamtree.agents.observers.timeline import load_records, missions_in, timeline_figure

    cwd, _ = runs
    both = cwd / "both.jsonl"
    both.write_text("".join(p.read_text() for p in sorted((cwd / "runs").glob("*.m*.jsonl"))))
    records = load_records(both)
    ok, cancelled = missions_in(records)

    def draw(mission: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            teamtree_cmd("timeline", str(both), "--mission", mission, "-o", str(cwd / f"{mission}.png")),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    done = draw(ok)
    assert done.returncode == 0, done.stderr
    figure = _described(cwd / f"{ok}.png")
    assert figure["mission"] == ok and figure["end"]["state"] == "succeeded"
    assert set(figure["rows"]) == {"pr2", "baxter"}
    for rows in figure["rows"].values():  # each leaf once: no row of the other mission
        assert len(rows) == len(set(rows)) == 7
    drawn = timeline_figure(records, ok)
    ok_span = [r["ts"] for r in records if (r.get("body") or {}).get("mission") == ok]
    end = max(e for per in drawn.spans.values() for s in per.values() for _, e, _ in s)
    assert end <= (max(ok_span) - min(ok_span)) / 1000  # no span of the later mission

    marked = draw(cancelled)
    assert marked.returncode == 0, marked.stderr
    figure = _described(cwd / f"{cancelled}.png")
    assert figure["end"]["state"] == "cancelled" and figure["end"]["at_s"] is not None
    title = Image.open(cwd / f"{cancelled}.png").info["Title"]
    assert f"mission {cancelled}" in title and "CANCELLED" in title

    bad = draw("m-nope")
    assert bad.returncode == 2
    assert "m-nope" in bad.stderr and ok in bad.stderr and cancelled in bad.stderr
    assert not (cwd / "m-nope.png").exists()
