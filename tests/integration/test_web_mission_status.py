"""Every mission kind on the team page, from the one model of progress
(``mission.status``), in a real browser (headless Debian chromium) against
``teamtree run`` on mosquitto: the page names the kind, shows progress in the kind's
own terms while it runs, and ends with a banner saying how the mission ended and why;
a failed, a timed-out and a cancelled mission end with their banner and no leaf shown
working; the page and the monitor say "disconnected" within 2 s of losing the broker
and come back by themselves; a tea mission submitted again starts from its own
objects, not from where the last one left them.

Screenshots go to ``runs/artefacts/web/`` (``$TEAMTREE_ARTEFACTS``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from teamtree.broker import free_port
from tests.conftest import REPO, scaled, teamtree_cmd
from tests.integration.test_web import css, until, web  # noqa: F401  (a fixture)
from tests.web_support import WebProcess, browser_missing, chromium, screenshot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]

#: how long the page and the monitor may take to say the broker is gone (on an idle
#: machine; scaled by the measured slowness, ``tests.conftest.scaled``)
DISCONNECTED_WITHIN_S = 2.0

#: kind -> (config, extra run arguments, the unit its progress counts)
KINDS = {
    "tasktree": ("tea_party_s1.toml", (), "leaves"),
    "ltl": ("hospital_scenario1.toml", (), "plan steps"),
    "kitting": ("kitting.toml", (), "kit spots"),
    "factory": ("factory_8.toml", (), "jobs"),
    "multitask": ("pr2_multitask_team.toml", ("--set", "time_factor=0.01"), "units"),
}

#: every progress text and banner state the header shows (a redraw can be missed by polling)
WATCH = """
window.__progress = []; window.__states = new Set(); window.__working_after_end = [];
new MutationObserver(() => {
  const p = document.getElementById('progress-text').textContent;
  if (p && window.__progress[window.__progress.length - 1] !== p) window.__progress.push(p);
  const b = document.getElementById('mission-banner');
  if (b) {
    window.__states.add(b.dataset.state);
    if (b.dataset.state !== 'succeeded') document.querySelectorAll('g.tree-node[data-state=working]')
      .forEach(g => window.__working_after_end.push(g.dataset.node));
  }
}).observe(document.body, {childList: true, subtree: true, characterData: true});
"""


@pytest.fixture
def view(request):
    """test_web's ``web`` fixture: ``teamtree web`` for the test's team and broker."""
    return request.getfixturevalue("web")


async def open_page(driver, url: str) -> None:
    """Open the team page at `url`, live, watching its header."""
    driver.get(url)
    await until(lambda: css(driver, "#link.on"), 15, "the page's socket")
    driver.execute_script(WATCH)


def team_config(name: str, team: str, tmp_path: Path) -> Path:
    """A config of configs/ for `team`, its recordings kept in `tmp_path`."""
    text = (REPO / "configs" / name).read_text()
    text = re.sub(r'(?m)^name = "[^"]+"', f'name = "{team}"', text, count=1)
    text = re.sub(r'"runs/([^"]+)"', lambda m: f'"{tmp_path / m.group(1)}"', text)
    path = tmp_path / name
    path.write_text(text)
    return path


def run_team(config: Path, url: str, tmp_path: Path, *args: str, log: str = "run.log"):
    return subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", url, *args),
        stdout=(tmp_path / log).open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip


def monitor_once(url: str, team: str) -> dict:
    out = subprocess.run(
        teamtree_cmd("monitor", "--broker", url, "--team", team, "--once", "--json",
                     "--wait", "1"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def counts(text: str, unit: str) -> tuple[int, int] | None:
    found = re.match(rf"(\d+)/(\d+) {re.escape(unit)}", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", list(KINDS))
async def test_the_page_shows_each_kind_its_progress_and_how_it_ended(
    kind: str, mosquitto, team, tmp_path: Path, view
) -> None:
    """The header names the kind, its progress climbs in the kind's own unit while the
    mission runs, and the page ends with the succeeded banner and its reason; the
    monitor's JSON shows the same state for the kind."""
    name, extra, unit = KINDS[kind]
    config = team_config(name, team, tmp_path)
    with chromium() as driver:
        await open_page(driver, view.url)
        run = run_team(config, mosquitto.url, tmp_path, *extra)
        try:
            await until(lambda: css(driver, "#mission-kind"), 120, "the mission's kind",
                        driver=driver)  # fmt: skip
            assert css(driver, "#mission-kind")[0]["text"] == kind
            await until(lambda: css(driver, "#mission-banner"), 400, "the mission's end",
                        driver=driver)  # fmt: skip
            code = run.wait(120)
        finally:
            if run.poll() is None:
                run.kill()
        await asyncio.sleep(1.5)  # the run's verdict comes last
        banner = css(driver, "#mission-banner")[0]
        log = (tmp_path / "run.log").read_text()[-3000:]
        # the banner tells what the run found: the factory's config holds a job no
        # team can do, so that mission fails, naming it
        assert banner["state"] == ("succeeded" if code == 0 else "failed"), (banner, log)
        assert code == 0 or kind == "factory", log
        assert css(driver, "#mission-reason")[0]["text"].strip(), banner
        seen = driver.execute_script("return window.__progress")
        figures = [c for c in (counts(t, unit) for t in seen) if c is not None]
        print(f"{kind}: progress shown {seen}")
        assert figures, f"no progress in {unit!r} shown: {seen}"
        assert any(done < total for done, total in figures), f"only the end was shown: {seen}"
        assert len({f for f in figures}) >= 2, f"the progress never moved: {seen}"
        screenshot(driver, f"web-status-{kind}.png")
    snap = await asyncio.to_thread(monitor_once, mosquitto.url, team)
    assert snap["status"]["kind"] == kind and snap["status"]["state"] == banner["state"], snap[
        "status"
    ]
    assert snap["status"]["unit"] == unit and snap["status"]["total"] > 0, snap["status"]


