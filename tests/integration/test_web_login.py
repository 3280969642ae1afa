"""Signing in to the web view in a real browser (headless Debian chromium) against a
mosquitto with access control (the files ``teamtree acl`` writes): the server, given
no credentials, finds that the broker refuses anonymous clients and asks each browser
to sign in; a wrong password is refused on the form; each user sees what the broker
lets that user read (the monitor user the broker's ``$SYS`` figures, a robot's user
not).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest

from teamtree.agents import Agent, RuntimeSettings
from tests.conftest import scaled
from tests.integration.test_security import (
    creds,
    secured,  # noqa: F401  (a fixture)
)
from tests.integration.test_web import css, until
from tests.web_support import WebProcess, browser_missing, chromium, screenshot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]


def sign_in(driver, user: str, password: str) -> None:
    driver.execute_script(
        "document.getElementById('username').value = arguments[0];"
        "document.getElementById('password').value = arguments[1];"
        "document.getElementById('sign-in').click();",
        user,
        password,
    )


def figures(driver) -> str:
    return css(driver, "#broker")[0]["text"]


async def test_the_page_asks_who_you_are_and_shows_what_you_may_read(
    secured,  # noqa: F811  (the fixture imported above)
    team,
    tmp_path,
) -> None:
    broker, _, files = secured
    password = {u: (files / "credentials" / u).read_text().strip() for u in ("monitor", "pr2")}
    pr2 = Agent("pr2", team=team, endpoint=broker.endpoint,
                runtime=RuntimeSettings(keepalive_s=2), **creds(files, "pr2"))  # fmt: skip
    web = WebProcess(broker.endpoint.url, team, tmp_path)
    try:
        async with asyncio.timeout(scaled(90)), pr2:
            await pr2.wait_connected(10)
            web.wait_ready()
            assert "refuses anonymous clients" in web.log.read_text()
            with pytest.raises(urllib.error.HTTPError) as anonymous:
                urllib.request.urlopen(web.url + "api/state", timeout=5)
            assert anonymous.value.code == 401, "nothing is read before a sign-in"
            with chromium() as driver:
                driver.get(web.url)
                await until(lambda: "/login" in driver.current_url and css(driver, "#sign-in"),
                            10, "the sign-in form")  # fmt: skip
                sign_in(driver, "monitor", "wrong")
                error = await until(lambda: css(driver, "#login-error")[0]["text"], 15,
                                    "the refusal", driver=driver)  # fmt: skip
                assert "refused user 'monitor'" in error, error
                screenshot(driver, "login.png", full=False)
                sign_in(driver, "monitor", password["monitor"])
                await until(lambda: css(driver, 'tr.agent[data-agent="pr2"]'), 20,
                            "pr2 seen as monitor", driver=driver)  # fmt: skip
                assert css(driver, "#user-name")[0]["text"] == "monitor"
                await until(lambda: "clients" in figures(driver), 20,
                            "the broker's $SYS figures (monitor may read them)", driver=driver)  # fmt: skip
                assert driver.execute_script(
                    "return document.cookie.indexOf('teamtree_login') === -1"
                ), "the sign-in cookie is HttpOnly"
                driver.execute_script("document.getElementById('sign-out').click()")
                await until(lambda: "/login" in driver.current_url and css(driver, "#sign-in"),
                            10, "the form again after signing out")  # fmt: skip
                sign_in(driver, "pr2", password["pr2"])
                await until(lambda: css(driver, 'tr.agent[data-agent="pr2"]'), 20,
                            "the team seen as pr2", driver=driver)  # fmt: skip
                assert css(driver, "#user-name")[0]["text"] == "pr2"
                await asyncio.sleep(6)  # longer than mosquitto's sys_interval (5 s)
                assert "clients" not in figures(driver), "pr2 may not read $SYS"
                state = json.loads(driver.execute_script(
                    "return await (await fetch('/api/state')).text()"
                ))  # fmt: skip
                assert state["user"] == "pr2" and state["broker"] == {}
                assert set(state["agents"]) == {"pr2"}, "the web view is no team member"
    finally:
        assert web.stop() in (0, -15), web.log.read_text()[-2000:]
