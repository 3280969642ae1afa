"""Keepalive enforcement for the embedded broker (amqtt).

MQTT 3.1.1 (§3.1.2.10) has the server disconnect a client it has not heard from for
1.5 x its keep-alive, and publish the client's Will. amqtt 0.12's broker reads each
client with its keep-alive as the read timeout but then does nothing
(``BrokerProtocolHandler.handle_read_timeout`` is empty): a frozen client stays
connected, its Will never comes, and on ``teamtree run``'s embedded broker a frozen
robot was never taken over (measured with ``benchmarks/bench_detection.py``: no Will
within 20 s at keep-alive 1 s and 2 s, until the process was killed).

``enforce_keepalive`` makes a read timeout close the session as an abnormal disconnect,
so amqtt publishes the Will. amqtt adds its ``timeout-disconnect-delay`` (whole seconds,
one value for every client) to each client's keep-alive before using it as the read
timeout; ``GRACE_S`` is that delay, so a silent client is disconnected after
keep-alive + 1 s: 2 x keep-alive at 1 s, 1.5 x at 2 s, less above. A client that keeps
its keep-alive (paho pings within it) is never cut.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["GRACE_S", "enforce_keepalive"]

GRACE_S = 1
"""amqtt's ``timeout-disconnect-delay``: seconds past a client's keep-alive."""

_tasks: set[asyncio.Task[Any]] = set()


def _disconnect_silent_client(handler: Any) -> None:
    """The read timed out: end the session as if the connection dropped (the Will)."""
    task = asyncio.ensure_future(handler.handle_connection_closed())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def enforce_keepalive() -> None:
    """Patch amqtt's broker handler (once per process) to disconnect silent clients."""
    from amqtt.mqtt.protocol.broker_handler import BrokerProtocolHandler

    if getattr(BrokerProtocolHandler, "_teamtree_keepalive", False):
        return
    BrokerProtocolHandler.handle_read_timeout = _disconnect_silent_client  # type: ignore[method-assign]
    BrokerProtocolHandler._teamtree_keepalive = True  # type: ignore[attr-defined]
