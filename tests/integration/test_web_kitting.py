"""Seed 001's expectations on the person's page, in a real browser (headless Debian
chromium) against a kitting team run as processes on mosquitto (cobot, simulated
human, allocation service): /human/human shows the blocks the cobot put on the
person's tray, the subtasks its plan gives them and its lead/follow belief, as the
cobot published them.
"""

from __future__ import annotations

import asyncio
import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from teamtree.agents import RuntimeSettings
from tests.conftest import AgentProcs, eventually, scaled
from tests.integration.test_web import css, until
from tests.test_kitting_agents import Watcher, team_config
from tests.web_support import WebProcess, browser_missing, chromium, screenshot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]

#: every assignment and stance the page draws (a redraw can be missed by polling)
WATCH = """
window.__assigned = new Set(); window.__stances = [];
new MutationObserver(() => {
  document.querySelectorAll('#expectations .task.assigned')
    .forEach(e => window.__assigned.add(Number(e.dataset.task)));
  const s = document.getElementById('expect-stance');
  if (s) window.__stances.push(s.dataset.stance + ' ' + s.textContent.replace(/\\s+/g, ' '));
}).observe(document.getElementById('expect'), {childList: true, subtree: true});
"""


async def test_the_kitting_persons_page_shows_what_the_cobot_expects(
    mosquitto, team, tmp_path: Path, agent_procs: list
) -> None:
    """A kitting run (p_follow 0.6): the page watches without joining; every block it
    showed on the person's tray is one the cobot assigned (R2), it showed at least one
    when there was one, the stance and α_f are the last plan's, the person's followed /
    led counts are what they did, and it ends with the kitting done."""
    config = team_config(tmp_path / "kitting.toml", team, tf=30.0)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    web = WebProcess(mosquitto.url, team, tmp_path)
    plans: list[dict] = []
    runtime = RuntimeSettings(tick_hz=20, heartbeat_s=0.2, keepalive_s=1)
    watcher = Watcher("watcher", team=team, endpoint=mosquitto.endpoint, runtime=runtime)

    async def on_plan(env, topic) -> None:
        if env.kind == "kitting.plan":
            plans.append(dict(env.body))

    watcher.on_agents("plans", on_plan)
    try:
        web.wait_ready()
        with chromium(width=520, height=1000) as driver:
            async with asyncio.timeout(scaled(150)), watcher:
                await watcher.wait_connected(10)
                driver.get(web.url + "human/human")
                await until(lambda: css(driver, "#link.on"), 15, "the page's socket")
                driver.execute_script(WATCH)
                await asyncio.sleep(0.3)
                for agent_id in ("allocator", "human", "cobot"):
                    procs.start(agent_id)
                await until(lambda: css(driver, "#watch-only"), 40, "the watch-only page",
                            driver=driver)  # fmt: skip
                assert "cobot works with you" in css(driver, "#watch-only")[0]["text"]
                await until(lambda: css(driver, "#expect-stance"), 60, "the cobot's first plan",
                            driver=driver)  # fmt: skip
                await until(lambda: css(driver, ".task.assigned"), 60, "a block on the tray",
                            driver=driver)  # fmt: skip
                screenshot(driver, "human-kitting.png")
                await eventually(lambda: watcher.done is not None, 120, what="kitting.done")
                await until(lambda: css(driver, "#kitting-done"), 15, "the done banner")
                assigned_seen = set(driver.execute_script("return Array.from(window.__assigned)"))
                final = css(driver, "#expect-stance")[0]
                text = css(driver, "#expectations")[0]["text"]
                screenshot(driver, "human-kitting-done.png")
                state = json.loads(await asyncio.to_thread(_get, web.url + "api/state"))
        assert await asyncio.to_thread(procs.procs["cobot"].wait, 15) == 0, procs.log("cobot")
    finally:
        web.stop()
    r2 = {b["task"] for _, k, b in watcher.events
          if k == "kitting.robot_action" and b["action"] == "R2" and b["phase"] == "end"}  # fmt: skip
    print(f"assigned by the cobot: {sorted(r2)}; shown on the tray: {sorted(assigned_seen)}")
    assert assigned_seen <= r2, "the page showed a block the cobot never put on the tray"
    assert r2 and assigned_seen, "the cobot assigned blocks (R2) and the page showed them"
    last = plans[-1]
    shown = round(last["alpha_f"], 3)  # the server sends beliefs to 3 places
    stance = "follow" if shown >= 0.5 else "lead"
    assert final["stance"] == stance, (final, last)
    assert f"α_f = {to_fixed_2(shown)}" in text, (text, last["alpha_f"])
    human_ends = [b["action"] for s, k, b in watcher.events
                  if k == "kitting.human_action" and b["phase"] == "end"]  # fmt: skip
    followed, led = human_ends.count("H4"), sum(a in ("H1", "H2") for a in human_ends)
    assert f"you followed {followed}, led {led}" in text, (text, human_ends)
    assert "20/20 spots" in text
    assert "web" not in " ".join(state["agents"]), "the web view is no team member"


def to_fixed_2(x: float) -> str:
    """JavaScript's ``x.toFixed(2)``: the exact binary value, ties away from zero (for
    x >= 0), where Python's format rounds ties to even (0.125 -> 0.13 against 0.12)."""
    return str(Decimal(x).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=scaled(5)) as reply:
        return reply.read().decode()
