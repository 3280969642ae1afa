"""What the parts of a task-tree robot (its driver link, human teammates, snapshot
publisher and stall check) use of the robot agent that holds them: its identity, its
controller, its connection and its hands on the broker. A Protocol, so that each part
is read without the agent's module and the agent's module imports the parts, not the
other way round."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Protocol

from teamtree.broker.envelope import Envelope
from teamtree.planners.tasktree import TaskController, TaskTree

__all__ = ["RobotHost"]


class RobotHost(Protocol):
    """The robot agent as its parts see it."""

    id: str
    session: str
    tree: TaskTree
    controller: TaskController | None
    executed: list[dict[str, Any]]
    """Every behaviour's end: ``{"node", "ok"[, "reason"]}``, in order."""
    log: Any
    connection: Any

    async def feed(self, event: Any) -> None:
        """Hand one event to the controller and carry out its actions."""

    async def publish(self, channel: str, kind: str, body: Any = None, **fields: Any) -> Any: ...

    async def request(self, channel: str, kind: str, body: Any = None, **fields: Any) -> Envelope:
        """Send a request and return the first reply (RequestTimeoutError at the deadline)."""
        ...

    async def _command(self, kind: str, node: str) -> None:
        """Send the driver a ``behaviour.*`` command about `node`."""

    def spawn(self, coro: Awaitable[Any], name: str = "task") -> asyncio.Task[Any]: ...

    def request_stop(self, exit_code: int = 0) -> None: ...

    def _now(self) -> tuple[int, int, str]:
        """Now on the team's hybrid clock, as a stamp."""
        ...

    def _drop(self, reason: str, topic: str, sender: str | None, detail: str = "") -> None:
        """Drop a message, logged and counted under `reason`."""
