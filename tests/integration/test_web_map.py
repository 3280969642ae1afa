"""The team page's map and timeline in a real browser (headless Debian chromium) against
``teamtree run`` on mosquitto: the map draws the tea table's robots and objects and
moves them as the world does (the same elements, updated, never rebuilt); a page
opened late shows the mission's timeline from its start, with node labels; a failed
behaviour is drawn failed; at 390×844 the page does not scroll sideways and the
timeline's labels keep their size; the kitting table and the hospital graph are drawn
for those missions.

Screenshots go to ``runs/artefacts/web/`` (``$TEAMTREE_ARTEFACTS``); docs/ holds copies.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from tests.integration.test_web import (  # noqa: F401  (web: a fixture)
    css,
    pytestmark,  # integration, browser, skipped without chromium
    until,
    web,
)
from tests.integration.test_web_mission_status import (  # noqa: F401  (view: a fixture)
    run_children,
    run_team,
    team_config,
    view,
)
from tests.web_support import chromium, screenshot

#: the tea table's robots and objects (configs/tea_party_s1.toml)
ROBOTS = {"pr2", "baxter"}
OBJECTS = {"cup", "sugar", "tea_pot", "sandwich", "orange", "apple", "burger"}

#: what a page shows of its map, read in one call (the page updates under us)
MAP = """
const out = {robots: {}, objects: {}};
document.querySelectorAll('#map-table g.map-robot').forEach(g => out.robots[g.dataset.robot] =
  {x: +g.dataset.x, y: +g.dataset.y, holding: g.dataset.holding});
document.querySelectorAll('#map-table g.map-object').forEach(g => out.objects[g.dataset.object] =
  {x: +g.dataset.x, y: +g.dataset.y, state: g.dataset.state});
return out;
"""

#: the page's width against the window's, and the timeline's row labels' rendered size
FIT = """
const labels = Array.from(document.querySelectorAll('#timeline-svg text.row-label tspan'));
return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
  label_px: Math.min(...labels.map(t => t.getBoundingClientRect().height)),
  labels: labels.map(t => t.parentNode.textContent.slice(t.parentNode.firstChild.textContent.length)),
  wide: Array.from(document.querySelectorAll('body *'))
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.getAttribute('class'))};
"""


def phone_size(driver, height: int = 844) -> None:
    """390×844 CSS pixels (a headless window is at least 500 wide: emulate the phone);
    a taller `height` shows the whole page for a screenshot."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": height, "deviceScaleFactor": 2, "mobile": False},
    )


async def freeze_while_working(driver, config: Path, robot: str, seconds: float = 6.0) -> None:
    """Stop `robot`'s process (SIGSTOP) while the page shows it working, for longer
    than its lease (3 s), then let it go on: its driver fails the behaviour."""
    await until(lambda: [g for g in css(driver, 'g.tree-node[data-state="working"]')
                         if robot in g["text"]], 90, f"{robot} working", driver=driver)  # fmt: skip
    pid = run_children(config)[robot]
    os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


async def to_the_end(driver, run, tmp_path: Path) -> None:
    """Wait for the page's banner and the run's success, then for the last pushes."""
    await until(lambda: css(driver, "#mission-banner"), 240, "the mission's end", driver=driver)
    assert await asyncio.to_thread(run.wait, 60) == 0, (tmp_path / "run.log").read_text()[-3000:]
    await asyncio.sleep(1.5)


def timeline(driver) -> list[dict]:
    return css(driver, "#timeline-svg rect.span")


def done_leaves(driver) -> set[str]:
    return {g["node"] for g in css(driver, 'g.tree-node[data-leaf="1"][data-state="done"]')}


