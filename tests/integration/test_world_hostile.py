"""The world process (``teamtree agent``) against hostile ZeroMQ requests: garbage
bytes, non-maps, wrong types, an unknown op and deep nesting each get a
``bad_request`` reply naming what is wrong, and the world goes on serving."""

from __future__ import annotations

import asyncio

import msgpack
import pytest
import zmq
import zmq.asyncio

from teamtree.agents import Agent, RuntimeSettings
from teamtree.hardware import sim_wire as wire
from teamtree.hardware.sim_client import SimClient
from tests.conftest import AgentProcs, eventually, scaled, write_config

pytestmark = pytest.mark.integration

AGENTS = """
[[agents]]
id = "world"
kind = "world"
role = "service"

[agents.objects.cup]
shape = "cylinder"
dims = [0.04, 0.10]
position = [0.10, -0.05, 0.80]
goal = [-0.05, 0.05, 0.80]

[agents.robots.pr2]
profile = "pr2"
base = [-0.75, 0.0, 0.0]
"""

_NESTED = msgpack.packb("NESTED")
HOSTILE = [
    (b"\xc1\xc1", None, "not msgpack"),
    (msgpack.packb([1, 2, 3]), None, "not a msgpack map"),
    (msgpack.packb({"v": 1, "op": "fly", "rid": 1}), 1, "'op' must be one of"),
    (msgpack.packb({"v": 1, "op": "observe", "rid": 2, "robot": 7}), 2, "$.robot"),
    (msgpack.packb({"v": 1, "op": "observe", "rid": True, "robot": "pr2"}), None, "$.rid"),
    (msgpack.packb({"v": 2, "op": "info", "rid": 3}), 3, "protocol version 2"),
    (msgpack.packb({"v": 1, "op": "execute", "rid": 4, "robot": "pr2", "command_id": "c",
                    "behaviour": "place", "params": {"object": [1, 2]}}), 4, None),
    (msgpack.packb({"v": 1, "op": "execute", "rid": 5, "robot": "pr2", "command_id": "c",
                    "behaviour": "place", "params": {"object": "NESTED"}}).replace(
        _NESTED, b"\x91" * 50_000 + b"\x00"), None, "recursion"),
]  # fmt: skip


async def test_the_world_answers_hostile_requests_and_keeps_serving(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    config = write_config(tmp_path / "team.toml", team, AGENTS)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    procs.start("world")
    watcher = Agent("watcher", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings())
    async with asyncio.timeout(scaled(30)), watcher:
        world = await eventually(lambda: watcher.team_view.get("world"), 15, what="world")
        address = await eventually(lambda: world.factsheet.get("zmq"), 15, what="zmq address")
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(address)
        try:
            for raw, rid, detail in HOSTILE:
                await sock.send(raw)
                reply = msgpack.unpackb(await sock.recv())
                assert reply["v"] == 1 and reply["ok"] is False, reply
                assert reply["rid"] == rid, (raw[:40], reply)
                if detail is None:  # read, and refused by the world itself
                    assert reply["reason"] == "unknown_object", reply
                else:
                    assert reply["reason"] == "bad_request", reply
                    assert detail in reply["detail"], reply
        finally:
            sock.close(0)
            ctx.destroy(0)
        async with SimClient(address, timeout=scaled(5.0)) as client:  # still serving
            observed = await client.observe("pr2")
            assert observed["ok"] and set(observed["objects"]) == {"cup"}
            wire.check_reply("observe", observed)
            assert client.stats["malformed"] == 0
