"""The team page's missions desk in a real browser (headless Debian chromium) against a
serving tea-party team (``teamtree run configs/tea_party_queue.toml``: world, drivers,
recorder and a mission queue as processes on mosquitto): a pasted mission goes queued
-> running -> done, one picked from the files is cancelled while it waits, and the
refusals are shown next to the form.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter

import pytest

from tests.conftest import REPO, teamtree_cmd
from tests.integration.test_web import click, css, until
from tests.web_support import WebProcess, browser_missing, chromium, screenshot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]

QUEUE_CONFIG = REPO / "configs" / "tea_party_queue.toml"


def mission_rows(driver) -> dict[str, str]:
    return {r["mission"]: r["state"] for r in css(driver, "tr.mission-row")}


def type_mission(driver, text: str) -> None:
    driver.execute_script(
        "document.getElementById('mission-pick').value = '';"
        "document.getElementById('mission-toml').value = arguments[0];",
        text,
    )


async def test_missions_submitted_and_cancelled_from_the_team_page(mosquitto, team, tmp_path):
    """A pasted one-leaf mission goes queued -> running -> done; tea_cup.toml, picked
    from the server's files and queued behind it, is cancelled with its button before it
    starts; a mission naming an object the world lacks and a text that is not TOML are
    refused with the reason shown next to the form; the recorder saw each leaf of the
    done mission done once and nothing of the cancelled one."""
    text = QUEUE_CONFIG.read_text().replace('name = "tea-party-queue"', f'name = "{team}"')
    config = tmp_path / "queue.toml"
    config.write_text(text.replace("runs/tea_party_queue.jsonl", str(tmp_path / "record.jsonl")))
    serving = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        stdout=(tmp_path / "team.log").open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    web = WebProcess(
        mosquitto.url, team, tmp_path, "--missions-dir", str(REPO / "configs" / "missions")
    )
    try:
        web.wait_ready()
        with chromium() as driver:
            driver.get(web.url)
            await until(
                lambda: "served by queue" in css(driver, "#missions-queue")[0]["text"], 120,
                "the mission queue online", driver=driver,
            )  # fmt: skip
            assert css(driver, "#mission-submit:not([disabled])")
            type_mission(driver, '[mission]\nkind = "tasktree"\ntimeout_s = 120\ntree = "cup"\n')
            assert click(driver, "#mission-submit")
            ok = await until(lambda: "accepted: " in css(driver, "#mission-ok")[0]["text"]
                             and css(driver, "#mission-ok")[0]["text"], 20,
                             "the queue accepting the mission", driver=driver)  # fmt: skip
            first = ok.split("accepted: ", 1)[1].split(" ", 1)[0]
            await until(lambda: mission_rows(driver).get(first) == "running", 60,
                        "the mission running", driver=driver)  # fmt: skip

            type_mission(driver, '[mission]\nkind = "tasktree"\ntree = "THEN(cup, spoon)"\n')
            assert click(driver, "#mission-submit")
            error = await until(lambda: css(driver, "#mission-error")[0]["text"], 20,
                                "the refusal", driver=driver)  # fmt: skip
            assert "[mission.tree]" in error and "spoon" in error, error
            type_mission(driver, "[mission\nkind = tasktree")
            assert click(driver, "#mission-submit")
            error = await until(lambda: "not valid TOML" in css(driver, "#mission-error")[0]["text"]
                                and css(driver, "#mission-error")[0]["text"], 10, "a TOML error")  # fmt: skip

            await until(lambda: css(driver, 'option[value="tea_cup.toml"]'), 10, "the files")
            driver.execute_script(
                "const s = document.getElementById('mission-pick'); s.value = 'tea_cup.toml';"
                "s.dispatchEvent(new Event('change'));"
            )
            assert "THEN(cup, sugar)" in driver.execute_script(
                "return document.getElementById('mission-toml').value"
            )
            assert click(driver, "#mission-submit")
            ok = await until(lambda: "queued, position 1" in css(driver, "#mission-ok")[0]["text"]
                             and css(driver, "#mission-ok")[0]["text"], 20, "the second queued",
                             driver=driver)  # fmt: skip
            second = ok.split("accepted: ", 1)[1].split(" ", 1)[0]
            await until(lambda: css(driver, f'button[data-cancel="{second}"]'), 10, "its cancel")
            assert click(driver, f'button[data-cancel="{second}"]')
            await until(lambda: mission_rows(driver).get(second) == "cancelled", 20,
                        "the second cancelled", driver=driver)  # fmt: skip
            await until(lambda: mission_rows(driver).get(first) == "done", 150,
                        "the first mission done", driver=driver)  # fmt: skip
            await until(lambda: css(driver, "#complete"), 10, "the tree complete", driver=driver)
            assert mission_rows(driver) == {first: "done", second: "cancelled"}
            outcome = {r["mission"]: r["text"] for r in css(driver, "tr.mission-row")}
            assert "done in" in outcome[first] and "cancelled by web-" in outcome[second]
            assert not css(driver, "button[data-cancel]"), "no cancel button on ended missions"
            agents = {r["agent"] for r in css(driver, "tr.agent")}
            assert not any(a.startswith("web") for a in agents), agents
            screenshot(driver, "team-missions.png")
    finally:
        web.stop()
        serving.send_signal(signal.SIGINT)
        try:
            serving.wait(60)
        except subprocess.TimeoutExpired:
            serving.kill()
    records = [json.loads(line) for line in (tmp_path / "record.jsonl").read_text().splitlines()]
    done = Counter(
        r["body"]["node"] for r in records
        if r["kind"] == "node.transition" and r["body"].get("status") == "done"
        and r["body"].get("mission") == first
    )  # fmt: skip
    assert done and max(done.values()) == 1, done
    assert not [r for r in records if r["kind"] == "node.transition"
                and r["body"].get("mission") == second], "the cancelled mission ran"  # fmt: skip
