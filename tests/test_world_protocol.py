"""The ZeroMQ protocol: codec, the world's dispatcher, and SimClient against a ROUTER."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest
import zmq
import zmq.asyncio

from teamtree.broker import DecodeError, LifecycleError, RequestTimeoutError, SchemaError
from teamtree.hardware import World
from teamtree.hardware import sim_protocol as proto
from teamtree.hardware import sim_wire as wire
from teamtree.hardware.sim_client import SimClient
from teamtree.hardware.sim_protocol import answer
from tests.test_world_model import APPLE, CUP, ROBOTS


def world() -> World:
    return World.from_spec({"cup": CUP, "apple": APPLE}, ROBOTS)


def test_codec_round_trip_and_rejections() -> None:
    request = wire.make_request("observe", 7, robot="pr2", since=3)
    assert proto.decode_request(proto.encode(request)) == request
    with pytest.raises(DecodeError):
        proto.decode_request(b"\xc1")
    with pytest.raises(DecodeError):
        proto.decode_request(msgpack.packb([1, 2]))
    with pytest.raises(SchemaError, match="version 99"):
        proto.decode_request(msgpack.packb({"v": 99, "op": "info", "rid": 1}))
    with pytest.raises(DecodeError):
        proto.decode_request(b"\x00" * (proto.MAX_MESSAGE + 1))
    with pytest.raises(SchemaError, match="fly"):
        wire.make_request("fly", 1)
    with pytest.raises(SchemaError, match="colour"):
        wire.make_request("observe", 1, robot="pr2", colour="red")


def ask(w: World, message: dict, t: float, **kwargs: Any) -> dict:
    """`message` (``v`` added) as bytes through the world's dispatcher."""
    return answer(w, msgpack.packb({"v": 1, **message}), t, **kwargs)


EXECUTE = {"op": "execute", "rid": 1, "robot": "pr2", "command_id": "c", "behaviour": "place"}


@pytest.mark.parametrize(
    ("message", "detail"),
    [
        ({"op": "fly", "rid": 1}, "op"),
        ({"op": "info", "rid": "x"}, "rid"),
        ({"op": "observe", "rid": 1}, "robot"),
        ({"op": "observe", "rid": 1, "robot": "pr2", "since": -1}, "since"),
        ({"op": "execute", "rid": 1, "robot": "pr2", "behaviour": "place"}, "command_id"),
        ({**EXECUTE, "params": [1]}, "params"),
        ({**EXECUTE, "node": 3}, "node"),
        ({"op": "move_object", "rid": 1, "object": "cup", "position": [0, 0]}, "position"),
        (
            {"op": "move_object", "rid": 1, "object": "cup", "position": [0, 0, 1], "yaw": "n"},
            "yaw",
        ),
        ({"op": "cancel", "rid": 1, "robot": "pr2", "command_id": 5}, "command_id"),
    ],
)
def test_serve_answers_bad_requests(message: dict, detail: str) -> None:
    reply = ask(world(), message, 0.0)
    assert reply["ok"] is False and reply["reason"] == "bad_request"
    assert detail in reply["detail"]
    rid = message["rid"]
    assert reply["rid"] == (rid if isinstance(rid, int) else None)  # an unreadable rid: nil


def test_serve_dispatches_to_the_world() -> None:
    w = world()
    info = ask(w, {"op": "info", "rid": 1}, 0.0, time_factor=5.0)
    assert info["ok"] and info["rid"] == 1 and info["time_factor"] == 5.0
    assert info["robots"]["baxter"]["profile"]["name"] == "baxter"
    execute = {"op": "execute", "rid": 2, "robot": "pr2", "command_id": "c1", "node": "n1",
               "behaviour": "PLACE", "params": {"object": "cup"}}  # fmt: skip
    assert ask(w, execute, 0.0)["status"] == "running"
    assert ask(w, {"op": "pause", "rid": 3, "robot": "pr2"}, 0.5)["status"] == "paused"
    assert ask(w, {"op": "resume", "rid": 4, "robot": "pr2", "command_id": "c1"}, 1.0)["ok"]
    obs = ask(w, {"op": "observe", "rid": 5, "robot": "pr2", "since": 0}, 1.0)
    assert [e["kind"] for e in obs["events"]] == ["started", "paused", "resumed"]
    assert obs["robot"]["busy"] == "c1" and obs["seq"] == 3
    assert ask(w, {"op": "cancel", "rid": 6, "robot": "pr2"}, 1.5)["status"] == "cancelled"
    moved = {"op": "move_object", "rid": 7, "object": "apple", "position": [0.4, 0.3, 0.79]}
    assert ask(w, moved, 2.0) == {"rid": 7, "ok": True, "reason": None}
    state = ask(w, {"op": "state", "rid": 8}, 2.0)
    assert state["objects"]["apple"]["position"] == [0.4, 0.3, 0.79]


