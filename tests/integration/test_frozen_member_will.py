"""A frozen member's Last Will comes on both brokers teamtree runs on.

A SIGSTOPped agent keeps its socket open, so only the broker's keep-alive check can
notice it; its Will (CONNECTION_BROKEN) is what lets peers start the lease wait and take
its node over. amqtt, the embedded broker of ``teamtree run``, never dropped a silent
client by itself (``broker/amqtt_keepalive.py``): the Will came only when the process
died. A clean stop must not look like a crash on either broker.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest

from teamtree.agents import Agent, Presence
from tests.conftest import eventually, teamtree_cmd

pytestmark = pytest.mark.integration


def _config(path: Path, team: str) -> Path:
    path.write_text(
        f'[team]\nname = "{team}"\n[runtime]\nkeepalive_s = 1\nheartbeat_s = 0.5\n'
        '[mission]\nkind = "test"\n[[agents]]\nid = "a1"\nkind = "echo"\n'
    )
    return path


def _start(config: Path, url: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        teamtree_cmd("agent", "--config", str(config), "--id", "a1", "--broker", url),
        stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip


async def test_a_frozen_members_will_comes_and_a_clean_stop_is_no_crash(
    broker, team, tmp_path: Path
) -> None:
    config = _config(tmp_path / "team.toml", team)
    log = tmp_path / "a1.log"
    observer = Agent("observer", team=team, endpoint=broker.endpoint)

    def presence() -> Presence | None:
        member = observer.team_view.get("a1")
        return None if member is None else member.presence

    async with observer:
        proc = _start(config, broker.endpoint.url, log)
        try:
            await eventually(lambda: presence() is Presence.ONLINE, 30, what="a1 ONLINE")
            proc.send_signal(signal.SIGSTOP)
            # keep-alive 1 s: mosquitto took 1.3-4.8 s, the embedded broker 2 s (keep-alive
            # + 1 s); 20 s only bounds the wait, the point is that the Will comes at all
            await eventually(
                lambda: presence() is Presence.CONNECTION_BROKEN, 20, what="a1's Last Will"
            )
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        proc = _start(config, broker.endpoint.url, log)
        try:
            await eventually(lambda: presence() is Presence.ONLINE, 30, what="a1 back ONLINE")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0, log.read_text()[-3000:]
            await eventually(lambda: presence() is Presence.OFFLINE, 10, what="a1 OFFLINE")
            await asyncio.sleep(3.0)  # a Will after the goodbye would land by now
            assert presence() is Presence.OFFLINE, "a clean stop looked like a crash"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


async def test_a_member_cut_off_just_before_it_stops_still_says_offline(
    broker, team, tmp_path: Path
) -> None:
    """The broker drops a starved member (its Will goes out) and the member, thawed,
    stops at once: its goodbye must still reach the broker after the Will, so the team
    sees it left rather than crashed (a compose run in CI once ended with the finished
    pr2 shown CONNECTION_BROKEN)."""
    config = _config(tmp_path / "team.toml", team)
    log = tmp_path / "a1.log"
    observer = Agent("observer", team=team, endpoint=broker.endpoint)

    def presence() -> Presence | None:
        member = observer.team_view.get("a1")
        return None if member is None else member.presence

    async with observer:
        proc = _start(config, broker.endpoint.url, log)
        try:
            await eventually(lambda: presence() is Presence.ONLINE, 30, what="a1 ONLINE")
            proc.send_signal(signal.SIGSTOP)
            await eventually(
                lambda: presence() is Presence.CONNECTION_BROKEN, 20, what="a1's Last Will"
            )
            proc.send_signal(signal.SIGTERM)  # pending until it runs again
            proc.send_signal(signal.SIGCONT)
            assert proc.wait(30) == 0, log.read_text()[-3000:]
            await eventually(
                lambda: presence() is Presence.OFFLINE, 10, what="a1 OFFLINE after its Will"
            )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
