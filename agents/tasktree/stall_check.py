"""A task-tree robot's check that its team still makes progress: a team with no leaf
newly done, and no claim that held its node throughout, for ``stall_timeout_s`` while
leaves are open and the robot is connected will not finish (e.g. the only robot able
to grasp an object is gone, or every execute on an object is refused). Claims and
attempts are not progress (``StallWatch``). The robot then ends its mission with an
error naming the open leaves and what its attempts met (exit code 2), instead of a
silent wait or an endless cycle."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from teamtree.agents.tasktree.robot_host import RobotHost
from teamtree.planners.tasktree import StallWatch

__all__ = ["StallCheck", "stall_reason"]


def stall_reason(open_leaves: Sequence[str], attempts: Sequence[dict[str, Any]]) -> str:
    """Why a team with `open_leaves` (labels with their potential here) is stuck,
    from this robot's `attempts` since it last progressed (``executed`` entries)."""
    failed = Counter(str(e.get("reason")) for e in attempts if not e["ok"])
    if failed:
        met = ", ".join(f"{reason} x{n}" for reason, n in failed.most_common())
        why = (
            f"this robot's behaviours since failed {failed.total()} times ({met}) "
            "and no teammate finished one"
        )
    else:
        why = (
            "open and worked on by nobody; this robot cannot take them (potential 0: "
            "out of reach or no grasp) and no teammate does"
        )
    return f"{', '.join(open_leaves) or 'none'}: {why}"


class StallCheck:
    """Ends `host`'s mission after `timeout_s` without progress (0: never)."""

    def __init__(self, host: RobotHost, timeout_s: float):
        self.host = host
        self.timeout_s = timeout_s
        self._watch = StallWatch(timeout_s)  # progress: leaves newly done
        self._attempts = 0  # len(host.executed) when the team last progressed
        self.failed = False  # said once: the ticks until the robot stops say no more

    def check(self) -> None:
        """Look once (each tick): log ``mission.failed`` and stop with exit code 2
        when the team has gone ``timeout_s`` without progress; once."""
        host = self.host
        c = host.controller
        if c is None or not self.timeout_s or self.failed:
            return
        if c.mission_done or not c.connected:
            self._watch.reset()
            return
        since = self._watch.since
        holds = [(node, agent, tuple(stamp)) for node, (agent, stamp) in c.working.items()]
        idle = self._watch.observe(c.done, holds, time.monotonic())
        if self._watch.since != since:
            self._attempts = len(host.executed)  # count attempts from here on
        if idle is None:
            return
        acts = c.activations()
        tree = host.tree
        open_leaves = [
            f"{tree[leaf].label} (potential here {acts[leaf].potential:.3g})"
            for leaf in tree.leaves
            if leaf not in c.done and acts[leaf].level > 0
        ]
        host.log.error(
            "mission.failed",
            reason=f"no progress for {idle:.0f} s (no leaf done): "
            + stall_reason(open_leaves, host.executed[self._attempts :]),
            fix="bring back or add a member able to do them, or change the mission; "
            f"stall_timeout_s ({self.timeout_s:g} s) sets how long the team may wait",
        )
        self.failed = True
        host.request_stop(2)