def run_children(config: Path) -> dict[str, int]:
    """Agent id -> pid of the ``teamtree agent`` children of a run of `config`."""
    out = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if "agent" in args and str(config) in args and "--id" in args:
            out[args[args.index("--id") + 1]] = int(proc.name)
    return out


async def ended_without_working(driver, state: str, tmp_path: Path) -> dict:
    """Wait for the banner of `state`; then no node is drawn working, and the header's
    count of leaves done is the tree's."""
    await until(lambda: any(b["state"] == state for b in css(driver, "#mission-banner")), 120,
                f"the {state} banner", driver=driver)  # fmt: skip
    await asyncio.sleep(1.5)  # a few more pushes: whatever came late is drawn
    banner = css(driver, "#mission-banner")[0]
    assert banner["state"] == state, banner
    nodes = css(driver, "g.tree-node")
    assert nodes, "the tree is drawn"
    assert not [n for n in nodes if n["state"] == "working"], nodes
    after = driver.execute_script("return window.__working_after_end")
    assert not after, f"leaves drawn working after the mission ended: {after}"
    done = [n for n in nodes if n.get("leaf") and n["state"] in ("done", "skipped")]
    shown = counts(css(driver, "#progress-text")[0]["text"], "leaves")
    assert shown is not None and shown[0] == len(done), (shown, len(done))
    agents = " ".join(r["text"] for r in css(driver, "tr.agent"))
    assert "working" not in agents.replace("stopped", ""), agents
    return banner


@pytest.mark.timeout(300)
async def test_a_timed_out_and_a_failed_mission_end_with_their_banner(
    mosquitto, team, tmp_path: Path, view
) -> None:
    """A tea party given 4 s ends "timed out" saying so; one whose robot is killed
    mid-mission ends "failed" naming it; neither leaves a leaf drawn working, the
    header's count stays the tree's, and the failure is under Alerts."""
    config = team_config("tea_party_s1.toml", team, tmp_path)
    config.write_text(config.read_text().replace("time_factor = 8.0", "time_factor = 2.0"))
    with chromium() as driver:
        await open_page(driver, view.url)
        run = run_team(config, mosquitto.url, tmp_path, "--timeout", "6")
        assert run.wait(120) == 1, (tmp_path / "run.log").read_text()[-3000:]
        await ended_without_working(driver, "timed_out", tmp_path)
        assert "timed out" in css(driver, "#mission-reason")[0]["text"]
        assert "timed out" in css(driver, "#alerts")[0]["text"]
        screenshot(driver, "web-status-timed-out.png")

        run = run_team(config, mosquitto.url, tmp_path, log="run2.log")
        try:
            await until(lambda: 'data-state="working"' in driver.page_source, 90,
                        "a robot working", driver=driver)  # fmt: skip
            pid = run_children(config)["pr2"]
            os.kill(pid, signal.SIGKILL)
            assert run.wait(120) == 1, (tmp_path / "run2.log").read_text()[-3000:]
        finally:
            if run.poll() is None:
                run.kill()
        await ended_without_working(driver, "failed", tmp_path)
        assert "pr2" in css(driver, "#mission-reason")[0]["text"]
        assert "FAILED" in css(driver, "#alerts")[0]["text"]
        screenshot(driver, "web-status-failed.png")


