"""The person's page on a phone (390x844, headless Debian chromium) during a live tea
party with real agent processes and mosquitto: a person who taps whatever the page
offers (a "monkey" with a printed seed) never has a tap refused, the page never
scrolls sideways, never shows wire words, and keeps its buttons across pushes.

Screenshots go to ``runs/artefacts/web/`` (``$TEAMTREE_ARTEFACTS``); the chosen ones
are in docs/.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
import urllib.request

import pytest

from tests.conftest import AgentProcs, scaled
from tests.integration.test_humans import team_config
from tests.integration.test_web import (  # web: a fixture
    alice_joins,
    baxter_leaves_the_tea_pot,
    click,
    css,
    until,
    web,  # noqa: F401
)
from tests.web_support import WebProcess, browser_missing, chromium, screenshot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]

PHONE = (390, 844)
#: words of the wire a person should never read: refusal reasons, behaviour labels,
#: node ids, snake_case object names, dialog answers
WIRE_WORDS = re.compile(r"\bheld\b|not_holding|\bbusy\b|\b[A-Z]{3,}\(|root/\d|\w+_\w+|\bconcede\b")

#: the enabled, visible controls; with `pick` >= 0 taps one of them by the monkey's
#: rule (an open question first, then Finish, then Start on a subtask nobody is on)
#: and returns what it tapped, in the same call (the page may change between calls)
TAP = """
const pick = arguments[0];
const seen = Array.from(document.querySelectorAll('main button[data-action]'))
  .filter((b) => !b.disabled && b.offsetParent !== null)
  .map((b) => ({b, action: b.dataset.action, node: b.dataset.node || null,
    keep: b.dataset.keep || null, row: (b.closest('.task') || {dataset: {}}).dataset.state || null}));
const answers = seen.filter((c) => c.action === 'answer');
const finish = seen.filter((c) => c.action === 'finish');
const starts = seen.filter((c) => c.action === 'start' && c.row === 'open');
let chosen = null;
if (pick >= 0) {
  if (answers.length) chosen = answers[pick % answers.length];
  else if (finish.length) chosen = finish[0];
  else if (starts.length) chosen = starts[pick % starts.length];
  if (chosen) chosen.b.click();
}
return {
  enabled: seen.map((c) => ({action: c.action, node: c.node, keep: c.keep, row: c.row})),
  tapped: chosen && {action: chosen.action, node: chosen.node, keep: chosen.keep},
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  width: window.innerWidth,
  text: document.body.innerText,
  complete: !!document.getElementById('complete'),
};
"""

#: every button on the page gets a mark; a button rebuilt by a push has none
MARK = "document.querySelectorAll('main button[data-action]').forEach((b) => { b.__mark = 1; });"
MARKS_KEPT = """
return Array.from(document.querySelectorAll('main .task button.start, #finish, button.finish'))
  .filter((b) => arguments[0].includes(b.dataset.node || 'finish'))
  .map((b) => ({key: b.dataset.node || 'finish', kept: b.__mark === 1}));
