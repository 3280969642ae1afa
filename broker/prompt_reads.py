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

The set of sockets to check is built once and kept for ``REFRESH_S`` (or until a new
reader registers): building it asks every reader for its socket, which on a process of
100 clients cost more than the check itself. A socket that changed meanwhile (a
reconnection) is checked from the next build on; until then the loop's polls read it,
and a socket number now held by another reader is never read for the wrong one.

Only plain-TCP readers (those that frame packets themselves) take part. Readers of
another event loop are skipped, and so are readers without a socket. Where the
platform has no ``select.poll`` (Windows), the loop's own polls do all the reading.
"""

from __future__ import annotations

import asyncio
import select
import time
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["READ_EVERY_S", "REFRESH_S", "PromptReader", "read_due", "register"]

READ_EVERY_S = 0.002
"""How often, at most, a reader taking a message checks every socket of its loop."""
REFRESH_S = 0.1
"""How long, at most, the set of sockets checked is kept before it is built again."""


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


@dataclass
class _Watch:
    """The sockets of one loop's readers, as last built."""

    loop: asyncio.AbstractEventLoop
    built: float
    poller: Any  # select.poll
    by_fd: dict[int, weakref.ref[PromptReader]]


_watch: list[_Watch | None] = [None]


def register(reader: PromptReader) -> None:
    """Check `reader`'s socket from now on (until it is garbage)."""
    _readers.add(reader)
    _watch[0] = None


def _build(loop: asyncio.AbstractEventLoop, now: float) -> _Watch:
    by_fd: dict[int, weakref.ref[PromptReader]] = {}
    for reader in list(_readers):
        if reader._loop is loop:
            fd = reader.socket_fileno()
            if fd is not None:
                by_fd[fd] = weakref.ref(reader)
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    return _Watch(loop, now, poller, by_fd)


def read_due() -> None:
    """Read every socket of the running loop's readers that holds data, if the last
    check is ``READ_EVERY_S`` old. Cheap to call on every message."""
    now = time.monotonic()
    if now - _last[0] < READ_EVERY_S or not _HAS_POLL:
        return
    _last[0] = now
    loop = asyncio.get_running_loop()
    watch = _watch[0]
    if watch is None or watch.loop is not loop or now - watch.built >= REFRESH_S:
        watch = _watch[0] = _build(loop, now)
    if not watch.by_fd:
        return
    try:
        ready = watch.poller.poll(0)
    except OSError:
        _watch[0] = None
        return
    for fd, events in ready:
        if events & select.POLLNVAL:  # closed since the build
            _watch[0] = None
            continue
        reader = watch.by_fd[fd]()
        if reader is not None and reader.socket_fileno() == fd:
            reader.read_now()
