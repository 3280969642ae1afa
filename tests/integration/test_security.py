"""Access control at the broker: per-agent users and ACLs from ``teamtree acl``, against
a real mosquitto. A forged message never arrives; anonymous and wrong-password clients
cannot connect; TLS listeners work with the generated settings."""

from __future__ import annotations

import asyncio
import base64
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import aiomqtt
import pytest

from teamtree.agents import Agent
from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.runtime.config import load_config
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker import (
    MosquittoBroker,
    MosquittoSettings,
    find_mosquitto,
    free_port,
    parse_endpoint,
    render_mosquitto_conf,
    wait_for_port,
)
from teamtree.broker.acl import password_hash, team_users, verify_password, write_broker_files
from teamtree.broker.connection import Outgoing
from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import HybridLogicalClock, wall_ms
from teamtree.broker.tls import TlsSettings, client_context, render_tls_listener
from tests.conftest import AgentProcs, eventually, scaled, write_config
from tests.ops_support import agent_cmd, ops_cmd

pytestmark = pytest.mark.integration

AGENTS = """
[[agents]]
id = "pr2"
kind = "echo"
role = "service"

[[agents]]
id = "baxter"
kind = "echo"
role = "service"
"""


@pytest.fixture
async def secured(tmp_path: Path, team: str):
    """mosquitto with the files `teamtree acl` writes for a two-agent team."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    config = write_config(tmp_path / "team.toml", team, AGENTS)
    out = subprocess.run(
        ops_cmd("acl", str(config), "-o", str(tmp_path / "broker")),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "pr2 (generated)" in out.stdout and "monitor (generated)" in out.stdout
    files = tmp_path / "broker"
    broker = MosquittoBroker(
        settings=MosquittoSettings(
            allow_anonymous=False, password_file=files / "passwd", acl_file=files / "acl"
        )
    )
    await broker.start()
    try:
        yield broker, config, files
    finally:
        await broker.close()


def creds(files: Path, user: str) -> dict[str, str]:
    return agent_credentials(user, env={"TEAMTREE_CREDENTIALS_DIR": str(files / "credentials")})


def forged(sender: str, kind: str, body: object) -> bytes:
    clock = HybridLogicalClock(sender)
    return encode(
        Envelope(kind=kind, sender=sender, hid=1, ts=wall_ms(), hlc=clock.now(), body=body)
    )


async def test_an_agent_cannot_publish_another_agents_state(secured, team) -> None:
    broker, _, files = secured
    seen: list[tuple[str, object]] = []
    observer = TeamObserver(
        broker.endpoint, team, on_message=lambda e, t, m: seen.append((str(t), e.body)),
        **creds(files, "monitor"),
    )  # fmt: skip
    pr2 = Agent("pr2", team=team, endpoint=broker.endpoint, **creds(files, "pr2"))
    async with asyncio.timeout(scaled(30)), observer, pr2:
        await observer.wait_connected()
        await pr2.wait_connected(10)
        base = f"teamtree/v1/{team}"
        # a forged envelope that would pass every receiver's sender check
        await pr2.connection.publish(
            Outgoing(f"{base}/baxter/state", forged("baxter", "node.transition", "forged"))
        )
        await pr2.connection.publish(
            Outgoing(
                f"{base}/baxter/connection", forged("baxter", "presence", "forged"), retain=True
            )
        )
        await pr2.publish("state", "node.transition", "own")
        await pr2.publish("claims", "node.claim", "team", team=True)
        await eventually(
            lambda: (f"{base}/_/claims", "team") in seen, 10, what="pr2's team message"
        )
        await asyncio.sleep(0.5)  # anything forged would have arrived by now
    assert (f"{base}/pr2/state", "own") in seen
    assert not [s for s in seen if s[1] == "forged"], seen


async def test_an_observer_can_read_but_not_write(secured, team) -> None:
    broker, _, files = secured
    seen: list[str] = []
    watcher = TeamObserver(broker.endpoint, team, on_message=lambda e, t, m: seen.append(e.kind),
                           **creds(files, "pr2"))  # fmt: skip
    monitor_creds = creds(files, "monitor")
    async with asyncio.timeout(scaled(30)), watcher:
        await watcher.wait_connected()
        async with aiomqtt.Client(
            broker.endpoint.host, broker.endpoint.port, **monitor_creds
        ) as client:
            await client.publish(
                f"teamtree/v1/{team}/_/claims", forged("monitor", "node.claim", 1), qos=1
            )
            await client.subscribe("$SYS/broker/version")
            async with asyncio.timeout(scaled(5)):
                message = await anext(aiter(client.messages))
            assert message.payload.startswith(b"mosquitto")
        await asyncio.sleep(0.5)
    assert "node.claim" not in seen


async def test_unauthenticated_and_wrong_password_clients_cannot_connect(secured) -> None:
    broker, _, files = secured
    host, port = broker.endpoint.host, broker.endpoint.port
    for kwargs in ({}, {"username": "pr2", "password": "wrong"}, {"username": "nobody"}):
        with pytest.raises(aiomqtt.MqttError, match=r"[Nn]ot authori[sz]ed|[Bb]ad user"):
            async with aiomqtt.Client(host, port, **kwargs):
                pass
    async with aiomqtt.Client(host, port, **creds(files, "pr2")):
        pass  # the right password works


async def test_agent_processes_authenticate_from_their_credentials(
    secured, team, tmp_path, agent_procs
) -> None:
    """`teamtree agent` with TEAMTREE_CREDENTIALS_DIR comes ONLINE; without it, it never
    gets in."""
    broker, config, files = secured
    observer = TeamObserver(broker.endpoint, team, **creds(files, "monitor"))
    env_dir = {"TEAMTREE_CREDENTIALS_DIR": str(files / "credentials")}
    good = subprocess.Popen(
        agent_cmd("--config", str(config), "--id", "pr2", "--broker", broker.endpoint.url),
        env={**os.environ, **env_dir}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    procs = AgentProcs(config, broker.endpoint.url, team, tmp_path)
    agent_procs.append(procs)
    bad = procs.start("baxter")  # no credentials
    try:
        async with asyncio.timeout(scaled(30)), observer:
            await observer.wait_connected()
            await eventually(lambda: "pr2" in observer.state.snapshot()["online"], 15, what="pr2")
            await asyncio.sleep(1.0)
            assert "baxter" not in observer.state.snapshot()["agents"]
            assert bad.poll() is None  # still retrying, not crashed
    finally:
        good.terminate()
        good.wait(10)


def test_password_hash_matches_mosquitto_passwd(tmp_path: Path) -> None:
    tool = shutil.which("mosquitto_passwd")
    if tool is None:
        pytest.skip("mosquitto_passwd is not installed")
    path = tmp_path / "pw"
    subprocess.run([tool, "-b", "-c", str(path), "alice", "s3cret"], check=True, timeout=30)
    hashed = path.read_text().strip().split(":", 1)[1]
    assert verify_password("s3cret", hashed) and not verify_password("other", hashed)
    salt = base64.b64decode(hashed.split("$")[3])
    assert password_hash("s3cret", salt=salt) == hashed


@pytest.mark.parametrize("hasher", ["python", "mosquitto_passwd"])
async def test_both_hashers_are_accepted_by_mosquitto(hasher, tmp_path, team) -> None:
    if find_mosquitto() is None or (
        hasher == "mosquitto_passwd" and shutil.which("mosquitto_passwd") is None
    ):
        pytest.skip(f"{hasher} / mosquitto not installed")
    users = team_users(team, ["pr2"], env={"TEAMTREE_PASSWORD_PR2": "from-env"})
    assert users[0].source == "env" and users[1].username == "monitor"
    files = write_broker_files(users, tmp_path / "b", hasher=hasher)
    settings = MosquittoSettings(
        allow_anonymous=False, password_file=files.password_file, acl_file=files.acl_file
    )
    async with (
        MosquittoBroker(settings=settings) as broker,
        aiomqtt.Client(
            broker.endpoint.host, broker.endpoint.port, username="pr2", password="from-env"
        ),
    ):
        pass
    again = team_users(team, ["pr2"], env={}, credentials_dir=files.credentials_dir)
    assert again[0].password == "from-env" and again[0].source == "file"  # kept


def test_acl_text_and_generated_conf(tmp_path: Path, team: str) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS)
    out = subprocess.run(
        ops_cmd("acl", str(config), "-o", str(tmp_path / "b"), "--conf", "--websockets-port",
                "9001", "--persistence-dir", "/mosquitto/data", "--config-dir",
                "/mosquitto/config", "--observer", "monitor", "--observer", "dashboard"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    acl = (tmp_path / "b" / "acl").read_text()
    assert f"user pr2\ntopic write teamtree/v1/{team}/pr2/#\n" in acl
    assert f"topic write teamtree/v1/{team}/_/claims/#\n" in acl  # a robot's team channel
    assert f"topic write teamtree/v1/{team}/_/world/#" not in acl  # operators' only
    assert f"topic write teamtree/v1/{team}/_/#" not in acl
    assert "use_username_as_clientid true" in (tmp_path / "b" / "mosquitto.conf").read_text()
    assert f"user dashboard\ntopic read teamtree/v1/{team}/#\ntopic read $SYS/#" in acl
    conf = (tmp_path / "b" / "mosquitto.conf").read_text()
    for line in (
        "allow_anonymous false", "listener 1883 0.0.0.0", "listener 9001 0.0.0.0",
        "protocol websockets", "persistence true", "persistence_location /mosquitto/data/",
        "password_file /mosquitto/config/passwd", "acl_file /mosquitto/config/acl",
    ):  # fmt: skip
        assert line in conf
    mode = (tmp_path / "b" / "credentials" / "pr2").stat().st_mode & 0o777
    assert mode == 0o600
    assert load_config(config).team == team


async def test_tls_listener_with_a_private_ca(tmp_path: Path, team: str) -> None:
    """A TLS listener from ``render_tls_listener``; a client with the CA from
    ``TEAMTREE_TLS_CA`` connects over mqtts:// with its password; one without it fails."""
    if find_mosquitto() is None or shutil.which("openssl") is None:
        pytest.skip("mosquitto and openssl are needed")

    def ssl_cmd(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    ca_key, ca, key, csr, cert = (
        tmp_path / n for n in ("ca.key", "ca.crt", "s.key", "s.csr", "s.crt")
    )
    ssl_cmd("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=teamtree-test-ca",
            "-keyout", str(ca_key), "-out", str(ca))  # fmt: skip
    ssl_cmd("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", str(key),
            "-out", str(csr))  # fmt: skip
    ext = tmp_path / "ext.cnf"
    ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    ssl_cmd("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-days", "1", "-out", str(cert), "-extfile", str(ext))  # fmt: skip
    users = team_users(team, ["pr2"], env={})
    files = write_broker_files(users, tmp_path / "b", hasher="python")
    tls_port = free_port()
    settings = MosquittoSettings(
        port=free_port(),
        allow_anonymous=False,
        password_file=files.password_file,
        acl_file=files.acl_file,
    )
    conf = tmp_path / "b" / "mosquitto.conf"
    conf.write_text(
        render_mosquitto_conf(settings)
        + render_tls_listener(tls_port, ca=ca, cert=cert, key=key, bind="127.0.0.1")
        + (f"user {pwd.getpwuid(os.geteuid()).pw_name}\n" if os.geteuid() == 0 else "")
    )
    proc = subprocess.Popen([find_mosquitto(), "-c", str(conf)], stderr=subprocess.PIPE)
    try:
        await wait_for_port("127.0.0.1", tls_port)
        tls = TlsSettings.from_env({"TEAMTREE_TLS_CA": str(ca)})
        assert tls is not None and tls.ca == ca
        endpoint = parse_endpoint(f"mqtts://127.0.0.1:{tls_port}")
        observer = TeamObserver(
            endpoint, team, username="pr2", password=users[0].password,
            tls_context=client_context(tls),
        )  # fmt: skip
        async with asyncio.timeout(scaled(20)), observer:
            await observer.wait_connected(10)
        untrusted = client_context(TlsSettings())  # system CAs do not know the test CA
        with pytest.raises(aiomqtt.MqttError):
            async with aiomqtt.Client(
                "127.0.0.1", tls_port, username="pr2", password=users[0].password,
                tls_context=untrusted,
            ):  # fmt: skip
                pass
    finally:
        proc.terminate()
        proc.wait(10)