"""


def phone(driver) -> None:
    """Make the page's viewport a phone's (a headless window is at least 500 px wide)."""
    width, height = PHONE
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True},
    )


def person_log(url: str) -> list[dict]:
    """The person's agent's log, as the server holds it (``/api/human/<id>``)."""
    with urllib.request.urlopen(url, timeout=5) as reply:
        return json.loads(reply.read())["log"]


async def test_a_person_on_a_phone_is_offered_only_taps_the_world_accepts(
    mosquitto,
    team,
    tmp_path,
    agent_procs,
    web,  # noqa: F811
) -> None:
    """human_tea without the simulated alice, the page at 390x844: every 0.15 s the
    test reads the enabled controls and taps one (answers, Finish, Start on a free
    subtask). No tap may be refused, the page never overflows sideways nor shows wire
    words, and the buttons marked once keep their identity over every push."""
    seed = random.randrange(1 << 30)
    print("monkey seed:", seed)
    rng = random.Random(seed)
    config = team_config(tmp_path, team, ["concede"], time_factor=1.0)
    baxter_leaves_the_tea_pot(config)  # the person gets a subtask, whatever the races
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    problems: list[str] = []
    refusals: dict[tuple, str] = {}
    taps: list[dict] = []
    shots: set[str] = set()
    api = web.url + "api/human/alice"
    with chromium(*PHONE) as driver:
        phone(driver)
        async with asyncio.timeout(scaled(200)):
            await alice_joins(driver, web, procs)
            nodes = [t["node"] for t in css(driver, ".task[data-node]")]
            driver.execute_script(MARK)
            version = None
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                seen = driver.execute_script(TAP, rng.randrange(1000))
                if seen["tapped"]:
                    taps.append({**seen["tapped"], "enabled": seen["enabled"]})
                assert seen["width"] == PHONE[0], f"the viewport is {seen['width']} px wide"
                if seen["overflow"] > 0:
                    problems.append(
                        f"{seen['overflow']} px of sideways scrolling at {seen['width']}"
                    )
                words = WIRE_WORDS.findall(seen["text"])
                if words:
                    problems.append(f"wire words on the page: {sorted(set(words))}")
                view = json.loads(urllib.request.urlopen(api, timeout=5).read())
                for line in view["log"]:
                    # a tap the world or the agent refused (an accepted reach that a
                    # robot's gripper beat later is no refused tap: "refused held")
                    if line["text"].startswith(
                        ("refused start", "refused finish", "error the question")
                    ):
                        refusals[(line["ts"], line["text"])] = line["text"]
                if version is not None and view["version"] != version:
                    lost = [m["key"] for m in driver.execute_script(MARKS_KEPT, [*nodes, "finish"])
                            if not m["kept"]]  # fmt: skip
                    if lost:
                        problems.append(f"buttons rebuilt by a push: {lost}")
                version = view["version"]
                busy = "you are " in seen["text"] and " is placing the " in seen["text"]
                if busy and "working" not in shots:  # the person and a robot at work
                    shots.add("working")
                    screenshot(driver, "person-phone-working.png", full=False)
                if seen["complete"]:
                    break
                await asyncio.sleep(0.15)
            else:
                screenshot(driver, "failure.png", full=False)
                pytest.fail(f"the tea party did not end; the page: {seen['text']}")
            screenshot(driver, "person-phone-done.png", full=False)
            log = person_log(api)
    print("taps:", [(t["action"], t["node"], t["keep"]) for t in taps])
    assert any(t["action"] == "finish" for t in taps), f"the person never held anything: {taps}"
    assert any(line["tag"] == "placed" for line in log), "the person placed nothing"
    problems += [f"refused: {text}" for text in refusals.values()]
    said = "\n".join(f"  {line['tag']}: {line['text']}" for line in log)
    assert not problems, "\n".join(dict.fromkeys(problems)) + f"\nthe person's log:\n{said}"


async def test_a_refused_tap_is_said_once_in_plain_words(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    """A tap the world refuses anyway (here: Finish sent from a second tab of the same
    person while the hand holds nothing, as a race would) is said once, in plain words,
    above the page and in its log; the page still offers no Finish."""
    import websockets

    config = team_config(tmp_path, team, ["concede"], time_factor=1.0)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    procs.start("world")  # the world alone: the hand moves, no robot claims anything
    server = WebProcess(mosquitto.url, team, tmp_path, "--any-person")
    try:
        server.wait_ready()
        with chromium(*PHONE) as driver:
            phone(driver)
            async with asyncio.timeout(scaled(120)):
                driver.get(server.url + "human/alice")
                await until(lambda: css(driver, 'button[data-action="join"]:not([disabled])'),
                            40, "the join button", driver=driver)  # fmt: skip
                assert click(driver, 'button[data-action="join"]')
                await until(lambda: "your hand alice moves" in css(driver, "#log")[0]["text"],
                            40, "the person's hand in the world", driver=driver)  # fmt: skip
                assert not css(driver, "button.finish:not([disabled]):not([hidden])")
                async with websockets.connect(
                    server.url.replace("http://", "ws://") + "human/alice/ws"
                ) as tab:
                    await tab.send(json.dumps({"action": "finish"}))
                    said = "Not done: your hand holds nothing to place"
                    notice = await until(lambda: css(driver, "#notice:not([hidden])"), 15,
                                         "the refusal's notice", driver=driver)  # fmt: skip
                    assert notice[0]["text"] == said
                    await asyncio.sleep(1.5)  # a few pushes later: still said once
                    text = driver.execute_script("return document.body.innerText")
                    assert text.count(said) == 2, text  # the notice and one log line
                    assert not WIRE_WORDS.search(text), text
                    assert not css(driver, "button.finish:not([disabled]):not([hidden])")
    finally:
        assert server.stop() in (0, -15), server.log.read_text()[-2000:]
