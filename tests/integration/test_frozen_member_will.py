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
from tests.conftest import eventually, scaled, teamtree_cmd

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


class _Member:
    """a1 as its own process, and its presence as an observer in the test sees it."""

    def __init__(self, broker, team: str, tmp_path: Path) -> None:
        self.config = _config(tmp_path / "team.toml", team)
        self.log = tmp_path / "a1.log"
        self.url = broker.endpoint.url
        self.observer = Agent("observer", team=team, endpoint=broker.endpoint)
        self.proc: subprocess.Popen[bytes] | None = None

    def presence(self) -> Presence | None:
        member = self.observer.team_view.get("a1")
        return None if member is None else member.presence

    async def wait_for(self, state: Presence, timeout: float, what: str) -> None:
        """Until the observer sees a1 in `state` (``eventually``); failing, with a1's
        log."""
        try:
            await eventually(lambda: self.presence() is state, timeout, what=what)
        except pytest.fail.Exception as exc:
            pytest.fail(f"{exc}; a1 is {self.presence()}; its log:\n{self.log.read_text()[-4000:]}")

    async def exit_code(self) -> int:
        """a1's exit code, waited for off the loop (the observer keeps reading)."""
        assert self.proc is not None
        return await asyncio.to_thread(self.proc.wait, scaled(30))

    async def start(self) -> subprocess.Popen[bytes]:
        self.proc = _start(self.config, self.url, self.log)
        await self.wait_for(Presence.ONLINE, 30, "a1 ONLINE")
        return self.proc

    async def freeze_past_its_will(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        # keep-alive 1 s: mosquitto took 1.3-4.8 s, the embedded broker 2 s (keep-alive
        # + 1 s); 20 s only bounds the wait, the point is that the Will comes at all
        await self.wait_for(Presence.CONNECTION_BROKEN, 20, "a1's Last Will")

    def end(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # a stopped process dies of SIGKILL too
            self.proc.wait()


async def test_a_frozen_members_will_comes_and_a_clean_stop_is_no_crash(
    broker, team, tmp_path: Path
) -> None:
    a1 = _Member(broker, team, tmp_path)
    async with a1.observer:
        try:
            await a1.start()
            await a1.freeze_past_its_will()
        finally:
            a1.end()
        try:
            proc = await a1.start()
            proc.send_signal(signal.SIGTERM)
            assert await a1.exit_code() == 0, a1.log.read_text()[-3000:]
            await a1.wait_for(Presence.OFFLINE, 10, "a1 OFFLINE")
            await asyncio.sleep(scaled(3.0))  # a Will after the goodbye would land by now
            assert a1.presence() is Presence.OFFLINE, "a clean stop looked like a crash"
        finally:
            a1.end()


async def test_a_member_cut_off_just_before_it_stops_still_says_offline(
    broker, team, tmp_path: Path
) -> None:
    """The broker drops a starved member (its Will goes out) and the member, thawed,
    stops at once: its goodbye must still reach the broker after the Will, so the team
    sees it left rather than crashed (a compose run in CI once ended with the finished
    pr2 shown CONNECTION_BROKEN). Under load the freeze often lands while it says
    ONLINE: thawed, its connect hook fails, and the connection must reconnect to
    say goodbye rather than end."""
    a1 = _Member(broker, team, tmp_path)
    async with a1.observer:
        try:
            proc = await a1.start()
            await a1.freeze_past_its_will()
            proc.send_signal(signal.SIGTERM)  # pending until it runs again
            proc.send_signal(signal.SIGCONT)
            assert await a1.exit_code() == 0, a1.log.read_text()[-3000:]
            await a1.wait_for(Presence.OFFLINE, 10, "a1 OFFLINE after its Will")
        finally:
            a1.end()
