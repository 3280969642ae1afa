"""An asyncio client of the simulated world's ZeroMQ protocol (``sim_protocol``).

``async with SimClient("tcp://127.0.0.1:5555") as world:`` connects a DEALER; every
call sends one request and waits for its reply, at most ``timeout`` seconds, then
raises RequestTimeoutError. Replies arrive in any order and are matched by ``rid``;
a reply that comes after its deadline is dropped. Requests are built as their Structs
(``sim_wire``); each reply is checked against the reply type of its op, and one that
does not match is dropped and logged with the field named (the call then times out).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
import zmq
import zmq.asyncio

from teamtree.broker import LifecycleError, RequestTimeoutError, WireError
from teamtree.hardware import sim_wire as wire

log = structlog.get_logger("teamtree.sim_client")


class SimClient:
    """Request/reply over a DEALER socket to the world's ROUTER (see module docstring)."""

    def __init__(
        self,
        address: str,
        *,
        timeout: float = 1.0,
        context: zmq.asyncio.Context | None = None,
    ):
        self.address = address
        self.timeout = timeout
        self._context = context or zmq.asyncio.Context.instance()
        self._socket: zmq.asyncio.Socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._rids = itertools.count(1)
        self._closed = False
        self.stats = {"sent": 0, "replies": 0, "timeouts": 0, "stale": 0, "malformed": 0}

    async def __aenter__(self) -> SimClient:
        self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def connect(self) -> None:
        """Connect the DEALER (ZeroMQ connects in the background and reconnects by itself).
        Raises LifecycleError when already connected or closed."""
        if self._socket is not None or self._closed:
            raise LifecycleError(f"SimClient for {self.address} is already connected or closed")
        sock = self._context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # do not queue for peers not yet connected
        sock.setsockopt(zmq.SNDHWM, 1000)
        sock.connect(self.address)
        self._socket = sock
        self._reader = asyncio.create_task(self._read(), name=f"sim_client[{self.address}].read")

    async def close(self) -> None:
        """Close the socket; pending requests fail with LifecycleError."""
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        for _, future in self._pending.values():
            if not future.done():
                future.set_exception(LifecycleError(f"SimClient for {self.address} closed"))
                future.exception()  # retrieved: a caller still sending never awaits it
        self._pending.clear()
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    async def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict:
        """Send `op` with `fields`; return the reply map (``ok`` may be false: the world
        answered no). Raises RequestTimeoutError after `timeout` s (default the client's),
        LifecycleError when not connected and SchemaError for an unknown op or field."""
        sock = self._socket
        if sock is None:
            raise LifecycleError(f"SimClient for {self.address} is not connected")
        timeout = self.timeout if timeout is None else timeout
        rid = next(self._rids)
        payload = wire.encode(wire.make_request(op, rid, **fields))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (op, future)
        try:
            async with asyncio.timeout(timeout):
                await sock.send(payload)
                self.stats["sent"] += 1
                return await future
        except TimeoutError:
            self.stats["timeouts"] += 1
            raise RequestTimeoutError(
                f"no reply to {op!r} from the world at {self.address} within {timeout} s",
                kind=op,
                correlation=str(rid),
            ) from None
        except asyncio.CancelledError:
            # close() while the send waited for a world (IMMEDIATE: none connected)
            # cancels the send, not the caller: say so, or the caller's loop would end
            task = asyncio.current_task()
            if self._closed and (task is None or not task.cancelling()):
                raise LifecycleError(f"SimClient for {self.address} closed") from None
            raise
        finally:
            self._pending.pop(rid, None)

    async def _read(self) -> None:
        assert self._socket is not None
        while True:
            frames = await self._socket.recv_multipart()
            try:
                reply = wire.decode_reply(frames[-1])
                pending = self._pending.get(reply["rid"])
                if pending is not None:
                    wire.check_reply(pending[0], reply)
            except WireError as exc:
                self.stats["malformed"] += 1
                log.warning("sim_client.malformed", address=self.address, reason=exc.reason)
                continue
            future = None if pending is None else pending[1]
            if future is None or future.done():
                self.stats["stale"] += 1
                continue
            self.stats["replies"] += 1
            future.set_result(reply)

    # -- the operations ------------------------------------------------------------

    async def info(self) -> dict[str, Any]:
        """Robots (with profiles and start poses), object names, time factor."""
        return await self.request("info")

    async def observe(
        self, robot: str, since: int = 0, objects_since: int | None = None
    ) -> dict[str, Any]:
        """What `robot` sees now, with its events after sequence number `since`; with
        `objects_since`, only the objects changed after that ``objects_version``."""
        if objects_since is None:
            return await self.request("observe", robot=robot, since=since)
        return await self.request("observe", robot=robot, since=since, objects_since=objects_since)

    async def execute(
        self,
        robot: str,
        command_id: str,
        behaviour: str,
        params: Mapping[str, Any] | None = None,
        node: str | None = None,
        lease_ms: int | None = None,
        token: Any = None,
        sent_ms: int | None = None,
        clock: str | None = None,
    ) -> dict[str, Any]:
        """Start `behaviour` (``"place"``) on `robot`; idempotent per `command_id`.
        With `lease_ms` the body stops by then unless renewed: UTC ms, or with
        `sent_ms` and `clock` ms on the sender's clock `clock` (see ``sim_protocol``).
        `token` is the sender's fencing token, kept for the record."""
        lease = (
            {}
            if lease_ms is None
            else {"lease_ms": lease_ms, "token": token, **_sent(sent_ms, clock)}
        )
        return await self.request(
            "execute",
            robot=robot,
            command_id=command_id,
            node=node,
            behaviour=behaviour,
            params=dict(params or {}),
            **lease,
        )

    async def renew(
        self,
        robot: str,
        command_id: str,
        lease_ms: int,
        token: Any = None,
        sent_ms: int | None = None,
        clock: str | None = None,
    ) -> dict[str, Any]:
        """Move the lease of `command_id` on to `lease_ms` (as for ``execute``)."""
        return await self.request(
            "renew",
            robot=robot,
            command_id=command_id,
            lease_ms=lease_ms,
            token=token,
            **_sent(sent_ms, clock),
        )

    async def cancel(self, robot: str, command_id: str | None = None) -> dict[str, Any]:
        """Cancel `command_id` (None: whatever `robot` runs)."""
        return await self.request("cancel", robot=robot, command_id=command_id)

    async def pause(self, robot: str, command_id: str | None = None) -> dict[str, Any]:
        return await self.request("pause", robot=robot, command_id=command_id)

    async def resume(self, robot: str, command_id: str | None = None) -> dict[str, Any]:
        return await self.request("resume", robot=robot, command_id=command_id)

    async def move_object(
        self, name: str, position: Sequence[float], yaw: float | None = None
    ) -> dict[str, Any]:
        """Put an object somewhere by hand (refused while a robot holds it)."""
        return await self.request(
            "move_object", object=name, position=[float(p) for p in position], yaw=yaw
        )

    async def state(self) -> dict[str, Any]:
        """The whole world (the ``world.state`` body)."""
        return await self.request("state")


def _sent(sent_ms: int | None, clock: str | None) -> dict[str, Any]:
    """The lease's clock fields, only when given (a world that predates them refuses
    fields it does not know)."""
    return {} if sent_ms is None else {"sent_ms": sent_ms, "clock": clock}
