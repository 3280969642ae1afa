"""The team's process priority: `[runtime] nice`, applied as a process starts.

A claim crosses four process wake-ups (claimant, broker, peer, broker, claimant). Beside
CPU-bound work at the same priority each wake-up can wait for a scheduler slice, which
makes claims two to three times slower on a busy two-core machine. A nice value below 0
makes the kernel run a waking team process ahead of that work, while the team's own
processes still share the cores fairly among themselves. A real-time policy
(``SCHED_RR``) was measured too and not chosen: at one priority a busy agent process
holds its core for a whole round-robin quantum and the broker waits behind it, so quiet
claims got slower (docs/results/2026-11-tasktree-claims.md).

``teamtree run`` applies the value to itself before it starts the broker, so the local
broker and every agent process inherit it; ``teamtree agent`` and ``teamtree attach``
apply it again, so an agent started by compose or by hand runs at it as well.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from teamtree.broker import ConfigError

#: where Linux lists a process's threads (each thread has a nice value of its own)
_THREADS = Path("/proc/self/task")


def current_nice() -> int:
    """The calling thread's nice value."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def apply_nice(nice: int, *, path: str | None = None) -> None:
    """Run this process (each of its threads, and what it starts later) at `nice`.

    0 leaves the priority as it is, so ``nice -n 5 teamtree run ...`` still works. A value
    below the current one needs the right to raise a priority; without it this raises a
    ConfigError naming ``[runtime] nice`` and the ways to grant that right."""
    if nice == 0:
        return
    threads = [0]
    with contextlib.suppress(OSError):
        threads = [int(tid) for tid in os.listdir(_THREADS)]
    try:
        for tid in threads:
            with contextlib.suppress(ProcessLookupError):  # a thread that has just ended
                os.setpriority(os.PRIO_PROCESS, tid, nice)
    except PermissionError:
        raise ConfigError(
            f"is {nice}, and this process (nice {current_nice()}) may not raise its "
            "priority: run as root, grant CAP_SYS_NICE (compose: cap_add: [SYS_NICE]), or "
            f"allow it in /etc/security/limits.conf (<user> - nice {nice}); or set nice = 0",
            path=path,
            key="runtime.nice",
        ) from None
