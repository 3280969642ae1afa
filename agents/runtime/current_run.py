"""Where the last ``teamtree run`` can be found: broker URL, team and mission id.

``run`` writes ``.teamtree/runs/<pid>.json`` and ``.teamtree/current.json`` (the latest
live run's; or the file named by ``$TEAMTREE_RUN_FILE``, its ``runs/`` beside it) in the
working directory when its team is up. On its way out a run removes only its own file;
the current-run file then names the newest run still alive, so two runs in one
directory never delete each other's file.
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
    """The path of the current-run file (the latest live run's)."""
    return Path(os.environ.get(RUN_FILE_ENV) or Path(".teamtree") / "current.json")


def runs_dir() -> Path:
    """Where each run keeps its own file, ``<pid>.json``, beside the current-run file."""
    return run_file().parent / "runs"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(path: Path, run: CurrentRun) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(asdict(run), indent=1) + "\n")
    partial.replace(path)  # readers never see half a file


def _read(path: Path) -> CurrentRun | None:
    try:
        data = json.loads(path.read_text())
        return CurrentRun(**{k: data[k] for k in CurrentRun.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def live_runs() -> list[CurrentRun]:
    """The runs of this directory whose process is alive, newest file first."""
    try:
        files = sorted(runs_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    found = [_read(path) for path in files]
    return [run for run in found if run is not None and _alive(run.pid)]


def write_current_run(run: CurrentRun) -> Path:
    """Write `run` to its own file and point the current-run file at it; returns the
    current-run file's path. Another run's files are left alone."""
    _write(runs_dir() / f"{run.pid}.json", run)
    path = run_file()
    _write(path, run)
    return path


def read_current_run() -> CurrentRun | None:
    """The current run: the current-run file's when its process is alive (or it names
    none), else the newest live run's file; None when there is none."""
    current = _read(run_file())
    if current is not None and (current.pid == 0 or _alive(current.pid)):
        return current
    live = live_runs()
    return live[0] if live else current


def clear_current_run(pid: int) -> None:
    """Remove run `pid`'s own file; the current-run file, when it is `pid`'s, then
    names the newest other live run (or goes). Other runs' files are left alone."""
    with contextlib.suppress(OSError):
        (runs_dir() / f"{pid}.json").unlink()
    current = _read(run_file())
    if current is not None and current.pid == pid:
        live = [run for run in live_runs() if run.pid != pid]
        if live:
            _write(run_file(), live[0])
        else:
            with contextlib.suppress(OSError):
                run_file().unlink()
