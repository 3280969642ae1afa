"""One rclpy node spun by its own executor in its own thread, for asyncio code that
must never call rclpy itself (a ROS 2 driver, the bridge of the team into ROS 2).

The asyncio side hands work in with ``call`` (rclpy's ``Executor.create_task``, which
queues a callable for the executor's thread and wakes it: the ROS counterpart of
``call_soon_threadsafe``) and hears back through ``emit``, which its owner makes a
``loop.call_soon_threadsafe``. A subclass builds its node, executor and context in
``_build`` (in the thread); rclpy is imported only there, so teamtree imports without
ROS 2. Events every such node emits: ``ready`` None once it spins, ``failed`` text when
it cannot start or its executor stops.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Emit", "RosNodeThread"]

Emit = Callable[[str, Any], None]


class RosNodeThread(abc.ABC):
    """The thread, executor and context of one rclpy node (see the module docstring)."""

    def __init__(self, *, thread_name: str, emit: Emit):
        self.emit = emit
        self._thread_name = thread_name
        self._thread: threading.Thread | None = None
        self._executor: Any = None
        self._context: Any = None
        self._node: Any = None
        self._started = threading.Event()

    def start(self, timeout_s: float = 30.0) -> bool:
        """Start the node's thread; returns once it spins or emitted ``failed`` (True),
        or False when it did neither within `timeout_s` seconds."""
        self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
        self._thread.start()
        return self._started.wait(timeout_s)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` in the node's thread, soon."""
        executor = self._executor
        if executor is not None:
            executor.create_task(fn, *args)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop spinning, then shut the node's context down."""
        executor, context = self._executor, self._context
        if executor is not None:
            executor.shutdown(timeout_sec=timeout_s)
        if self._thread is not None:
            self._thread.join(timeout_s)
        if context is not None:
            import rclpy

            if context.ok():
                rclpy.shutdown(context=context)

    @abc.abstractmethod
    def _build(self) -> None:
        """Create ``_context``, ``_node`` and ``_executor`` (in the node's thread)."""

    def _run(self) -> None:
        try:
            self._build()
        except Exception as exc:  # a node that cannot start: say why, once
            self.emit("failed", f"{type(exc).__name__}: {exc}")
            self._started.set()
            return
        self.emit("ready", None)
        self._started.set()
        try:
            self._executor.spin()
        except Exception as exc:
            if self._context is not None and self._context.ok():
                self.emit("failed", f"executor stopped: {exc!r}")