@contextlib.asynccontextmanager
async def router(w: World | None) -> AsyncIterator[str]:
    """A ROUTER serving `w` (or never answering when None); yields its address."""
    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    clock = {"t": 0.0}

    async def loop() -> None:
        while True:
            frames = await sock.recv_multipart()
            if w is None:
                continue
            reply = answer(w, frames[-1], clock["t"])
            if reply.get("rid") == 99:  # a reply for nobody: the client drops it
                reply["rid"] = 12345
            await sock.send_multipart([*frames[:-1], proto.encode(reply)])

    task = asyncio.create_task(loop())
    try:
        yield f"tcp://127.0.0.1:{port}"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close(0)
        ctx.destroy(0)


async def test_client_round_trips() -> None:
    w = world()
    async with asyncio.timeout(10), router(w) as address, SimClient(address) as client:
        info = await client.info()
        assert set(info["robots"]) == {"pr2", "baxter"}
        started = await client.execute("pr2", "c1", "place", {"object": "cup"}, node="n1")
        assert started["ok"] and started["command_id"] == "c1"
        replies = await asyncio.gather(*(client.observe("pr2", 0) for _ in range(20)))
        assert all(r["robot"]["busy"] == "c1" for r in replies)  # many in flight, matched by rid
        assert (await client.pause("pr2", "c1"))["status"] == "paused"
        assert (await client.resume("pr2"))["status"] == "running"
        assert (await client.cancel("pr2", "c1"))["status"] == "cancelled"
        assert (await client.move_object("apple", (0.4, 0.3, 0.79)))["ok"]
        assert (await client.state())["objects"]["apple"]["position"] == [0.4, 0.3, 0.79]
        assert client.stats["timeouts"] == 0


async def test_client_times_out_and_drops_late_replies() -> None:
    async with asyncio.timeout(10):
        async with router(None) as address, SimClient(address, timeout=0.2) as client:
            with pytest.raises(RequestTimeoutError) as err:
                await client.observe("pr2")
            assert err.value.kind == "observe"
        # no world at all: the send cannot even go out, and still no await hangs
        async with SimClient("tcp://127.0.0.1:1", timeout=0.2) as client:
            with pytest.raises(RequestTimeoutError):
                await client.info()
        client2 = SimClient("tcp://127.0.0.1:1")
        with pytest.raises(LifecycleError):
            await client2.info()
        async with router(world()) as address, SimClient(address, timeout=0.3) as client:
            client._rids = iter([99, 100])  # type: ignore[assignment]
            with pytest.raises(RequestTimeoutError):
                await client.info()  # its reply carries a foreign rid
            assert (await client.info())["ok"]
            assert client.stats["stale"] == 1
        with pytest.raises(LifecycleError):
            client.connect()


async def test_client_drops_a_reply_that_is_not_its_ops_type() -> None:
    """A reply whose fields do not match its op's reply type is dropped and counted
    malformed (the call times out), as an undecodable one is."""
    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")

    async def broken_world() -> None:
        while True:
            frames = await sock.recv_multipart()
            rid = msgpack.unpackb(frames[-1])["rid"]
            reply = {"rid": rid, "ok": True, "reason": None, "t": 0.0, "robot": {},
                     "objects": {}, "events": [], "seq": "seven"}  # fmt: skip
            await sock.send_multipart([*frames[:-1], proto.encode(reply)])

    task = asyncio.create_task(broken_world())
    try:
        async with asyncio.timeout(10), SimClient(f"tcp://127.0.0.1:{port}", timeout=0.3) as c:
            with pytest.raises(RequestTimeoutError):
                await c.observe("pr2")
            assert c.stats["malformed"] == 1 and c.stats["replies"] == 0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close(0)
        ctx.destroy(0)
