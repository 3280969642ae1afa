"""The web view in a real browser (headless Debian chromium driven by Selenium)
against real agent processes and mosquitto: the team page follows a tea party to the
end, a person in the browser takes alice's place in the human_tea mission, a reload
restores the person's page, and a page left open does not grow without bound.

Screenshots go to ``runs/artefacts/web/`` (``$TEAMTREE_ARTEFACTS``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest

from teamtree.agents import RuntimeSettings
from tests.conftest import REPO, AgentProcs, eventually, scaled, teamtree_cmd
from tests.integration.test_humans import BURGER, CUP, SUGAR, TEA, Watcher, team_config
from tests.integration.test_security import secured  # noqa: F401  (a fixture)
from tests.web_support import (
    CuttableRelay,
    WebProcess,
    browser_missing,
    chromium,
    churn_team,
    page_figures,
    screenshot,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]

TEA_PARTY = REPO / "configs" / "tea_party_s1.toml"


async def until(probe, timeout: float, what: str, interval: float = 0.2, driver=None):
    """Poll `probe` (quick browser queries) until it returns something truthy; on
    timeout, save a screenshot of `driver`'s page and fail with its text."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except Exception:  # the page is being redrawn under us: try again
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            page = ""
            if driver is not None:
                screenshot(driver, "failure.png", full=False)
                page = driver.execute_script("return document.body.innerText")
            pytest.fail(f"timed out after {timeout} s waiting for {what}; the page: {page}")
        await asyncio.sleep(interval)


def css(driver, selector: str) -> list[dict]:
    """The elements matching `selector` as plain data (text and data-* attributes), read
    in one call: the pages redraw on every push, so element handles go stale."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(e => Object.assign({text: e.textContent, disabled: !!e.disabled}, e.dataset));",
        selector,
    )


def click(driver, selector: str) -> bool:
    """Tap the first element matching `selector`; False when there is none."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); if (!e) return false;"
        "e.click(); return true;",
        selector,
    )


def cup_question(driver) -> dict | None:
    """The question on the page when it is about the cup. A robot that misjudges the
    person's reach (the hand passes the burger on its way to the cup) may ask about
    the burger first; the person lets it have the burger ("No, you take it")."""
    question = css(driver, ".question[data-dialog]")
    if not question:
        return None
    if "the cup" in question[0]["text"]:
        return question[0]
    click(driver, ".question button.no")
    return None


async def take_a_free_subtask(driver, timeout: float = 60.0) -> str:
    """Tap Start on stage 2's tea pot, or on the sugar when a robot holds the tea pot,
    as soon as the page offers it (stage 1 done), as a person waiting for it would;
    returns the node the person now reaches for. Both robots go for stage 2 the moment
    it opens, and the world refuses a tap that comes after a robot's gripper closed
    (the page then says "Not done: the tea pot is in another hand"): try the other
    subtask then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node in (TEA, SUGAR):
            refused = len(css(driver, "#log .error"))
            if not click(driver, f'button.start[data-node="{node}"]:not([disabled])'):
                continue
            reach = time.monotonic() + 5
            while time.monotonic() < reach:
                # a robot may ask about the subtask meanwhile: the person keeps it
                click(driver, ".question[data-dialog] button.yes")
                state = css(driver, f'.task[data-node="{node}"]')
                if state and state[0]["state"] in ("reaching", "holding"):
                    return node
                if len(css(driver, "#log .error")) > refused:
                    break
                await asyncio.sleep(0.2)
        await asyncio.sleep(0.02)
    screenshot(driver, "failure.png", full=False)
    log = css(driver, "#log")[0]["text"]
    pytest.fail(f"the person could take neither the tea pot nor the sugar; the page's log: {log}")


def tree_states(driver) -> dict[str, str]:
    return driver.execute_script(
        "const o = {}; document.querySelectorAll('g.tree-node')"
        ".forEach(g => { o[g.dataset.node] = g.dataset.state; }); return o;"
    )


#: records every state the tree's nodes are drawn in (a redraw can be missed by polling)
WATCH_STATES = """
window.__states = new Set();
new MutationObserver(() => document.querySelectorAll('g.tree-node')
  .forEach(g => window.__states.add(g.dataset.state)))
  .observe(document.getElementById('tree'), {childList: true, subtree: true});
