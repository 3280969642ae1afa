"""aiomqtt's client with constant-time bookkeeping of pending publishes and fewer
event-loop turns per packet sent.

aiomqtt 2.5 checks every new QoS 1 publish against all pending calls by walking them
(``mid in self._pending_calls``, a generator over three dicts) and then counts them by
building a list: two linear scans per publish, so a burst of n pipelined publishes
costs O(n^2) (at 10,000 queued publishes most of the time goes there; see
benchmarks/bench_publish.py). ``FastClient`` keeps the same contract (one pending
entry per message id, removed when acknowledged or abandoned) with dict look-ups.

For every packet paho queues (a publish, and the PUBACK of every QoS 1 message
received) aiomqtt asks the loop, thread-safely, to watch the socket for writability,
and writes once it is: a wake-up through the loop's self-pipe, an ``add_writer`` and a
``remove_writer`` (system calls) and two loop turns per packet. On a process that
runs many agents (issue 19: 16 robots and 16 drivers per process at 32 robots) each
loop turn can take milliseconds, and every claim's reply paid them. When paho asks
from the loop's own thread, ``FastClient`` writes on the next loop turn instead
(``call_soon``), and watches the socket only if the kernel took part of it (a full
send buffer). From another thread (paho's connect runs in an executor) it does as
aiomqtt does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

import aiomqtt

__all__ = ["FastClient"]

T = TypeVar("T")


class FastClient(aiomqtt.Client):
    """``aiomqtt.Client`` whose ``_pending_call`` does not scan the pending calls (its
    "many pending publishes" warning is left out: the connection logs its own state)
    and whose writes wait one loop turn, not a wake-up and two turns (module doc)."""

    def _on_socket_register_write(self, client: Any, userdata: Any, sock: Any) -> None:
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if not on_loop:
            super()._on_socket_register_write(client, userdata, sock)
            return

        def write_now() -> None:
            # paho still counts a write as registered: until loop_write has sent all,
            # packets queued meanwhile ask for nothing more, and this sends them too
            try:
                client.loop_write()
            except Exception as exc:  # as aiomqtt: a broken connection ends the session
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)
                return
            if client.want_write() and client.socket() is not None:
                # the kernel took part: let the loop write the rest once it can
                self._loop.add_writer(client.socket().fileno(), self._write_rest, client)

        self._loop.call_soon(write_now)

    def _write_rest(self, client: Any) -> None:
        try:
            client.loop_write()
        except Exception as exc:
            if not self._disconnected.done():
                self._disconnected.set_exception(exc)

    @contextlib.contextmanager
    def _pending_call(self, mid: int, value: T, pending_dict: dict[int, T]) -> Iterator[None]:
        if mid in pending_dict:
            raise RuntimeError(f'There already exists a pending call for message ID "{mid}"')
        pending_dict[mid] = value
        try:
            yield
        finally:
            pending_dict.pop(mid, None)
