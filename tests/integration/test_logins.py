"""Every kind of login a deployment hands out, against mosquitto with the files
``teamtree acl`` writes (client ids bound to logins): what each may publish, that a
read-only login cannot evict a robot, and that dispatch names its broker user."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker import (
    Envelope,
    HlcStamp,
    MosquittoBroker,
    encode,
)
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import build
from tests.chaos.harness import party_config
from tests.conftest import REPO, AgentProcs, eventually, teamtree_cmd
from tests.logins_support import bound_broker, evicted

pytestmark = [pytest.mark.integration]

ACCESS = '\n[access]\noperators = ["ops"]\npersons = ["alice"]\n'


def login(out: Path, user: str) -> dict[str, str]:
    creds = agent_credentials(user, env={"TEAMTREE_CREDENTIALS_DIR": str(out / "credentials")})
    assert creds, f"no credentials written for {user}"
    return creds


def envelope(kind: str, sender: str, body: Any) -> bytes:
    now = wall_ms()
    return encode(Envelope(kind, sender, 1, now, HlcStamp(now, 0, sender), body, sid="t"))


class Watch:
    """A reader of the whole team (the `run` observer login)."""

    def __init__(self) -> None:
        self.topics: list[str] = []
        self.bodies: list[tuple[str, Any]] = []
        self.changed = asyncio.Event()

    async def run(self, broker: MosquittoBroker, team: str, creds: dict[str, str]) -> None:
        ep = broker.endpoint
        async with aiomqtt.Client(ep.host, ep.port, identifier="watch", **creds) as client:
            await client.subscribe(f"teamtree/v1/{team}/#", qos=1)
            self.ready.set()
            async for message in client.messages:
                self.topics.append(str(message.topic))
                with contextlib.suppress(Exception):
                    self.bodies.append((str(message.topic), json.loads(message.payload)))
                self.changed.set()

    async def start(self, broker: MosquittoBroker, team: str, creds: dict[str, str]) -> None:
        self.ready = asyncio.Event()
        self.task = asyncio.create_task(self.run(broker, team, creds))
        await asyncio.wait_for(self.ready.wait(), 10)

    async def until(self, topic: str, count: int = 1) -> None:
        while self.topics.count(topic) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 20)


async def publish_then_marker(
    broker: MosquittoBroker, creds: dict[str, str], topics: list[str], marker: str, watch: Watch
) -> None:
    """Publish on each of `topics`, then on `marker` (a topic the login may write),
    and wait for the marker: one connection keeps order, so anything of `topics` the
    broker let through has arrived by then."""
    ep = broker.endpoint
    user = creds["username"]
    async with aiomqtt.Client(ep.host, ep.port, identifier=user, **creds) as client:
        for topic in [*topics, marker]:
            await client.publish(topic, envelope("x.test", user, {"t": topic}), qos=1)
        await watch.until(marker)


SHARED = ("world", "missions", "ltl.disturb")
"""Team channels only operators may write (disturbances, dispatch)."""


async def test_each_login_kind_writes_only_what_its_role_may(tmp_path: Path, team: str) -> None:
    config = party_config(tmp_path / "party.toml", team)
    config.write_text(config.read_text() + ACCESS)
    out = tmp_path / "broker"
    async with bound_broker(config, out) as broker:
        watch = Watch()
        await watch.start(broker, team, login(out, "run"))
        try:
            cases = {  # login -> (forbidden team channels and others' topics, allowed)
                "pr2": ([*SHARED], ["claims", "sync"]),  # robot
                "pr2-driver": ([*SHARED], ["sync"]),  # driver
                "alice": ([*SHARED, "claims", "interest", "result", "mission"], ["sync"]),
                "ops": ([], [*SHARED, "sync"]),  # operator
            }
            for user, (denied, allowed) in cases.items():
                forbidden = [build(team, None, c) for c in denied]
                forbidden += [build(team, "baxter", "state"), build(team, "baxter", "connection")]
                permitted = [build(team, None, c) for c in allowed]
                permitted.append(build(team, user, "state"))
                marker = build(team, user, "heartbeat")
                seen = len(watch.topics)
                await publish_then_marker(
                    broker, login(out, user), forbidden + permitted, marker, watch
                )
                new = set(watch.topics[seen:])
                through = sorted(set(forbidden) & new)
                assert not through, f"{user}'s login published on {through}"
                missing = sorted(set(permitted) - new)
                assert not missing, f"{user}'s login could not publish on {missing}"
            # observers: nothing at all, not even their own id's presence
            ep = broker.endpoint
            creds = login(out, "monitor")
            async with aiomqtt.Client(ep.host, ep.port, identifier="m", **creds) as client:
                for channel in (*SHARED, "claims", "sync"):
                    await client.publish(build(team, None, channel), b"{}", qos=1)
                await client.publish(build(team, "monitor", "connection"), b"{}", qos=1)
            await publish_then_marker(
                broker, login(out, "ops"), [], build(team, "ops", "factsheet"), watch
            )
            assert not [t for t in watch.topics if "/monitor/" in t]
            assert len([t for t in watch.topics if t.endswith("/_/sync")]) == 4
        finally:
            watch.task.cancel()


async def test_the_monitor_login_cannot_evict_a_robot(tmp_path: Path, team: str) -> None:
    """The monitor's read-only login connects with pr2's client id: the broker takes
    its username as its client id instead, so pr2's session is never taken over and
    pr2 still publishes."""
    config = party_config(tmp_path / "party.toml", team)
    out = tmp_path / "broker"
    async with bound_broker(config, out) as broker:
        watch = Watch()
        await watch.start(broker, team, login(out, "run"))
        pr2 = Agent("pr2", team=team, endpoint=broker.endpoint,
                    runtime=RuntimeSettings(keepalive_s=2), **login(out, "pr2"))  # fmt: skip
        try:
            async with pr2:
                await pr2.wait_connected(10)
                ep = broker.endpoint
                for n in range(1, 4):
                    async with aiomqtt.Client(
                        ep.host, ep.port, identifier=f"teamtree-{team}-pr2",
                        **login(out, "monitor"),
                    ):  # fmt: skip
                        await pr2.publish("probe", "x.alive", {"n": n})
                        await watch.until(build(team, "pr2", "probe"), n)
                await pr2.publish("state", "x.alive", {"n": 2})
                await watch.until(build(team, "pr2", "state"))
                # an eviction is the broker closing pr2's session for another
                # connection with its client id, read from the broker's log; a
                # stall of a busy machine may also make pr2 reconnect (keepalive),
                # which is no eviction
                presence = [
                    b.get("body", {}).get("state")
                    for t, b in watch.bodies
                    if t == build(team, "pr2", "connection") and isinstance(b, dict)
                ]
                takeovers = evicted(broker, "pr2", f"teamtree-{team}-pr2")
                assert takeovers == 0, (takeovers, pr2.connection.connects, presence)
        finally:
            watch.task.cancel()


async def test_the_world_moves_objects_only_for_operators(
    tmp_path: Path, team: str, mosquitto
) -> None:
    """Without access control the world can only go by the name a sender claims: with
    an [access] table it refuses a non-operator's move_object (warning naming it) and
    stays up; an operator's is done."""
    config = party_config(tmp_path / "party.toml", team)
    config.write_text(config.read_text() + ACCESS)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    procs.start("world")
    body = {"object": "cup", "position": [0.1, 0.2, 0.8]}
    try:
        for who, ok in (("alice", False), ("pr2", False), ("ops", True)):
            client = Agent(who, team=team, endpoint=mosquitto.endpoint,
                           runtime=RuntimeSettings(request_timeout_s=10))  # fmt: skip
            async with client:
                await client.wait_connected(10)
                await eventually(lambda c=client: c.team_view.online("world"), 60, what="world")
                reply = await client.request("world", "world.move_object", body, to="world")
            assert reply.body["ok"] is ok, reply.body
            if not ok:
                assert reply.body["reason"] == "not_operator", reply.body
        log = procs.log("world")
        assert "world.disturbance_refused" in log and '"by": "alice"' in log, log[-2000:]
        assert procs.procs["world"].poll() is None
    finally:
        procs.stop_all()