"""


def baxter_leaves_the_tea_pot(config) -> None:
    """The Baxter's grasp score of the tea pot is 3.0 (each score is seeded by the robot
    and the pose): with min_grasp 5 it counts as no grasp and the Baxter leaves the tea
    pot to the person, so a test does not hinge on a race between a robot's gripper and
    the browser's tap."""
    text = config.read_text()
    baxter = 'driver = "baxter-driver"\nmetric = "distance+grasp"\n'
    assert baxter in text, "configs/human_tea.toml changed: update this test"
    config.write_text(text.replace(baxter, baxter + "min_grasp = 5.0\n"))


async def alice_joins(driver, web, procs) -> None:
    """Start human_tea's agents but alice, open alice's page and join as her; returns
    once the page lists the mission's 4 subtasks."""
    for agent_id in ("world", "pr2-driver", "baxter-driver", "pr2", "baxter"):
        procs.start(agent_id)
    driver.get(web.url + "human/alice")
    await until(lambda: css(driver, 'button[data-action="join"]:not([disabled])'), 40,
                "the robots expecting alice", driver=driver)  # fmt: skip
    assert click(driver, 'button[data-action="join"]')
    await until(lambda: len(css(driver, ".task[data-node]")) == 4, 40, "the 4 subtasks")


@pytest.fixture
def web(mosquitto, team, tmp_path):
    process = WebProcess(mosquitto.url, team, tmp_path)
    try:
        process.wait_ready()
        yield process
    finally:
        assert process.stop() in (0, -15), process.log.read_text()[-2000:]