@pytest.mark.timeout(420)
async def test_the_map_follows_a_tea_party_and_a_late_page_sees_its_whole_timeline(
    mosquitto,
    team,
    tmp_path: Path,
    view,  # noqa: F811
) -> None:
    """A tea party (world at half speed, so a behaviour outlasts a robot's lease): the map shows
    both robots and the seven objects, and the world moving them moves the same
    elements; the PR2 frozen while it works has its behaviour failed by its driver
    (the lease lapsed), drawn failed on the timeline; a phone-sized page opened after
    two leaves are done shows those leaves' rows, labelled, with nothing wider than
    the screen."""
    config = team_config("tea_party_s1.toml", team, tmp_path)
    config.write_text(config.read_text().replace("time_factor = 8.0", "time_factor = 0.5"))
    with chromium() as driver:
        driver.get(view.url)
        await until(lambda: css(driver, "#link.on"), 15, "the page's socket")
        run = run_team(config, mosquitto.url, tmp_path)
        try:
            first = await until(
                lambda: (m := driver.execute_script(MAP))["robots"].keys() >= ROBOTS
                and m["objects"].keys() >= OBJECTS and m, 120,
                "the tea table's robots and objects on the map", driver=driver,
            )  # fmt: skip
            # keyed: mark the elements now; an update must move these very elements
            driver.execute_script(
                "document.querySelectorAll('#map g[data-robot], #map g[data-object]')"
                ".forEach(g => { g.__mark = true; });"
            )
            moved = await until(
                lambda: [n for n, o in driver.execute_script(MAP)["objects"].items()
                         if (o["x"], o["y"]) != (first["objects"][n]["x"], first["objects"][n]["y"])],
                120, "an object moved by the world, moved on the map", driver=driver,
            )  # fmt: skip
            held = await until(
                lambda: [r for r in driver.execute_script(MAP)["robots"].values() if r["holding"]],
                60, "a robot shown holding an object", driver=driver,
            )  # fmt: skip
            print(f"moved on the map: {moved}; holding: {held}")
            await freeze_while_working(driver, config, "pr2")
            kept = driver.execute_script(
                "return Array.from(document.querySelectorAll('#map g[data-robot], "
                "#map g[data-object]')).every(g => g.__mark === true)"
            )
            assert kept, "the map's elements were replaced, not updated"
            earlier = await until(lambda: len(done_leaves(driver)) >= 2 and done_leaves(driver),
                                  150, "two leaves done", driver=driver)  # fmt: skip
            with chromium(390, 844) as phone:
                phone_size(phone)
                phone.get(view.url)
                await until(lambda: css(phone, "#link.on") and timeline(phone), 30,
                            "the late page's timeline", driver=phone)  # fmt: skip
                spans = timeline(phone)
                # a row for each: a leaf whose holder's lease lapsed as it placed the
                # object is counted done from the world with no `done` transition, so
                # its row is the failed attempt (docs/protocol.md)
                rows = {s["node"] for s in spans}
                assert earlier <= rows, (earlier, spans)
                fit = phone.execute_script(FIT)
                print(f"the late phone page: {fit}")
                assert fit["scroll"] <= fit["inner"], f"the page scrolls sideways: {fit}"
                assert fit["label_px"] >= 10, f"timeline labels too small to read: {fit}"
                assert any("PLACE(" in text or "cup" in text for text in fit["labels"]), fit
                assert not any(text.strip().startswith("root/") for text in fit["labels"]), fit
                phone_size(phone, phone.execute_script("return document.body.scrollHeight"))
                await asyncio.sleep(1.5)  # redrawn at the new size
                screenshot(phone, "web-team-phone.png", full=False)
            await to_the_end(driver, run, tmp_path)
        finally:
            if run.poll() is None:
                run.kill()
        records = [json.loads(line) for line in (tmp_path / "tea_party_s1.jsonl").open()]
        failed = {(r["body"]["robot"], r["body"]["node"]) for r in records
                  if r["kind"] == "behaviour.failed"}  # fmt: skip
        assert failed, "the frozen PR2's driver should have failed its behaviour (the premise)"
        drawn = {(s["agent"], s["node"]) for s in timeline(driver) if s["status"] == "failed"}
        assert failed <= drawn, (failed, drawn)
        assert css(driver, "#timeline-svg text.failed-mark"), "the failure is marked"
        final = driver.execute_script(MAP)
        at_goal = {n for n, o in final["objects"].items() if o["state"] == "at_goal"}
        assert len(at_goal) >= 6, final  # all but one of the OR's two fruits
        screenshot(driver, "web-map-tea.png")


