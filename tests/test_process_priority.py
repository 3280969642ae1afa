"""`[runtime] nice`: the team's processes run at the configured nice value, and a
process without the right to raise its priority gets a clear error, never a silent
default (agents/runtime/priority.py)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from teamtree.agents import load_config
from tests.conftest import REPO, scaled, teamtree_cmd

#: applies a nice value in a fresh interpreter whose helper thread already runs, then
#: prints the nice of the main thread, of that thread and of a thread started after
_APPLY = textwrap.dedent(
    """
    import os, sys, threading
    from teamtree.agents.runtime.priority import apply_nice, current_nice
    from teamtree.broker import ConfigError
    ready, done, seen = threading.Event(), threading.Event(), {}
    def early():
        ready.set(); done.wait(); seen["early"] = current_nice()
    t = threading.Thread(target=early); t.start(); ready.wait()
    try:
        apply_nice(int(sys.argv[1]))
    except ConfigError as exc:
        print("error:", exc); done.set(); t.join(); sys.exit(2)
    done.set(); t.join()
    late = threading.Thread(target=lambda: seen.__setitem__("late", current_nice()))
    late.start(); late.join()
    print(current_nice(), seen["early"], seen["late"])
    """
)


#: prctl(2): drop a capability from the bounding set, so that the next exec lacks it
_PR_CAPBSET_DROP = 24
_CAP_SYS_NICE = 23


def _without_sys_nice() -> None:  # runs in the child before exec
    """Root without CAP_SYS_NICE: a process that may not raise its priority (RLIMIT_NICE
    is 0 by default), while it can still read the interpreter and the repository."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_NICE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE)")


def _apply(nice: int, *, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _APPLY, str(nice)],
        capture_output=True, text=True, timeout=scaled(60), cwd=REPO,
        preexec_fn=_without_sys_nice if unprivileged else None,
    )  # fmt: skip


def test_every_thread_of_the_process_runs_at_the_nice_value() -> None:
    """Linux keeps a nice value per thread: one already running and one started later
    both run at it (a positive value needs no privilege)."""
    out = _apply(7)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["7", "7", "7"]


def test_zero_leaves_the_priority_as_it_is() -> None:
    """``nice -n 3 teamtree run ...`` keeps working with the default config."""
    start = min(os.getpriority(os.PRIO_PROCESS, 0) + 3, 19)
    out = subprocess.run(
        [sys.executable, "-c", _APPLY, "0"],
        capture_output=True, text=True, timeout=scaled(60), cwd=REPO,
        preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, start),
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == [str(start)] * 3


def test_without_the_right_to_raise_priority_the_error_says_how_to_get_it() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to drop CAP_SYS_NICE alone")
    out = _apply(-5, unprivileged=True)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "[runtime.nice] is -5" in out.stdout
    assert "CAP_SYS_NICE" in out.stdout and "nice = 0" in out.stdout
    assert "Traceback" not in out.stderr


def test_shipped_configs_leave_the_priority_alone() -> None:
    """A raised priority needs a right most users lack: only a config that asks for it
    gets it."""
    for path in sorted((REPO / "configs").glob("*.toml")):
        assert load_config(path).runtime.nice == 0, path


@pytest.mark.integration
def test_run_starts_every_agent_at_the_configs_nice(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a nice value below 0 needs root or CAP_SYS_NICE")
    text = (REPO / "configs" / "hello.toml").read_text()
    config = tmp_path / "hello_nice.toml"
    config.write_text(text.replace("[runtime]\n", "[runtime]\nnice = -4\n", 1))
    out = subprocess.run(
        teamtree_cmd("run", str(config), "--timeout", "90"),
        capture_output=True, text=True, timeout=scaled(150),
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "the broker and every agent run at nice -4" in out.stdout, out.stdout[:2000]
    online = [line for line in out.stdout.splitlines() if "agent.online" in line]
    assert {line.split("|")[0].strip() for line in online} == {"alpha", "beta", "gamma"}
    assert all("nice=-4" in line for line in online), online
