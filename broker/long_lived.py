"""Objects that live as long as the process, kept out of the garbage collector's scans.

Python's full (generation 2) collection walks every object the collector tracks. Once
an agent's modules and numpy's (imported for a robot's potentials) are in, each full
collection takes tens of milliseconds, several times a run, and stalls every agent of
the process; with these objects frozen it takes a fraction of that. ``gc.freeze``
moves the objects alive at that moment to a generation no collection scans: modules,
classes, the config, what an import made.
They live for the process's life anyway; a reference cycle among them that becomes
garbage later is not freed. Reference counting frees everything else as before.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_imported", "freeze_startup"]

_started = False


def freeze_startup() -> None:
    """Freeze what the process holds once its first agent is ONLINE (its imports done);
    later calls do nothing, so a process of many agents freezes once."""
    global _started
    if not _started:
        _started = True
        gc.freeze()


def freeze_imported() -> None:
    """Freeze what the process holds after a module it keeps was imported (``preload``)."""
    gc.freeze()
