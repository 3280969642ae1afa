"""Read the process's sockets between two messages, not only when the loop polls.

Why: the event loop reads a socket only when it polls, and it polls once it has run
every callback that was ready. On a process that runs many agents (e.g. 16 robots
and 16 drivers), one such pass takes milliseconds during a burst. A claim's reply
that reached the claimant's socket waits that long before anything sees it, and so
does every claim a peer has to answer.

So each reader, when it takes its next message (``FastClient.next_message``), first
checks every socket of the loop's readers for data, at most once per
``READ_EVERY_S``. The check is one ``poll`` system call. Each socket that holds data
is read at once, by the same code the loop's reader callback runs
(``FastClient.read_now``). The messages go to the agents' inbound queues. A claim or
reply there is then served first: by its own reader, and by the other agents, which
give way to it (``broker/inbound.py``). Reads then come in smaller batches, which
costs some CPU; measured in docs/results/2026-11-tasktree-claims.md.

Only plain-TCP readers (those that frame packets themselves) take part. Readers of
another event loop are skipped, and so are readers without a socket. Where the
platform has no ``select.poll`` (Windows), the loop's own polls do all the reading.
"""

from __future__ import annotations

import asyncio
import select
import time
import weakref
from typing import Protocol

__all__ = ["READ_EVERY_S", "PromptReader", "read_due", "register"]

READ_EVERY_S = 0.002
"""How often, at most, a reader taking a message checks every socket of its loop."""


class PromptReader(Protocol):
    """What ``read_due`` needs of a reader (``FastClient``)."""

    _loop: asyncio.AbstractEventLoop

    def socket_fileno(self) -> int | None:
        """The socket to check, or None (not connected, or not read frame by frame)."""

    def read_now(self) -> None:
        """Read what the socket holds, as the loop's reader callback would."""


_HAS_POLL = hasattr(select, "poll")  # not on Windows: there the loop's polls alone read
_readers: weakref.WeakSet[PromptReader] = weakref.WeakSet()
_last = [0.0]  # when the sockets were last checked (time.monotonic)


def register(reader: PromptReader) -> None:
    """Check `reader`'s socket from now on (until it is garbage)."""
    _readers.add(reader)


def read_due() -> None:
    """Read every socket of the running loop's readers that holds data, if the last
    check is ``READ_EVERY_S`` old. Cheap to call on every message."""
    now = time.monotonic()
    if now - _last[0] < READ_EVERY_S or not _HAS_POLL:
        return
    _last[0] = now
    loop = asyncio.get_running_loop()
    by_fd: dict[int, PromptReader] = {}
    for reader in list(_readers):
        if reader._loop is loop:
            fd = reader.socket_fileno()
            if fd is not None:
                by_fd[fd] = reader
    if not by_fd:
        return
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    try:
        ready = poller.poll(0)
    except OSError:
        return
    for fd, _events in ready:
        by_fd[fd].read_now()
