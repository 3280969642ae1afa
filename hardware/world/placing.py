"""Robot commands: PLACE(object) in four stages, and cancel, pause, resume; moving an
object by hand re-plans the robots approaching it.

======== =======================================================================
approach drive the base until the object is within reach (mobile bases only), then
         move the gripper to the object: ``d_base / base_speed + d_arm / arm_speed``
grasp    ``grasp_time``; the object is held from the start of this stage
carry    drive (if the goal is out of reach) and move the object to its goal
release  ``release_time``; then the object is at its goal and the gripper stays there
======== =======================================================================
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.profiles import Vec3, can_place
from teamtree.hardware.world.bodies import (
    BodyLeg,
    PlaceJob,
    RobotBody,
    plan_approach,
    plan_moves,
)
from teamtree.hardware.world.commands import (
    BEHAVIOURS,
    CommandRecord,
    CommandStatus,
    Stage,
    reply,
)
from teamtree.hardware.world.objects import WorldObject
from teamtree.hardware.world.state import WorldState
from teamtree.hardware.world.vectors import vec3


class Placing(WorldState):
    """``execute``, ``cancel``, ``pause``, ``resume``, ``move_object`` and the stage
    machine that carries a PLACE job from leg to leg."""

    def execute(
        self,
        robot: str,
        command_id: str,
        node: str | None,
        behaviour: str,
        params: Mapping[str, Any] | None,
        t: float,
        *,
        lease: float | None = None,
        token: Any = None,
    ) -> dict[str, Any]:
        """Start `behaviour` on `robot`. Idempotent per (robot, command_id): a repeat
        returns the first answer's ``ok`` with the command's current status. With
        `lease` the body stops at that simulated time unless renewed. The command is
        granted the object's next fence (``fence`` in the reply): a renewal of an
        older grant on the object is refused (see ``leases``). `token`, the sender's
        own fencing token, is kept with the job for the record; it orders nothing."""
        self.advance(t)
        key = (robot, command_id)
        known = self._commands.get(key)
        if known is not None:
            if known.early_cancel:
                # cancelled before it arrived: the execute is answered now, once
                known.early_cancel = False
                known.node = node
                self._emit("failed", robot, command_id, node, ok=False, reason="cancelled")
                self.version += 1
                return known.reply(ok=False)
            return {**known.reply(), "duplicate": True}
        body = self.robots.get(robot)
        params = dict(params or {})
        reason: str | None = None
        obj: WorldObject | None = None
        goal: Vec3 | None = None
        if body is None:
            reason = "unknown_robot"
        elif lease is not None and lease <= self.t:
            reason = "lease_expired"  # a command that waited out its lease is void
        elif body.job is not None:
            reason = "busy"
        elif str(behaviour).lower() not in BEHAVIOURS:
            reason = "unknown_behaviour"
        else:
            name = params.get("object")  # a hostile one may be any msgpack value
            obj = self.objects.get(name) if isinstance(name, str) else None
            if obj is None:
                reason = "unknown_object"
            else:
                try:
                    goal = vec3(params["goal"], "goal") if "goal" in params else obj.goal
                except SpecificationError:
                    reason = "bad_params"
                if reason is None and goal is None:
                    reason = "no_goal"
                elif reason is None and obj.held_by not in (None, robot):
                    reason = "held"
                elif reason is None and not can_place(
                    body.spec, body.base, body.yaw, obj.position, goal
                ):
                    reason = "unreachable"
        if reason is not None or body is None or obj is None or goal is None:
            command = CommandRecord(robot, command_id, node, False, CommandStatus.FAILED, reason)
            self._commands[key] = command
            self._emit("failed", robot, command_id, node, ok=False, reason=reason)
            self.version += 1
            return command.reply()
        others = [
            r.name
            for r in self.robots.values()
            if r.name != robot and r.job is not None and r.job.object == obj.name
        ]
        fence = self._fences.grant(obj.name)
        job = PlaceJob(command_id, node, obj.name, goal, lease=lease, token=token, fence=fence)
        if others:  # two bodies on one object's behaviour at once
            self._violation("double_run", obj.name, [*others, robot], command_id, node)
        job.legs = deque(plan_approach(body, obj.position, self.t) or ())
        body.job = job
        self._commands[key] = CommandRecord(robot, command_id, node, True, CommandStatus.RUNNING)
        self._emit("started", robot, command_id, node)
        self.version += 1
        self.advance(t)  # zero-length legs finish at once
        return {**self._commands[key].reply(ok=True), "fence": fence}

    def cancel(self, robot: str, command_id: str | None, t: float) -> dict[str, Any]:
        """Cancel `command_id` (None: whatever `robot` runs). A held object is put
        down where the gripper is. Idempotent; an unknown id is remembered, so a
        late ``execute`` with it fails with ``cancelled``."""
        self.advance(t)
        body = self.robots.get(robot)
        if body is None:
            return reply(False, "unknown_robot")
        if command_id is None:
            if body.job is None:
                return {"ok": True, "reason": None, "status": "idle", "command_id": None}
            command_id = body.job.command_id
        key = (robot, command_id)
        known = self._commands.get(key)
        if known is None:
            self._commands[key] = CommandRecord(
                robot, command_id, None, False, CommandStatus.CANCELLED, "cancelled", True
            )
            return self._commands[key].reply(ok=True)
        if body.job is not None and body.job.command_id == command_id:
            self._end_job(body, CommandStatus.CANCELLED, "cancelled")
        return known.reply(ok=True)

    def pause(self, robot: str, command_id: str | None, t: float) -> dict[str, Any]:
        """Freeze `robot`'s running job (must be `command_id` when given). Idempotent."""
        self.advance(t)
        body, answer = self._current(robot, command_id)
        if answer or body is None or body.job is None:  # not the command it runs
            return answer
        job = body.job
        if job.paused_at is None:
            job.paused_at = self.t
            self._commands[(robot, job.command_id)].status = CommandStatus.PAUSED
            self._emit("paused", robot, job.command_id, job.node)
            self.version += 1
        return self._commands[(robot, job.command_id)].reply(ok=True)

    def resume(self, robot: str, command_id: str | None, t: float) -> dict[str, Any]:
        """Continue `robot`'s paused job (must be `command_id` when given). Idempotent."""
        self.advance(t)
        body, answer = self._current(robot, command_id)
        if answer or body is None or body.job is None:  # not the command it runs
            return answer
        job = body.job
        if job.paused_at is not None:
            if job.legs:
                job.legs[0].start += self.t - job.paused_at
            job.paused_at = None
            self._commands[(robot, job.command_id)].status = CommandStatus.RUNNING
            self._emit("resumed", robot, job.command_id, job.node)
            self.version += 1
        return self._commands[(robot, job.command_id)].reply(ok=True)

    def move_object(
        self, name: str, position: Sequence[float], t: float, yaw: float | None = None
    ) -> dict[str, Any]:
        """Put object `name` at `position` by hand (a person, a test). Refused while a
        robot holds it; a robot approaching it re-plans (and fails ``unreachable`` if it
        can no longer get there). Resets the object's placement count."""
        self.advance(t)
        obj = self.objects.get(name)
        if obj is None:
            return reply(False, "unknown_object")
        if obj.held_by is not None:
            return reply(False, "held")
        if yaw is not None and not math.isfinite(yaw):
            return reply(False, "bad_params")
        try:
            obj.position = vec3(position, "position")
        except SpecificationError:
            return reply(False, "bad_params")
        if yaw is not None:
            obj.yaw = float(yaw)
        obj.placements = 0
        self.version += 1
        for body in self.robots.values():
            job = body.job
            if job is not None and job.object == name and job.stage is Stage.APPROACH:
                self._settle(body)
                legs = plan_approach(body, obj.position, self.t)
                if legs is None:
                    self._end_job(body, CommandStatus.FAILED, "unreachable")
                    continue
                job.legs = deque(legs)
                if job.paused_at is not None:
                    job.paused_at = self.t
        self.advance(t)
        return reply(True, None)

    def command_status(self, robot: str, command_id: str) -> CommandStatus | None:
        """Where `robot`'s command `command_id` is; None when the world never saw it."""
        known = self._commands.get((robot, command_id))
        return None if known is None else known.status

    # -- internals -----------------------------------------------------------------

    def _current(self, robot: str, command_id: str | None) -> tuple[RobotBody | None, dict]:
        body = self.robots.get(robot)
        if body is None:
            return None, reply(False, "unknown_robot")
        job = body.job
        if job is None or (command_id is not None and job.command_id != command_id):
            known = self._commands.get((robot, command_id or ""))
            status = "idle" if known is None else known.status.value
            return body, {
                **reply(False, "not_running"),
                "status": status,
                "command_id": command_id,
            }
        return body, {}

    def _settle(self, body: RobotBody) -> None:
        """Fix the body at its interpolated pose (before re-planning or stopping)."""
        body.base, body.arm = body.pose(self.t)

    def _end_job(
        self, body: RobotBody, status: CommandStatus, reason: str | None
    ) -> dict[str, Any]:
        """End `body`'s job with `status`, putting a held object down at the gripper;
        returns the logged event."""
        job = body.job
        assert job is not None
        self._settle(body)
        if job.holding:
            obj = self.objects[job.object]
            obj.position = body.arm  # type: ignore[assignment]
            obj.held_by = None
        body.job = None
        command = self._commands[(body.name, job.command_id)]
        command.status, command.reason = status, reason
        kind = {CommandStatus.FINISHED: "finished"}.get(status, "failed")
        event = self._emit(
            kind, body.name, job.command_id, job.node, ok=kind == "finished", reason=reason
        )
        self.version += 1
        return event

    def _finish_leg(self, body: RobotBody, end: float) -> None:
        job = body.job
        assert job is not None
        leg = job.legs.popleft()
        body.base, body.arm = leg.base1, leg.arm1
        if job.legs:
            job.legs[0].start = end
            return
        obj = self.objects[job.object]
        spec = body.spec
        if job.stage is Stage.APPROACH:
            if obj.held_by not in (None, body.name):
                self._violation(
                    "double_hold",
                    obj.name,
                    [obj.held_by, body.name],  # type: ignore[list-item]
                    job.command_id,
                    job.node,
                )
                self._end_job(body, CommandStatus.FAILED, "held")
                return
            obj.held_by = body.name
            job.holding = True
            job.stage = Stage.GRASP
            job.legs.append(BodyLeg(Stage.GRASP, spec.grasp_time, *body.still(), start=end))
        elif job.stage is Stage.GRASP:
            legs = plan_moves(body, Stage.CARRY, body.base, body.arm, job.goal)  # type: ignore[arg-type]
            if legs is None:
                self._end_job(body, CommandStatus.FAILED, "unreachable")
                return
            legs[0].start = end
            job.stage = Stage.CARRY
            job.legs.extend(legs)
        elif job.stage is Stage.CARRY:
            job.stage = Stage.RELEASE
            job.legs.append(BodyLeg(Stage.RELEASE, spec.release_time, *body.still(), start=end))
        else:
            obj.held_by = None
            obj.position = job.goal
            obj.placements += 1
            job.holding = False
            if obj.placements > 1:
                self._violation("placed_twice", obj.name, [body.name], job.command_id, job.node)
            self._end_job(body, CommandStatus.FINISHED, None)
            return
        self.version += 1