def _queue_config(tmp_path: Path) -> Path:
    text = (REPO / "configs" / "tea_party_queue.toml").read_text()
    path = tmp_path / "queue.toml"
    path.write_text(text + ACCESS)
    return path


def _dispatch(tmp_path: Path, url: str, *args: str, user: str | None = None):
    flags = ["--username", user] if user else []
    return subprocess.run(
        teamtree_cmd(*args, "--broker", url, "--team", "tea-party-queue", "--timeout", "20",
                     *flags),
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=dict(os.environ, TEAMTREE_CREDENTIALS_DIR=str(tmp_path / "broker" / "credentials")),
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_dispatch_logs_in_and_records_the_broker_user(tmp_path: Path) -> None:
    """submit/missions/cancel against an access-controlled broker: with credentials
    they work; a person may list but not cancel; the operator's cancel and submission
    are recorded with its broker user; without credentials they say what is missing."""
    config = _queue_config(tmp_path)
    out = tmp_path / "broker"
    async with bound_broker(config, out) as broker:
        url = broker.endpoint.url
        env = dict(os.environ, TEAMTREE_CREDENTIALS_DIR=str(out / "credentials"))
        log = (tmp_path / "team.log").open("w")
        team = subprocess.Popen(
            teamtree_cmd("run", str(config), "--broker", url), stdout=log,
            stderr=subprocess.STDOUT, cwd=tmp_path, env=env,
        )  # fmt: skip
        try:
            mission = tmp_path / "m.toml"
            mission.write_text(
                '[mission]\nkind = "tasktree"\ntimeout_s = 150\n'
                'tree = "THEN(cup, sugar, tea_pot, sandwich, burger)"\n'
            )
            done = _dispatch(tmp_path, url, "submit", str(mission), user="ops")
            assert done.returncode == 0, done.stderr + (tmp_path / "team.log").read_text()
            first = done.stdout.strip()
            # the mission to cancel cannot end before its cancel, however slow the
            # machine: the PR2 alone, and it cannot grasp the orange
            endless = tmp_path / "endless.toml"
            endless.write_text(
                '[mission]\nkind = "tasktree"\ntimeout_s = 150\nmembers = ["pr2"]\n'
                'tree = "THEN(tea_pot, sugar, orange)"\n'
            )
            done = _dispatch(tmp_path, url, "submit", str(endless), user="ops")
            assert done.returncode == 0, done.stderr
            second = done.stdout.strip()
            refused = _dispatch(tmp_path, url, "cancel", second, user="alice")
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert "only operators" in refused.stderr, refused.stderr
            refused = _dispatch(tmp_path, url, "submit", str(mission), user="alice")
            assert refused.returncode == 2, refused.stdout + refused.stderr
            done = _dispatch(tmp_path, url, "cancel", second, user="ops")
            assert done.returncode == 0, done.stderr
            listed = _dispatch(tmp_path, url, "missions", "--json", user="alice")
            assert listed.returncode == 0, listed.stderr
            rows = {r["id"]: r for r in json.loads(listed.stdout)}
            assert rows[first]["submitted_by"] == "ops", rows
            assert rows[second]["cancelled_by"] == "ops", rows
            assert rows[second]["state"] == "cancelled", rows
            assert "cancelled by ops" in rows[second]["reason"], rows
            anonymous = subprocess.run(
                teamtree_cmd("missions", "--broker", url, "--team", "tea-party-queue",
                             "--timeout", "5"),
                capture_output=True, text=True, timeout=60, cwd=tmp_path,
            )  # fmt: skip
            assert anonymous.returncode == 1
            assert "--username" in anonymous.stderr, anonymous.stderr
            deadline = asyncio.get_running_loop().time() + 400
            while asyncio.get_running_loop().time() < deadline:
                listed = _dispatch(tmp_path, url, "missions", "--json", user="ops")
                row = {r["id"]: r for r in json.loads(listed.stdout or "[]")}.get(first, {})
                if row.get("state") in ("done", "failed", "cancelled"):
                    break
                await asyncio.sleep(2.0)
            assert row.get("state") == "done", (row, (tmp_path / "team.log").read_text()[-3000:])
        finally:
            team.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                team.wait(30)
            if team.poll() is None:
                team.kill()
