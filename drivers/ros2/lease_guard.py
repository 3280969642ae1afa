"""The lease guard: a watchdog process that cancels a ROS 2 goal whose lease lapsed
when the driver that holds it can no longer do so itself.

A ROS 2 action server knows no lease: a goal runs until it ends or is cancelled. The
driver cancels a goal whose lease lapsed, but only while it runs; a driver frozen
(SIGSTOP, a hung process) or killed mid-goal would leave the robot acting while the
team gives the node to a teammate. So the driver starts this guard as a child process
and tells it, over the child's stdin, each accepted goal (action name, goal id,
deadline on the wall clock) and each renewal. The guard has its own rclpy node: when a
deadline passes without renewal, or its stdin closes (the driver died or stopped), it
cancels the goal through the action's cancel service
(``<action>/_action/cancel_goal``, ``action_msgs/srv/CancelGoal``), which any node may
call with a goal's id. The guard stops nothing when it is frozen together with the
driver (the same cgroup frozen, the machine hung): see docs/safety.md.

Lines on stdin (read by ``guard_process``), JSON: ``{"op": "hold", "ref", "action",
"goal_id" (hex), "deadline_ms"}``, ``{"op": "renew", "ref", "deadline_ms"}``,
``{"op": "ended", "ref"}``. On stdout it prints ``READY`` once its node spins and
``CANCELLED <ref> <answer>`` for each cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any


class GuardLink:
    """The driver's end of its lease guard (asyncio side; no rclpy here)."""

    def __init__(self, node_name: str, domain_id: int | None, log: Any):
        self.node_name = f"{node_name}_lease_guard"
        self.domain_id = domain_id
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.cancelled: list[str] = []
        self._reader: asyncio.Task[None] | None = None

    async def start(self, timeout_s: float = 30.0) -> None:
        """Start the guard process and wait until its node spins."""
        args = [sys.executable, "-m", "teamtree.drivers.ros2.guard_process", self.node_name]
        if self.domain_id is not None:
            args.append(str(self.domain_id))
        self.proc = await asyncio.create_subprocess_exec(
            *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout_s):
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    raise RuntimeError("the lease guard exited before it was ready")
                if line.strip() == b"READY":
                    break
        self._reader = asyncio.create_task(self._read())
        self.log.info("driver.lease_guard_ready", pid=self.proc.pid)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            text = line.decode(errors="replace").strip()
            if text.startswith("CANCELLED "):
                self.cancelled.append(text.split()[1])
                self.log.warning("driver.lease_guard_cancelled", detail=text[10:])
        self.log.error("driver.lease_guard_gone", returncode=await self.proc.wait())

    async def _send(self, **message: Any) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self.log.error("driver.lease_guard_unreachable", error=repr(exc))

    async def hold(self, ref: str, action: str, goal_id: str, deadline_ms: int | None) -> None:
        """Guard an accepted goal (no deadline: it is guarded only against the driver's
        death)."""
        await self._send(op="hold", ref=ref, action=action, goal_id=goal_id,
                         deadline_ms=deadline_ms)  # fmt: skip

    async def renew(self, ref: str, deadline_ms: int | None) -> None:
        await self._send(op="renew", ref=ref, deadline_ms=deadline_ms)

    async def ended(self, ref: str) -> None:
        await self._send(op="ended", ref=ref)

    async def stop(self, timeout_s: float = 5.0) -> None:
        """Close its stdin (it cancels what it still holds) and wait for it."""
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            async with asyncio.timeout(timeout_s):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
