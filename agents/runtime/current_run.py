"""Where the last ``teamtree run`` can be found: broker URL, team and mission id.

``run`` writes ``.teamtree/current.json`` in the working directory (or the file named
by ``$TEAMTREE_RUN_FILE``) when its team is up, and removes it when the run ends;
``monitor``, ``record``, ``tree``, ``human``, ``disturb``, ``submit`` and friends use it
as their default broker and team, so "from another terminal" commands work as copied.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

RUN_FILE_ENV = "TEAMTREE_RUN_FILE"


@dataclass(frozen=True, slots=True)
class CurrentRun:
    """What another terminal needs to talk to a running team."""

    broker: str
    team: str
    mission: str
    config: str = ""
    pid: int = 0


def run_file() -> Path:
    """The path of the current-run file."""
    return Path(os.environ.get(RUN_FILE_ENV) or Path(".teamtree") / "current.json")


def write_current_run(run: CurrentRun) -> Path:
    """Write `run` to the current-run file; returns its path."""
    path = run_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(run), indent=1) + "\n")
    return path


def read_current_run() -> CurrentRun | None:
    """The current run, or None when there is none (or the file is unreadable)."""
    try:
        data = json.loads(run_file().read_text())
        return CurrentRun(**{k: data[k] for k in CurrentRun.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def clear_current_run(pid: int) -> None:
    """Remove the current-run file if it is still the one process `pid` wrote."""
    current = read_current_run()
    if current is not None and current.pid == pid:
        with contextlib.suppress(OSError):
            run_file().unlink()