#: config -> (what the map must show, in a JS expression's truth)
KINDS = {
    "kitting.toml": (
        "document.querySelectorAll('#map-kit g.map-spot').length === 20 && "
        "document.querySelectorAll('#map-kit g.map-spot[data-state=placed]').length === 20",
        "the kit's 20 spots all placed",
    ),
    "hospital_scenario1.toml": (
        "document.querySelectorAll('#map-graph circle.map-node').length >= 20 && "
        "document.querySelectorAll('#map-graph g.map-robot').length === 3 && "
        "document.querySelector('#map-graph g.map-robot[data-robot=DR]').dataset.region !== 'x2'",
        "the hospital graph with its three robots, DR moved off its start",
    ),
}


@pytest.mark.timeout(420)
@pytest.mark.parametrize("config_name", list(KINDS))
async def test_the_map_draws_the_kitting_table_and_the_hospital_graph(
    config_name: str,
    mosquitto,
    team,
    tmp_path: Path,
    view,  # noqa: F811
) -> None:
    """Kitting: the kit's spots in the pattern, all placed once the kit is complete.
    LTL: the hospital's regions and corridors, every robot on one, moving."""
    check, what = KINDS[config_name]
    config = team_config(config_name, team, tmp_path)
    with chromium() as driver:
        driver.get(view.url)
        await until(lambda: css(driver, "#link.on"), 15, "the page's socket")
        run = run_team(config, mosquitto.url, tmp_path)
        try:
            await until(lambda: driver.execute_script(f"return {check}"), 300, what,
                        driver=driver)  # fmt: skip
            await to_the_end(driver, run, tmp_path)
        finally:
            if run.poll() is None:
                run.kill()
        assert driver.execute_script(f"return {check}"), what
        assert timeline(driver), "the mission's work is on the timeline"
        screenshot(driver, f"web-map-{config_name.split('_')[0].removesuffix('.toml')}.png")


@pytest.mark.vda5050
@pytest.mark.timeout(300)
async def test_the_map_shows_an_agv_where_it_reports_itself(
    mosquitto,
    team,
    tmp_path: Path,
    view,  # noqa: F811
) -> None:
    """A simulated PR2 and a VDA 5050 AGV (vda-5050-lib's virtual AGV): the AGV is on
    the map at its reported position, moving, with its battery and connection; the
    driver reports the AGV's errors (none here), so no note says they are missing."""
    from tests.vda5050_support import (
        SIM_AGENTS,
        VirtualAgv,
        agv_agents,
        require_virtual_agv,
    )
    from tests.vda5050_support import team_config as agv_team

    require_virtual_agv()
    agents = agv_agents("agv7", "agv7", loads={"pallet1": ("A", "B")})
    config = agv_team(tmp_path / "team.toml", team, "AND(cup, THEN(pallet1, MOVE(dock)))",
                      SIM_AGENTS + agents, tmp_path / "run.jsonl")  # fmt: skip
    agv = VirtualAgv("agv7", mosquitto.url, tmp_path / "agv7.log")
    agv.start()
    try:
        with chromium() as driver:
            driver.get(view.url)
            await until(lambda: css(driver, "#link.on"), 15, "the page's socket")
            run = run_team(config, mosquitto.url, tmp_path)
            try:
                shown = 'g.map-robot[data-robot="agv7"]'
                first = (await until(lambda: css(driver, shown), 90, "the AGV on the map",
                                     driver=driver))[0]  # fmt: skip
                await until(lambda: (css(driver, shown)[0]["x"], css(driver, shown)[0]["y"])
                            != (first["x"], first["y"]), 90, "the AGV moving on the map",
                            driver=driver)  # fmt: skip
                label = css(driver, '#map-table text[data-robot="agv7"]')[0]["text"]
                assert "battery" in label and "ONLINE" in label, label
                notes = css(driver, "#map-notes")[0]["text"]
                assert "AGV errors are not shown" not in notes, notes
                await to_the_end(driver, run, tmp_path)
            finally:
                if run.poll() is None:
                    run.kill()
            screenshot(driver, "web-map-vda5050.png")
    finally:
        agv.stop()