async def test_team_page_follows_a_tea_party_to_the_end(mosquitto, team, tmp_path, web) -> None:
    """Every agent of the tea party appears with its kind and presence; the tree's
    leaves turn done with their robot's name, as the recorder saw them; the page's
    size stays put while it runs; the web view never shows up as a team member."""
    text = TEA_PARTY.read_text().replace('name = "tea-party-s1"', f'name = "{team}"')
    config = tmp_path / "tea_party.toml"
    config.write_text(text.replace("runs/tea_party_s1.jsonl", str(tmp_path / "record.jsonl")))
    expected = {"pr2", "baxter", "world", "pr2-driver", "baxter-driver", "recorder"}
    with chromium() as driver:
        driver.get(web.url)
        await until(lambda: "live" in css(driver, "#link-text")[0]["text"], 15, "the page's socket")
        before = page_figures(driver)
        driver.execute_script(WATCH_STATES)
        run = subprocess.Popen(
            teamtree_cmd("run", str(config), "--broker", mosquitto.url),
            stdout=(tmp_path / "run.log").open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
        try:
            rows = await until(
                lambda: expected <= {r["agent"] for r in css(driver, "tr.agent")}
                and css(driver, "tr.agent"),
                60, "every agent of the tea party on the page",
            )  # fmt: skip
            await until(lambda: css(driver, "#complete"), 120, "the mission complete banner")
            assert run.wait(60) == 0, (tmp_path / "run.log").read_text()[-3000:]
        finally:
            if run.poll() is None:
                run.kill()
        rows = {r["agent"]: r["text"] for r in css(driver, "tr.agent")}
        assert set(rows) == expected, "nobody but the config's agents (the web view is no member)"
        assert "robot" in rows["pr2"] and "world" in rows["world"]
        seen_states = set(driver.execute_script("return Array.from(window.__states)"))
        assert {"active", "working", "done"} <= seen_states, seen_states
        records = [
            json.loads(line) for line in (tmp_path / "record.jsonl").read_text().splitlines()
        ]
        done_by = {
            r["body"]["node"]: r["sender"]
            for r in records
            if r["kind"] == "node.transition" and r["body"].get("status") == "done"
        }
        # the run publishes one thing, its verdict (mission.status), and is no member
        assert {r["sender"] for r in records if r["sender"] != "run"} <= expected
        assert {r["kind"] for r in records if r["sender"] == "run"} <= {"mission.status"}
        states = tree_states(driver)
        assert states["root"] == "done"
        leaves = {g["node"]: g["text"] for g in css(driver, 'g.tree-node[data-leaf="1"]')}
        assert {n for n in leaves if states[n] == "done"} == set(done_by)
        for node, robot in done_by.items():
            assert robot in leaves[node], (node, robot, leaves[node])
        assert len(css(driver, "#timeline-svg rect.span")) >= len(done_by)
        click(driver, 'tr.agent[data-agent="pr2"] td')
        await until(lambda: '"profile": "pr2"' in css(driver, "#factsheet-json")[0]["text"], 5,
                    "pr2's factsheet")  # fmt: skip
        after = page_figures(driver)
        print("team page figures before/after the run:", before, after)
        assert after["dom_nodes"] < 3000, after
        screenshot(driver, "team.png")


async def test_a_person_in_the_browser_takes_alices_place(
    mosquitto, team, tmp_path, agent_procs, web
) -> None:
    """human_tea without the simulated alice: the test taps Start on the cup while the
    PR2 works on it, answers the PR2's question "no" on the page, takes the tea pot (the
    sugar when a robot has the tea pot already), reloads the page while holding it
    (state restored) and finishes it; the mission completes with that subtask placed by the
    person and nothing held twice.

    The PR2 asks only if it infers the person's reach for the cup before its gripper
    closes on the cup, 1.5 simulated s after it set off. Before the reach can be
    inferred come the test's tap (seeing the PR2 work, then the page's button), the
    world's first hand samples, and three of the driver's observations (10 a wall
    second) agreeing on the cup: wall-clock latencies that a loaded machine stretches
    (in one CI run past the grasp: the PR2 placed the cup itself and asked nothing).
    The world runs at 0.4 of real time here, so those 1.5 s are 3.75 s of wall time
    and each observation 0.04 simulated s: the race is the same race between the
    person's reach and the PR2's gripper, with room for a slow machine."""
    config = team_config(tmp_path, team, ["concede"], time_factor=0.4)
    # the tap lost the race to the Baxter's gripper on a loaded machine
    baxter_leaves_the_tea_pot(config)
    text = config.read_text()
    # A straight reach: with the configured 5 % bow the hand can set off toward the
    # burger (11 degrees from the cup as seen from the person's rest pose), so the PR2
    # confirms the cup only near it, and the PR2's gripper (about 1.5 s from its start
    # to the grasp) closed on the cup first in one CI run: no question came. Straight,
    # the PR2 infers the cup about 0.3 s after the tap.
    bow = "path_noise = 0.05\n"
    assert bow in text, "configs/human_tea.toml changed: update this test"
    config.write_text(text.replace(bow, "path_noise = 0.0\n"))
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    watcher = Watcher(
        "watcher", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )
    with chromium(width=520, height=900) as driver:
        async with asyncio.timeout(scaled(150)), watcher:
            await watcher.wait_connected(10)
            await alice_joins(driver, web, procs)
            await until(lambda: "your hand alice moves" in css(driver, "#log")[0]["text"], 40,
                        "the person's hand in the world", driver=driver)  # fmt: skip
            await eventually(lambda: watcher.working(CUP, "pr2"), 30, what="the PR2 on the cup")
            await until(lambda: css(driver, f'button.start[data-node="{CUP}"]:not([disabled])'), 10,
                        "Start cup", driver=driver)  # fmt: skip
            assert click(driver, f'button.start[data-node="{CUP}"]')
            question = await until(
                lambda: cup_question(driver), 20, "the PR2's question", driver=driver
            )
            assert "pr2 asks" in question["text"]
            assert "s left to answer" in question["text"], "a visible countdown"
            screenshot(driver, "human-question.png", full=False)
            # the cup's own button: the Baxter may be asking about the burger beside it
            assert click(driver, f'.question[data-dialog="{question["dialog"]}"] button.no')
            await eventually(
                lambda: any(d["node"] == CUP for d in watcher.dialogs),
                10,
                what="the dialog resolved",
            )
            cup_dialog = next(d for d in watcher.dialogs if d["node"] == CUP)
            assert cup_dialog["robot"] == "pr2"
            assert cup_dialog["answer"] == "concede" and cup_dialog["how"] == "answered"
            mine = await take_a_free_subtask(driver)  # once stage 1 is done
            await eventually(lambda: watcher.done(CUP) and watcher.done(BURGER), 10, what="stage 1")

            def holding_or_asked():
                if click(driver, ".question[data-dialog] button.yes"):
                    return None  # a robot asked about my subtask: I keep it
                return css(driver, "button.finish:not([disabled])")

            # in hand before the reload: a reload while the hand still reached could
            # swallow a robot's question about the subtask, left unanswered (CI, loaded)
            await until(holding_or_asked, 30, f"{mine} in hand")
            log_before = css(driver, "#log")[0]["text"]
            driver.refresh()  # mid-mission: the page must come back as it was
            restored = await until(
                lambda: css(driver, f'.task[data-node="{mine}"]'), 15, "the subtasks after reload"
            )
            assert restored[0]["state"] == "holding", restored
            assert css(driver, f'.task[data-node="{CUP}"]')[0]["state"] == "done"
            log_after = css(driver, "#log")[0]["text"]
            assert 'you told pr2: "you take it"' in log_after and log_before[-60:] in log_after
            await until(lambda: css(driver, "button.finish:not([disabled])"), 15, "Finish again")
            assert click(driver, "button.finish")
            await until(lambda: css(driver, "#complete"), 40, "the task done", driver=driver)
            placed = css(driver, f'.task[data-node="{mine}"]')[0]
            assert placed["state"] == "done" and "you" in placed["text"]
            screenshot(driver, "human.png")
            driver.set_window_size(1400, 1000)
            driver.get(web.url)
            await until(lambda: css(driver, f'g.tree-node[data-node="{mine}"][data-state="done"]'),
                        15, "the team page")  # fmt: skip
            assert "alice" in css(driver, f'g.tree-node[data-node="{mine}"]')[0]["text"]
            assert "alice (person)" in css(driver, "#timeline")[0]["text"]
            screenshot(driver, "team-with-person.png")
    assert watcher.violations == [], watcher.violations
    assert not watcher.done(mine), f"the person placed {mine}, not a robot"
    assert all(t["agent"] != "alice" for t in watcher.transitions), "a person sends no tree state"


async def test_a_page_left_open_stays_bounded(mosquitto, team, tmp_path, web) -> None:
    """A synthetic team keeps the page busy (two robots, 40 spans/s, lost claims and
    dialogs); once the page's history caps are full its DOM and JS heap stop growing.
    The long (10-minute) version is benchmarks/bench_web_page.py."""
    with chromium() as driver:
        driver.get(web.url)
        async with churn_team(mosquitto.endpoint, team, robots=2, rate_hz=20.0) as robots:
            await until(lambda: css(driver, "#timeline-svg"), 20, "the timeline")
            await eventually(lambda: sum(r.spans for r in robots) >= 700, 60, what="caps full")
            await asyncio.sleep(2)
            first = page_figures(driver)
            await asyncio.sleep(10)
            second = page_figures(driver)
            spans = sum(r.spans for r in robots)
    print(f"after caps full: {first}; after {spans} spans: {second}")
    assert second["dom_nodes"] <= first["dom_nodes"] * 1.1 + 50, (first, second)
    assert second["js_heap_used"] <= first["js_heap_used"] * 1.5 + 2e6, (first, second)


async def test_the_server_refuses_what_it_should_without_a_browser(
    mosquitto, team, web, tmp_path
) -> None:
    """Nobody joins by opening a page: a person no robot models cannot join (unless the
    server allows any person); an id already online in the team is refused (joining
    would take over its session); a bad id is a 400 naming the problem; an unhosted
    person is a 404; a bad tap is answered with an error and the socket stays usable."""
    import urllib.error
    import urllib.request

    import websockets

    from teamtree.agents import Agent

    any_web: WebProcess | None = None
    try:
        bob = Agent(
            "bob", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
        )
        async with asyncio.timeout(scaled(60)), bob:
            await bob.wait_connected(10)
            base = web.url.replace("http://", "ws://")
            await eventually(
                lambda: "bob" in json.loads(urllib.request.urlopen(web.url + "api/state").read())["online"],
                15, what="bob online in the web view",
            )  # fmt: skip
            async with websockets.connect(base + "human/carol/ws") as ws:
                offer = json.loads(await ws.recv())["join"]
                assert (
                    offer["id"] == "carol" and not offer["allowed"] and offer["expected_by"] == []
                )
                await ws.send(json.dumps({"action": "join"}))
                reply = await next_with(ws, "error")
                assert "no robot of team" in reply["error"] and "--any-person" in reply["error"]
            assert (
                "carol"
                not in json.loads(urllib.request.urlopen(web.url + "api/state").read())["agents"]
            )
            (tmp_path / "any").mkdir()
            web = any_web = WebProcess(mosquitto.url, team, tmp_path / "any", "--any-person")
            web.wait_ready()
            base = web.url.replace("http://", "ws://")
            await eventually(
                lambda: "bob" in json.loads(urllib.request.urlopen(web.url + "api/state").read())["online"],
                15, what="bob online in the second web view",
            )  # fmt: skip
            async with websockets.connect(base + "human/bob/ws") as ws:
                assert json.loads(await ws.recv())["join"]["allowed"]
                await ws.send(json.dumps({"action": "join"}))
                reply = await next_with(ws, "error")
            assert "already online" in reply["error"] and "bob" in reply["error"]
            with pytest.raises(urllib.error.HTTPError) as bad:
                urllib.request.urlopen(web.url + "human/no$body")
            assert bad.value.code == 400 and "$" in bad.value.read().decode()
            with pytest.raises(urllib.error.HTTPError) as missing:
                urllib.request.urlopen(web.url + "api/human/carol")
            assert missing.value.code == 404
            async with websockets.connect(base + "human/carol/ws") as ws:
                assert json.loads(await ws.recv())["join"]["allowed"]
                await ws.send(json.dumps({"action": "join"}))
                first = await next_with(ws, "subtasks")
                assert first["id"] == "carol" and first["subtasks"] == []
                await ws.send("not json at all")
                answer = await next_with(ws, "error")
                assert "a tap is a JSON object" in answer["error"], answer
                await ws.send(json.dumps({"action": "dance"}))
                answer = await next_with(ws, "error")
                assert "expected start(node), finish" in answer["error"], answer
                await ws.send(json.dumps({"action": "leave"}))
                await next_with(ws, "left")
        assert json.loads(urllib.request.urlopen(web.url + "healthz").read())["broker"] is True
    finally:
        if any_web is not None:
            any_web.stop()


async def next_with(ws, key: str) -> dict:
    """The next message from a page's socket that carries `key`."""
    while key not in (message := json.loads(await ws.recv())):
        pass
    return message


async def test_with_access_control_the_view_reads_as_its_user(
    secured,  # noqa: F811  (the fixture imported above)
    team,
    tmp_path,
) -> None:
    """Against a broker with passwords and ACLs (`teamtree acl`): the web view started
    with the read-only monitor user shows the team; a wrong password exits 1 saying so."""
    import urllib.request

    from teamtree.agents import Agent
    from tests.integration.test_security import creds

    broker, _, files = secured
    password = (files / "credentials" / "monitor").read_text().strip()
    pr2 = Agent("pr2", team=team, endpoint=broker.endpoint, runtime=RuntimeSettings(keepalive_s=2),
                **creds(files, "pr2"))  # fmt: skip
    # a generated password may start with "-": pass it as --password=VALUE
    good = WebProcess(
        broker.endpoint.url, team, tmp_path, "--username", "monitor", f"--password={password}"
    )
    (tmp_path / "bad").mkdir()
    bad = WebProcess(broker.endpoint.url, team, tmp_path / "bad", "--username", "monitor",
                     "--password", "wrong")  # fmt: skip
    try:
        async with asyncio.timeout(scaled(60)), pr2:
            await pr2.wait_connected(10)
            good.wait_ready()

            def online() -> list[str]:
                return json.loads(urllib.request.urlopen(good.url + "api/state").read())["online"]

            await eventually(
                lambda: "pr2" in online(), 15, what="pr2 seen through the monitor user"
            )
        assert await asyncio.to_thread(bad.proc.wait, 30) == 1
        said = bad.log.read_text()
        assert "cannot connect to the broker" in said
        assert "last attempt: [code:135] Not authorized" in said, said  # the broker's reason
    finally:
        good.stop()
        bad.stop()


async def test_the_team_page_rides_out_a_lost_connection(mosquitto, team, tmp_path, web) -> None:
    """The line between browser and server is cut mid-mission (a relay drops every
    connection and refuses new ones for 3 s, as a lost Wi-Fi would): the page says it
    is not live, reconnects by itself once the line is back, and catches up, ending with
    every leaf the recorder saw done shown done."""
    text = TEA_PARTY.read_text().replace('name = "tea-party-s1"', f'name = "{team}"')
    text = text.replace("runs/tea_party_s1.jsonl", str(tmp_path / "record.jsonl"))
    config = tmp_path / "tea_party.toml"
    # the world at 2x (not 8x): the mission outlasts the cut
    config.write_text(text.replace("time_factor = 8.0", "time_factor = 2.0"))
    relay = CuttableRelay(web.port)
    run = None
    try:
        with chromium() as driver:
            driver.get(relay.url)
            await until(lambda: css(driver, "#link.on"), 15, "the page's socket")
            run = subprocess.Popen(
                teamtree_cmd("run", str(config), "--broker", mosquitto.url),
                stdout=(tmp_path / "run.log").open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
            )  # fmt: skip
            await until(lambda: 'data-state="working"' in driver.page_source, 60,
                        "a robot working on the page")  # fmt: skip
            relay.cut()
            await until(lambda: not css(driver, "#link.on"), 10, "the page saying it is cut off")
            await asyncio.sleep(3.0)
            relay.restore()
            await until(lambda: css(driver, "#link.on"), 20, "the page back live by itself")
            await until(lambda: css(driver, "#complete"), 120, "the mission complete banner",
                        driver=driver)  # fmt: skip
            assert run.wait(60) == 0, (tmp_path / "run.log").read_text()[-3000:]
            records = [
                json.loads(line) for line in (tmp_path / "record.jsonl").read_text().splitlines()
            ]
            done = {
                r["body"]["node"]
                for r in records
                if r["kind"] == "node.transition" and r["body"].get("status") == "done"
            }
            states = tree_states(driver)
            assert done and {n for n, state in states.items() if state == "done"} >= done
            assert states["root"] == "done"
    finally:
        relay.close()
        if run is not None and run.poll() is None:
            run.kill()
