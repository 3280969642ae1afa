"""Agent processes: start one with its environment, pump its output, stop it, see it end.

``teamtree run`` (the launcher) and the mission queue both start agents as child
processes of ``teamtree agent``; this module is the one way they do it. Every output
line is handed to the caller with the agent's id (``LinePrinter`` writes it as
``<id> | <line>``), and the last lines that read like errors are kept, so the caller
can say why a process failed. A stop is SIGTERM, then SIGKILL for whatever is still
running after the grace period. On Linux a child also gets SIGTERM when its parent
dies, so no agent outlives the process that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

#: words that make an output line worth quoting when its process fails
ERROR_WORDS = ("error", "Error", "failed", "FAILED", "IMPOSSIBLE", "NOT satisfied", "Traceback")
#: error lines kept per process, and characters kept of each
LAST_WORDS = 3
LAST_WORD_CHARS = 300
#: bytes read at once from a line longer than the stream's limit
_LONG_LINE_CHUNK = 65536

#: receives each output line of a process: (its name, the line without its newline)
OnLine = Callable[[str, str], None]


def agent_command(*args: str) -> list[str]:
    """The command line that runs ``teamtree <args>`` with this interpreter."""
    return [sys.executable, "-m", "teamtree.agents", *args]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: deliver SIGTERM to this child when its parent dies (PR_SET_PDEATHSIG)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


@dataclass
class LinePrinter:
    """Writes each output line as ``<name> | <line>`` (names padded to `width`)."""

    out: TextIO | None = None  #: default: sys.stdout at the time of writing
    width: int = 0

    def __call__(self, name: str, text: str) -> None:
        out = self.out or sys.stdout
        out.write(f"{name:<{self.width}} | {text}\n")
        out.flush()


@dataclass
class AgentProcess:
    """One child process and the tasks pumping its output."""

    name: str
    process: asyncio.subprocess.Process
    pumps: list[asyncio.Task[None]] = field(default_factory=list)
    #: its last output lines that read like errors (``ERROR_WORDS``)
    last_words: deque[str] = field(default_factory=lambda: deque(maxlen=LAST_WORDS))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        """Wait until the process has exited; returns its exit code."""
        return await self.process.wait()

    def terminate(self) -> None:
        """SIGTERM, unless it has exited."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL, unless it has exited."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def drained(self, timeout: float = 2.0) -> None:
        """Wait (at most `timeout` s each) for its output to be passed on."""
        for pump in self.pumps:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pump, timeout)


async def start_process(
    name: str,
    argv: list[str],
    on_line: OnLine,
    *,
    env: Mapping[str, str | None] | None = None,
) -> AgentProcess:
    """Start `argv` as the process `name`: this process's environment with `env`
    applied (a None value removes the variable) and unbuffered output, stdin closed;
    every line of its stdout and stderr goes to `on_line` with `name`."""
    child_env = dict(os.environ, PYTHONUNBUFFERED="1")
    for key, value in (env or {}).items():
        if value is None:
            child_env.pop(key, None)
        else:
            child_env[key] = value
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    child = AgentProcess(name, process)
    assert process.stdout is not None and process.stderr is not None
    child.pumps = [
        asyncio.create_task(_pump(child, stream, on_line), name=f"teamtree[{name}].output")
        for stream in (process.stdout, process.stderr)
    ]
    return child


async def _pump(child: AgentProcess, stream: asyncio.StreamReader, on_line: OnLine) -> None:
    """Pass `child`'s lines from `stream` to `on_line`, keeping its error lines."""
    while True:
        try:
            line = await stream.readline()
        except ValueError:  # a line over the stream limit
            line = (await stream.read(_LONG_LINE_CHUNK)) + b"\n"
        if not line:
            return
        text = line.decode(errors="replace").rstrip("\n")
        if any(word in text for word in ERROR_WORDS):
            child.last_words.append(text.strip()[:LAST_WORD_CHARS])
        on_line(child.name, text)


async def stop_processes(
    children: Iterable[AgentProcess],
    grace_s: float,
    on_kill: Callable[[AgentProcess], None] | None = None,
) -> None:
    """SIGTERM every child still running, then SIGKILL those still there after
    `grace_s` (calling `on_kill` for each first); returns once all have exited."""
    running = [c for c in children if c.returncode is None]
    for child in running:
        child.terminate()
    waits = [asyncio.create_task(c.wait()) for c in running]
    if not waits:
        return
    try:
        await asyncio.wait(waits, timeout=grace_s)
        for child in running:
            if child.returncode is None:
                if on_kill is not None:
                    on_kill(child)
                child.kill()
        await asyncio.gather(*waits)
    finally:
        for wait in waits:
            wait.cancel()


__all__ = [
    "ERROR_WORDS",
    "AgentProcess",
    "LinePrinter",
    "OnLine",
    "agent_command",
    "start_process",
    "stop_processes",
]
