"""A world that goes away while a driver's request waits to be sent (issue 14, the
world-restart stall): closing the SimClient must fail that request with
LifecycleError. It used to surface as CancelledError in the caller, which ended the
sim driver's command loop for good: every later command (execute, renew, cancel) was
queued and never carried out, and the team stalled with no error."""

from __future__ import annotations

import asyncio
import socket

import pytest

from teamtree.broker import LifecycleError
from teamtree.hardware.sim_client import SimClient


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_close_fails_a_request_still_waiting_to_be_sent() -> None:
    client = SimClient(f"tcp://127.0.0.1:{_free_port()}", timeout=5.0)  # no world there
    client.connect()
    call = asyncio.create_task(client.info())
    await asyncio.sleep(0.2)
    await client.close()
    with pytest.raises(LifecycleError):
        await call
    assert not call.cancelled()


async def test_cancelling_the_caller_still_cancels() -> None:
    async with SimClient(f"tcp://127.0.0.1:{_free_port()}", timeout=5.0) as client:
        call = asyncio.create_task(client.info())
        await asyncio.sleep(0.2)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
