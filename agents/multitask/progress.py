"""What a multitask robot says of its own progress: each leaf's transition, its
resources and world after each step, its retained leaf snapshot, and the mission's
status (units done of the tree's).

``ProgressReports`` owns these messages and the status reporter. One module because
all of them read the robot's tree state and none of them decides anything: the
rounds say when, this says what.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from teamtree.agents.multitask.channels import RESOURCES, SNAPSHOT, STATE
from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.treeprotocol.peer_wire import LeafSnapshotWire, LeafTransitionWire
from teamtree.planners.tasktree import NodeStatus

if TYPE_CHECKING:
    from teamtree.agents.multitask.robot import MultitaskRobot

__all__ = ["ProgressReports"]


class ProgressReports:
    """One multitask robot's leaf transitions, state, snapshot and mission status."""

    def __init__(self, robot: MultitaskRobot) -> None:
        self._robot = robot
        self._status = StatusReporter(robot, "multitask", "units")

    def _stamp(self) -> list[Any]:
        return list(self._robot.stamp())

    async def transition(self, node: str, status: str, **extra: Any) -> None:
        """Publish leaf `node`'s transition to `status` with ``LeafTransitionWire``'s
        other fields (`extra`)."""
        robot = self._robot
        body = LeafTransitionWire(node, robot.id, NodeStatus(status), self._stamp(), **extra)
        await robot.publish(STATE, "node.transition", msgspec.to_builtins(body))

    async def state(self, step: int, sim_s: float) -> None:
        """Publish, retained, the resources and the body's world after step `step`."""
        task_state = self._robot.task_state
        world = task_state.world
        body = {
            "step": step,
            "sim_s": round(sim_s, 3),
            "resources": task_state.resources.to_rows(),
            "robot": list(world.robot),
            "held": sorted([list(p) for p in world.held]),
            "placed": sorted(world.placed),
        }
        await self._robot.publish(RESOURCES, "multitask.resources", body, retain=True)

    async def snapshot(self) -> None:
        """Publish, retained, the leaves done, skipped and working, then the status."""
        robot = self._robot
        state = robot.task_state
        body = LeafSnapshotWire(
            robot.id,
            self._stamp(),
            sorted(state.done),
            sorted(state.skipped),
            sorted(state.working),
        )
        await robot.publish(SNAPSHOT, "node.snapshot", msgspec.to_builtins(body), retain=True)
        await self.units()

    async def units(self) -> None:
        """The mission's status: units done (by this robot or a peer) of the tree's."""
        robot = self._robot
        leaves = robot.problem.tree.leaves
        finished = len(set(robot.task_state.done) | set(robot.task_state.skipped))
        await self._status.report(
            "running" if robot.result is None else "succeeded",
            reason="" if robot.result is None else "every unit of the tree is done",
            done=len(robot.units_done),
            total=len(robot.unit_tree.leaves),
            detail=f"{finished} of {len(leaves)} leaves done",
        )
