"""py_trees behaviours for the LTL robot's executor (seed 003 §V): checks at a rate,
coroutines as actions, and a fallback that re-checks after a recovery.

The tree itself is built from py_trees' own composites (``Sequence`` with memory for
preconditions checked once per run, ``Sequence`` without memory for checks made on
every tick, ``Selector`` without memory for condition → recovery pairs). Three leaves
or composites are ours because py_trees has no such node:

- ``CheckAtRate``: a condition evaluated at most ``rate_hz`` times a second; between
  evaluations the last result stands (the paper checks uprightness at 20 Hz,
  operation and the planned state at 10 Hz, the environment at 5 Hz). Being stopped by
  a parent keeps the result: only ``forget`` (an interruption, a recovery that
  finished) forces a fresh evaluation, so a check is never made faster than its rate
  because a sibling's run ended.
- ``RunCoroutine``: starts a coroutine (returning True for success) as an asyncio
  task on its first tick, RUNNING until the task ends, then SUCCESS or FAILURE (an
  exception, a cancellation or False). Stopped while running (INVALID), it cancels
  the task.
- ``Recovery``: a ``Selector`` without memory whose condition (its first child) is
  checked afresh after a recovery child succeeds: every child is stopped and every
  check forgotten, so the recovery does not run again on a stale failed check.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import py_trees
from py_trees.common import Status

__all__ = ["CheckAtRate", "Recovery", "RunCoroutine", "forget_checks", "render_tree"]

Spawn = Callable[[Awaitable[Any], str], "asyncio.Task[Any]"]


class CheckAtRate(py_trees.behaviour.Behaviour):
    """SUCCESS while ``check()`` holds, else FAILURE, evaluated at most ``rate_hz``
    times a second by ``clock`` (None: on every tick). See the module docstring."""

    def __init__(
        self,
        name: str,
        check: Callable[[], bool],
        rate_hz: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(name)
        self.check = check
        self.clock = clock
        self.period = 0.0 if rate_hz is None else 1.0 / rate_hz
        self.evaluations = 0
        self._last: tuple[float, bool] | None = None

    def update(self) -> Status:
        now = self.clock()
        if self._last is None or now - self._last[0] >= self.period:
            self.evaluations += 1
            self._last = (now, bool(self.check()))
        return Status.SUCCESS if self._last[1] else Status.FAILURE

    def forget(self) -> None:
        """Drop the last result: the next tick evaluates ``check`` again."""
        self._last = None


class RunCoroutine(py_trees.behaviour.Behaviour):
    """Runs ``start()`` as a task made by ``spawn`` (see the module docstring)."""

    def __init__(self, name: str, start: Callable[[], Awaitable[bool]], spawn: Spawn):
        super().__init__(name)
        self.start = start
        self.spawn = spawn
        self.task: asyncio.Task[Any] | None = None

    def update(self) -> Status:
        if self.task is None:
            self.task = self.spawn(self.start(), self.name)
            return Status.RUNNING
        if not self.task.done():
            return Status.RUNNING
        task, self.task = self.task, None
        if task.cancelled() or task.exception() is not None or task.result() is False:
            return Status.FAILURE
        return Status.SUCCESS

    def terminate(self, new_status: Status) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = None


class Recovery(py_trees.composites.Selector):
    """A condition and its recoveries: ``Selector(memory=False)`` that checks the
    condition afresh once a recovery has succeeded (see the module docstring)."""

    def __init__(self, name: str, children: Sequence[py_trees.behaviour.Behaviour]):
        super().__init__(name, memory=False, children=list(children))

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        for node in super().tick():
            if (
                node is self
                and self.status is Status.SUCCESS
                and self.current_child is not self.children[0]
            ):
                for child in self.children:
                    child.stop(Status.INVALID)
                forget_checks(self)
            yield node


def forget_checks(root: py_trees.behaviour.Behaviour) -> None:
    """Make every ``CheckAtRate`` under `root` evaluate afresh on its next tick."""
    for node in root.iterate():
        if isinstance(node, CheckAtRate):
            node.forget()


def render_tree(root: py_trees.behaviour.Behaviour) -> str:
    """The tree as text, with each node's last status (py_trees' unicode view)."""
    return py_trees.display.unicode_tree(root, show_status=True)
