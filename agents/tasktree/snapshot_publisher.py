"""A task-tree robot's retained ``<me>/snapshot`` (``node.snapshot``: what it knows)
and its word on the mission's status, published at most once per
``SNAPSHOT_EVERY_S``."""

from __future__ import annotations

import asyncio

from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.tasktree.robot_host import RobotHost
from teamtree.agents.treeprotocol.peer_wire import snapshot_to_wire
from teamtree.planners.tasktree import Snapshot

__all__ = ["SNAPSHOT", "SNAPSHOT_EVERY_S", "SnapshotPublisher"]

SNAPSHOT = "snapshot"
SNAPSHOT_EVERY_S = 0.25
"""The controller's snapshots go out at most once per this many seconds: the first at
once, the ones after it within the interval as one, the latest, at its end. Every
change also goes out at once as a ``node.transition``; the retained snapshot is what a
late joiner and the observers read, and each carries every done leaf, so at 32 robots
x 500 leaves one per transition was most of the bytes every robot decoded."""


class SnapshotPublisher:
    """Publishes `host`'s snapshots, throttled, and the mission status each carries."""

    def __init__(self, host: RobotHost):
        self.host = host
        self.owed = False  # a trailing snapshot is scheduled
        self._sent_at = float("-inf")
        self._status: StatusReporter | None = None  # created on the first snapshot

    async def publish(self, snap: Snapshot) -> None:
        """Publish `snap` now, and the mission's status it shows."""
        self._sent_at = asyncio.get_running_loop().time()
        self.owed = False
        body = snapshot_to_wire(snap)
        await self.host.publish(SNAPSHOT, "node.snapshot", body, retain=True)
        await self._report_status(snap)

    async def publish_latest(self) -> None:
        """Publish the controller's snapshot now (none before the mission starts)."""
        c = self.host.controller
        if c is not None:
            await self.publish(c.snapshot(self.host._now()))

    async def throttled(self, snap: Snapshot) -> None:
        """Publish `snap` now, or the controller's latest at the end of the interval
        (``SNAPSHOT_EVERY_S``) when one went out less than an interval ago."""
        if self.owed:
            return  # the trailing one is scheduled and will be the latest
        wait = self._sent_at + SNAPSHOT_EVERY_S - asyncio.get_running_loop().time()
        if wait <= 0:
            await self.publish(snap)
            return
        self.owed = True
        self.host.spawn(self._owed_snapshot(wait), "snapshot")

    async def _owed_snapshot(self, wait: float) -> None:
        await asyncio.sleep(wait)
        if self.owed:  # not sent meanwhile (a reconnect, the mission's end)
            await self.publish_latest()

    async def _report_status(self, snap: Snapshot) -> None:
        """The mission's status as this robot knows it: leaves done of the tree's."""
        if self._status is None:
            self._status = StatusReporter(self.host, "tasktree", "leaves")
        leaves = self.host.tree.leaves
        done = len(set(snap.done) & set(leaves))
        c = self.host.controller
        ended = c is not None and c.mission_done
        reason = "every subtask the tree needs is done" if ended else ""
        detail = "the others were OR alternatives" if ended and done < len(leaves) else ""
        state = "succeeded" if ended else "running"
        await self._status.report(state, done=done, total=len(leaves), reason=reason, detail=detail)