async def _queue_table(url: str, team: str) -> dict[str, dict]:
    out = await asyncio.to_thread(
        subprocess.run,
        teamtree_cmd("missions", "--broker", url, "--team", team, "--json"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return {row["id"]: row for row in json.loads(out.stdout)}


def submit(tmp_path: Path, url: str, team: str, tree: str, name: str, members: str = "") -> str:
    """Submit a task-tree mission of `tree` (and `members`, a TOML list) by its file."""
    path = tmp_path / f"{name}.toml"
    text = f'[mission]\nkind = "tasktree"\ntimeout_s = 150\ntree = "{tree}"\n'
    path.write_text(text + (f"members = {members}\n" if members else ""))
    out = subprocess.run(
        teamtree_cmd("submit", str(path), "--broker", url, "--team", team, "--timeout", "30"),
        capture_output=True, text=True, timeout=90, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.timeout(400)
async def test_a_cancelled_mission_and_a_resubmitted_one(
    mosquitto, team, tmp_path: Path, view
) -> None:
    """On a serving tea party: a mission cancelled while a robot works ends with the
    cancelled banner naming who cancelled and no leaf drawn working; the same mission
    submitted again after one that succeeded is executed again (its objects are put back
    where they started), not declared done at once.

    The cancelled mission cannot end before its cancel, however slow the machine (a
    loaded one starts ``teamtree cancel`` in seconds, and a short mission could succeed
    meanwhile): the PR2 alone places three objects one after the other, so a leaf is
    most likely under way when the cancel comes, and then the orange, which the PR2
    cannot grasp, so the mission runs until it is cancelled (or its 150 s pass)."""
    config = team_config("tea_party_queue.toml", team, tmp_path)
    serving = run_team(config, mosquitto.url, tmp_path)
    try:
        with chromium() as driver:
            await open_page(driver, view.url)
            await until(lambda: css(driver, "#missions-queue") and "served by"
                        in css(driver, "#missions-queue")[0]["text"], 180,
                        "the mission queue online", driver=driver)  # fmt: skip
            first = await asyncio.to_thread(submit, tmp_path, mosquitto.url, team, "cup", "a")
            await until(lambda: any(b["state"] == "succeeded" and b["mission"] == first
                                    for b in css(driver, "#mission-banner")), 150,
                        "the first mission done", driver=driver)  # fmt: skip
            again = await asyncio.to_thread(submit, tmp_path, mosquitto.url, team, "cup", "b")
            await until(lambda: any(b["state"] == "succeeded" and b["mission"] == again
                                    for b in css(driver, "#mission-banner")), 150,
                        "the second mission done", driver=driver)  # fmt: skip
            rows = await _queue_table(mosquitto.url, team)
            print(f"the re-submitted mission: {rows[again]['summary']}")
            log = (tmp_path / "run.log").read_text()
            start = log.index(f"mission.running        agent=queue id={again}")
            end = log.index(f"mission.ended          agent=queue id={again}")
            assert f"world.mission_reset    agent=world mission={again}" in log[start:end], log
            executed = re.findall(r"behaviour\.finished +agent=\S+ label=(\S+)", log[start:end])
            assert executed == ["PLACE(cup)"], f"{rows[again]['summary']} with {executed} executed"
            status = rows[again]["status"]  # the queue's word with its robots' counts
            assert (status["state"], status["done"], status["total"]) == ("succeeded", 1, 1), status

            endless = "THEN(tea_pot, sugar, burger, orange)"
            third = await asyncio.to_thread(
                submit, tmp_path, mosquitto.url, team, endless, "c", '["pr2"]'
            )
            await until(lambda: 'data-state="working"' in driver.page_source
                        and css(driver, "#mission-state"), 90, "a robot working",
                        driver=driver)  # fmt: skip
            out = await asyncio.to_thread(
                subprocess.run,
                teamtree_cmd("cancel", third, "--broker", mosquitto.url, "--team", team),
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            # exit 1 with "already ended: ..." if it ended before the cancel came
            assert out.returncode == 0, f"the cancel did not cancel: {out.stdout}{out.stderr}"
            assert out.stdout.strip() == f"{third}: cancelling", out.stdout
            banner = await ended_without_working(driver, "cancelled", tmp_path)
            assert banner["mission"] == third
            assert "cancelled by" in css(driver, "#mission-reason")[0]["text"]
            screenshot(driver, "web-status-cancelled.png")
    finally:
        serving.send_signal(signal.SIGINT)
        try:
            serving.wait(30)
        except subprocess.TimeoutExpired:
            serving.kill()


def _read_lines(proc: subprocess.Popen, lines: list[tuple[float, str]]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic(), line))


@pytest.mark.timeout(180)
async def test_the_page_and_the_monitor_say_disconnected_when_the_broker_dies(
    team, tmp_path: Path
) -> None:
    """mosquitto killed under an open page and a running monitor: both say
    "disconnected" within 2 s, the page greys its figures; mosquitto back on its port:
    both are live again by themselves."""
    port = free_port()
    url = f"mqtt://127.0.0.1:{port}"

    def broker() -> subprocess.Popen:
        proc = subprocess.Popen(["mosquitto", "-p", str(port)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=0.2):
                    pass
            except urllib.error.URLError as exc:
                if "refused" not in str(exc.reason).lower():
                    return proc
            except Exception:  # the port answers, just not HTTP: up
                return proc
            time.sleep(0.05)
        return proc

    mosq = broker()
    page = WebProcess(url, team, tmp_path)
    monitor = subprocess.Popen(
        teamtree_cmd("monitor", "--broker", url, "--team", team, "--interval", "0.25"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[tuple[float, str]] = []
    threading.Thread(target=_read_lines, args=(monitor, lines), daemon=True).start()
    try:
        page.wait_ready()
        with chromium() as driver:
            driver.get(page.url)
            await until(lambda: css(driver, "#link.on"), 15, "the page live")
            await until(lambda: any("team " in line for _, line in lines), 15, "the monitor")
            killed = time.monotonic()
            mosq.kill()
            mosq.wait(10)
            page_at = monitor_at = None
            while time.monotonic() - killed < 10 and (page_at is None or monitor_at is None):
                if page_at is None and css(driver, '#link[data-state="disconnected"]'):
                    page_at = time.monotonic() - killed
                if monitor_at is None:
                    said = [t for t, line in lines if t >= killed and "DISCONNECTED" in line]
                    monitor_at = said[0] - killed if said else None
                await asyncio.sleep(0.05)
            print(f"the page said disconnected after {page_at} s, the monitor after {monitor_at} s")
            within = scaled(DISCONNECTED_WITHIN_S)
            assert page_at is not None and page_at <= within, (page_at, within)
            assert monitor_at is not None and monitor_at <= within, (monitor_at, within)
            assert "disconnected" in css(driver, "#link-text")[0]["text"]
            assert driver.execute_script("return document.body.classList.contains('stale')")
            screenshot(driver, "web-status-disconnected.png", full=False)
            mosq = broker()
            back = time.monotonic()
            await until(lambda: css(driver, '#link[data-state="live"]'), 30,
                        "the page live again", driver=driver)  # fmt: skip
            assert not driver.execute_script("return document.body.classList.contains('stale')")

            def monitor_live() -> bool:
                recent = [line for t, line in lines if t > max(back, time.monotonic() - 0.6)]
                return any(line.startswith("team ") for line in recent) and not any(
                    "DISCONNECTED" in line for line in recent
                )

            await until(monitor_live, 30, "the monitor live again")
    finally:
        monitor.terminate()
        page.stop()
        mosq.kill()
