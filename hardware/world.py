"""The simulated world: objects, goals and one-armed robot bodies (seed 000 §3.1).

Pure: no I/O and no clock reads. Every call takes the simulated time ``t`` (seconds)
and first advances the world to it; time never runs backwards. The world agent maps
wall time to simulated time (``× time_factor``) and serves this over ZeroMQ.

PLACE(object) runs in four stages, each timed from distances and the profile's speeds:

======== =======================================================================
approach drive the base until the object is within reach (mobile bases only), then
         move the gripper to the object: ``d_base / base_speed + d_arm / arm_speed``
grasp    ``grasp_time``; the object is held from the start of this stage
carry    drive (if the goal is out of reach) and move the object to its goal
release  ``release_time``; then the object is at its goal and the gripper stays there
======== =======================================================================

Failure reasons: ``busy`` (another command runs), ``held`` (another robot holds the
object), ``unreachable`` (a fixed base cannot reach object or goal, or a mobile base
would drive more than ``base_travel``), ``cancelled``, ``unknown_robot``,
``unknown_object``, ``unknown_behaviour``, ``no_goal``, ``bad_params``. Violations
(a coordination error made visible): ``double_hold`` when a robot reaches an object
another robot holds, ``placed_twice`` when an object is placed a second time without
having been moved since.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.profiles import (
    RobotProfileSpec,
    Vec3,
    arm_base_position,
    can_place,
    drive_to_reach,
    profile,
    rest_position,
)
from teamtree.planners.tasktree.metrics import ShapePrimitive

GOAL_TOLERANCE = 0.02
"""Metres between an object and its goal for ``at_goal``."""
BEHAVIOURS = ("place",)
"""Behaviour names ``execute`` accepts (case-insensitive)."""
_EVENT_LOG = 10_000


class CommandStatus(enum.StrEnum):
    """Where one command (by ``command_id``) is."""

    RUNNING = "running"  #: accepted and moving
    PAUSED = "paused"  #: accepted, frozen until resumed
    FINISHED = "finished"  #: done; the object is at its goal
    FAILED = "failed"  #: rejected or failed on the way; ``reason`` says why
    CANCELLED = "cancelled"  #: cancelled before finishing (or before it arrived)


class Stage(enum.StrEnum):
    """The stages of PLACE, in order."""

    APPROACH = "approach"
    GRASP = "grasp"
    CARRY = "carry"
    RELEASE = "release"


@dataclass(slots=True)
class WorldObject:
    """A graspable object: shape primitive, pose, goal, who holds it."""

    name: str
    shape: str
    dims: tuple[float, ...]
    position: Vec3
    goal: Vec3 | None = None
    yaw: float = 0.0
    held_by: str | None = None
    placements: int = 0  #: PLACEs finished since the object was last moved by hand

    def __post_init__(self) -> None:
        self.position = _vec3(self.position, f"object {self.name!r} position")
        if self.goal is not None:
            self.goal = _vec3(self.goal, f"object {self.name!r} goal")
        self.dims = tuple(float(d) for d in self.dims)
        self.primitive()  # validates shape and dims

    def primitive(self) -> ShapePrimitive:
        """The grasp pipeline's view of this object. Raises SpecificationError."""
        return ShapePrimitive(self.shape, self.dims, self.position, self.yaw)

    def at_goal(self, tolerance: float = GOAL_TOLERANCE) -> bool:
        return (
            self.goal is not None
            and self.held_by is None
            and _dist(self.position, self.goal) <= tolerance
        )


@dataclass(slots=True)
class _Leg:
    """One straight-line motion of base and gripper (or a pause in place)."""

    stage: Stage
    duration: float
    base0: Vec3
    base1: Vec3
    arm0: Vec3
    arm1: Vec3
    start: float = 0.0

    @property
    def end(self) -> float:
        return self.start + self.duration

    def at(self, t: float) -> tuple[Vec3, Vec3]:
        f = 1.0 if self.duration <= 0 else min(1.0, max(0.0, (t - self.start) / self.duration))
        return _lerp(self.base0, self.base1, f), _lerp(self.arm0, self.arm1, f)


@dataclass(slots=True)
class _Job:
    command_id: str
    node: str | None
    object: str
    goal: Vec3
    stage: Stage = Stage.APPROACH
    legs: deque[_Leg] = field(default_factory=deque)
    paused_at: float | None = None
    holding: bool = False


@dataclass(slots=True)
class RobotBody:
    """A robot in the world: profile, base pose, gripper position, current job."""

    name: str
    spec: RobotProfileSpec
    base: Vec3
    yaw: float = 0.0
    arm: Vec3 | None = None
    job: _Job | None = None

    def __post_init__(self) -> None:
        self.base = _vec3(self.base, f"robot {self.name!r} base")
        if self.arm is None:
            self.arm = rest_position(self.spec, self.base, self.yaw)

    @property
    def shoulder(self) -> Vec3:
        return arm_base_position(self.spec, self.base, self.yaw)


@dataclass(slots=True)
class _Command:
    robot: str
    command_id: str
    node: str | None
    accepted: bool
    status: CommandStatus
    reason: str | None = None
    early_cancel: bool = False  #: cancelled before its execute arrived (not yet answered)


class World:
    """Objects and robot bodies over simulated time. See the module docstring.

    Mutating calls (``execute``, ``cancel``, ``pause``, ``resume``, ``move_object``)
    return a reply map ``{"ok": bool, "reason": str | None, ...}`` and never raise
    for bad requests. Progress is logged as events (``events_since``); violations in
    ``violations``. ``version`` increases on every discrete change.
    """

    def __init__(
        self,
        objects: Iterable[WorldObject],
        robots: Iterable[RobotBody],
        *,
        goal_tolerance: float = GOAL_TOLERANCE,
        t0: float = 0.0,
    ):
        self.objects: dict[str, WorldObject] = {o.name: o for o in objects}
        self.robots: dict[str, RobotBody] = {r.name: r for r in robots}
        self.goal_tolerance = goal_tolerance
        self.t = float(t0)
        self.version = 0
        self.violations: list[dict[str, Any]] = []
        self._events: deque[dict[str, Any]] = deque(maxlen=_EVENT_LOG)
        self._seq = 0
        self._commands: dict[tuple[str, str], _Command] = {}

    @classmethod
    def from_spec(
        cls,
        objects: Mapping[str, Mapping[str, Any]],
        robots: Mapping[str, Mapping[str, Any]],
        **kwargs: Any,
    ) -> World:
        """Build from plain data, as in a config::

            objects = {"cup": {"shape": "cylinder", "dims": [0.04, 0.1],
                               "position": [x, y, z], "goal": [x, y, z], "yaw": 0.0}}
            robots = {"pr2": {"profile": "pr2", "base": [x, y, z], "yaw": 0.0}}

        Raises SpecificationError naming the object or robot.
        """
        objs = [
            WorldObject(
                name,
                str(o.get("shape", "")),
                tuple(o.get("dims", ())),
                o.get("position"),  # type: ignore[arg-type]
                o.get("goal"),
                float(o.get("yaw", 0.0)),
            )
            for name, o in objects.items()
        ]
        bodies = [
            RobotBody(
                name, profile(r.get("profile", name)), r.get("base"), float(r.get("yaw", 0.0))
            )
            for name, r in robots.items()
        ]
        return cls(objs, bodies, **kwargs)

    # -- time ----------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Run every job up to simulated time `t` (stage ends in time order)."""
        t = max(self.t, float(t))
        while True:
            due = [
                (r.job.legs[0].end, r.name)
                for r in self.robots.values()
                if r.job is not None and r.job.paused_at is None and r.job.legs
            ]
            if not due:
                break
            end, name = min(due)
            if end > t:
                break
            self.t = max(self.t, end)
            self._finish_leg(self.robots[name], end)
        self.t = t

    @property
    def moving(self) -> bool:
        """True while some robot is running (not paused) a job."""
        return any(r.job is not None and r.job.paused_at is None for r in self.robots.values())

    # -- commands ------------------------------------------------------------------

    def execute(
        self,
        robot: str,
        command_id: str,
        node: str | None,
        behaviour: str,
        params: Mapping[str, Any] | None,
        t: float,
    ) -> dict[str, Any]:
        """Start `behaviour` on `robot`. Idempotent per (robot, command_id): a repeat
        returns the first answer's ``ok`` with the command's current status."""
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
                return self._command_reply(known, ok=False)
            return {**self._command_reply(known), "duplicate": True}
        body = self.robots.get(robot)
        params = dict(params or {})
        reason: str | None = None
        obj: WorldObject | None = None
        goal: Vec3 | None = None
        if body is None:
            reason = "unknown_robot"
        elif body.job is not None:
            reason = "busy"
        elif str(behaviour).lower() not in BEHAVIOURS:
            reason = "unknown_behaviour"
        else:
            obj = self.objects.get(params.get("object"))  # type: ignore[arg-type]
            if obj is None:
                reason = "unknown_object"
            else:
                try:
                    goal = _vec3(params["goal"], "goal") if "goal" in params else obj.goal
                except SpecificationError:
                    reason = "bad_params"
                if reason is None and goal is None:
                    reason = "no_goal"
                elif reason is None and obj.held_by not in (None, robot):
                    reason = "held"
                elif reason is None and not self._reachable(body, obj.position, goal):
                    reason = "unreachable"
        if reason is not None or body is None or obj is None or goal is None:
            command = _Command(robot, command_id, node, False, CommandStatus.FAILED, reason)
            self._commands[key] = command
            self._emit("failed", robot, command_id, node, ok=False, reason=reason)
            self.version += 1
            return self._command_reply(command)
        job = _Job(command_id, node, obj.name, goal)
        job.legs = deque(self._plan_approach(body, obj.position, self.t) or ())
        body.job = job
        self._commands[key] = _Command(robot, command_id, node, True, CommandStatus.RUNNING)
        self._emit("started", robot, command_id, node)
        self.version += 1
        self.advance(t)  # zero-length legs finish at once
        return self._command_reply(self._commands[key], ok=True)

    def cancel(self, robot: str, command_id: str | None, t: float) -> dict[str, Any]:
        """Cancel `command_id` (None: whatever `robot` runs). A held object is put
        down where the gripper is. Idempotent; an unknown id is remembered, so a
        late ``execute`` with it fails with ``cancelled``."""
        self.advance(t)
        body = self.robots.get(robot)
        if body is None:
            return _reply(False, "unknown_robot")
        if command_id is None:
            if body.job is None:
                return {"ok": True, "reason": None, "status": "idle", "command_id": None}
            command_id = body.job.command_id
        key = (robot, command_id)
        known = self._commands.get(key)
        if known is None:
            self._commands[key] = _Command(
                robot, command_id, None, False, CommandStatus.CANCELLED, "cancelled", True
            )
            return self._command_reply(self._commands[key], ok=True)
        if body.job is not None and body.job.command_id == command_id:
            self._end_job(body, CommandStatus.CANCELLED, "cancelled")
        return self._command_reply(known, ok=True)

    def pause(self, robot: str, command_id: str | None, t: float) -> dict[str, Any]:
        """Freeze `robot`'s running job (must be `command_id` when given). Idempotent."""
        self.advance(t)
        body, reply = self._current(robot, command_id)
        if body is None or body.job is None:
            return reply
        job = body.job
        if job.paused_at is None:
            job.paused_at = self.t
            self._commands[(robot, job.command_id)].status = CommandStatus.PAUSED
            self._emit("paused", robot, job.command_id, job.node)
            self.version += 1
        return self._command_reply(self._commands[(robot, job.command_id)], ok=True)

    def resume(self, robot: str, command_id: str | None, t: float) -> dict[str, Any]:
        """Continue `robot`'s paused job (must be `command_id` when given). Idempotent."""
        self.advance(t)
        body, reply = self._current(robot, command_id)
        if body is None or body.job is None:
            return reply
        job = body.job
        if job.paused_at is not None:
            if job.legs:
                job.legs[0].start += self.t - job.paused_at
            job.paused_at = None
            self._commands[(robot, job.command_id)].status = CommandStatus.RUNNING
            self._emit("resumed", robot, job.command_id, job.node)
            self.version += 1
        return self._command_reply(self._commands[(robot, job.command_id)], ok=True)

    def move_object(
        self, name: str, position: Sequence[float], t: float, yaw: float | None = None
    ) -> dict[str, Any]:
        """Put object `name` at `position` by hand (a person, a test). Refused while a
        robot holds it; a robot approaching it re-plans (and fails ``unreachable`` if it
        can no longer get there). Resets the object's placement count."""
        self.advance(t)
        obj = self.objects.get(name)
        if obj is None:
            return _reply(False, "unknown_object")
        if obj.held_by is not None:
            return _reply(False, "held")
        try:
            obj.position = _vec3(position, "position")
        except SpecificationError:
            return _reply(False, "bad_params")
        if yaw is not None:
            obj.yaw = float(yaw)
        obj.placements = 0
        self.version += 1
        for body in self.robots.values():
            job = body.job
            if job is not None and job.object == name and job.stage is Stage.APPROACH:
                self._settle(body)
                legs = self._plan_approach(body, obj.position, self.t)
                if legs is None:
                    self._end_job(body, CommandStatus.FAILED, "unreachable")
                    continue
                job.legs = deque(legs)
                if job.paused_at is not None:
                    job.paused_at = self.t
        self.advance(t)
        return _reply(True, None)

    # -- views ---------------------------------------------------------------------

    def robot_pose(self, robot: str) -> tuple[Vec3, Vec3]:
        """(base, gripper) of `robot` now, interpolated along its current motion."""
        body = self.robots[robot]
        job = body.job
        if job is None or not job.legs:
            return body.base, body.arm  # type: ignore[return-value]
        t = self.t if job.paused_at is None else job.paused_at
        return job.legs[0].at(t)

    def object_position(self, name: str) -> Vec3:
        """Where object `name` is now (in the gripper while held)."""
        obj = self.objects[name]
        if obj.held_by is not None:
            return self.robot_pose(obj.held_by)[1]
        return obj.position

    def object_view(self, name: str) -> dict[str, Any]:
        obj = self.objects[name]
        return {
            "shape": obj.shape,
            "dims": list(obj.dims),
            "position": _out(self.object_position(name)),
            "yaw": round(obj.yaw, 4),
            "goal": None if obj.goal is None else _out(obj.goal),
            "at_goal": obj.at_goal(self.goal_tolerance),
            "held_by": obj.held_by,
        }

    def robot_view(self, robot: str) -> dict[str, Any]:
        body = self.robots[robot]
        base, arm = self.robot_pose(robot)
        job = body.job
        return {
            "name": robot,
            "profile": body.spec.name,
            "arm": _out(arm),
            "base": _out(base),
            "yaw": round(body.yaw, 4),
            "busy": None if job is None else job.command_id,
            "node": None if job is None else job.node,
            "paused": job is not None and job.paused_at is not None,
            "holding": None if job is None or not job.holding else job.object,
        }

    def observe(self, robot: str, t: float, since: int = 0) -> dict[str, Any]:
        """What `robot`'s driver sees at `t`, plus its events after sequence `since`."""
        self.advance(t)
        if robot not in self.robots:
            return _reply(False, "unknown_robot")
        return {
            "ok": True,
            "reason": None,
            "t": round(self.t, 4),
            "robot": self.robot_view(robot),
            "objects": {name: self.object_view(name) for name in self.objects},
            "events": self.events_since(since, robot),
            "seq": self._seq,
        }

    def state(self, t: float) -> dict[str, Any]:
        """The whole world at `t` (the ``world.state`` body)."""
        self.advance(t)
        return {
            "t": round(self.t, 4),
            "objects": {name: self.object_view(name) for name in self.objects},
            "robots": {name: self.robot_view(name) for name in self.robots},
            "violations": len(self.violations),
        }

    def info(self) -> dict[str, Any]:
        """Static description: robots with their profiles and start poses, objects."""
        return {
            "robots": {
                name: {"profile": b.spec.to_dict(), "base": list(b.base), "yaw": b.yaw}
                for name, b in self.robots.items()
            },
            "objects": sorted(self.objects),
            "goal_tolerance": self.goal_tolerance,
        }

    def events_since(self, seq: int, robot: str | None = None) -> list[dict[str, Any]]:
        """Logged events with sequence number > `seq` (optionally for one robot only)."""
        return [
            dict(e)
            for e in self._events
            if e["seq"] > seq and (robot is None or e["robot"] == robot)
        ]

    @property
    def seq(self) -> int:
        """Sequence number of the latest event."""
        return self._seq

    def command_status(self, robot: str, command_id: str) -> CommandStatus | None:
        known = self._commands.get((robot, command_id))
        return None if known is None else known.status

    # -- internals -----------------------------------------------------------------

    def _current(self, robot: str, command_id: str | None) -> tuple[RobotBody | None, dict]:
        body = self.robots.get(robot)
        if body is None:
            return None, _reply(False, "unknown_robot")
        job = body.job
        if job is None or (command_id is not None and job.command_id != command_id):
            known = self._commands.get((robot, command_id or ""))
            status = "idle" if known is None else known.status.value
            return body, {
                **_reply(False, "not_running"),
                "status": status,
                "command_id": command_id,
            }
        return body, {}

    def _command_reply(self, command: _Command, ok: bool | None = None) -> dict[str, Any]:
        return {
            "ok": command.accepted if ok is None else ok,
            "reason": command.reason,
            "status": command.status.value,
            "command_id": command.command_id,
        }

    def _emit(
        self,
        kind: str,
        robot: str,
        command_id: str,
        node: str | None,
        *,
        ok: bool = True,
        reason: str | None = None,
    ) -> None:
        self._seq += 1
        self._events.append(
            {
                "seq": self._seq,
                "t": round(self.t, 4),
                "kind": kind,
                "robot": robot,
                "command_id": command_id,
                "node": node,
                "ok": ok,
                "reason": reason,
            }
        )

    def _violation(self, kind: str, obj: str, robots: list[str], job: _Job) -> None:
        self.violations.append(
            {
                "seq": len(self.violations) + 1,
                "t": round(self.t, 4),
                "kind": kind,
                "object": obj,
                "robots": robots,
                "command_id": job.command_id,
                "node": job.node,
            }
        )

    def _reach_drive(self, body: RobotBody, base: Vec3, target: Vec3) -> Vec3 | None:
        return drive_to_reach(body.spec, base, body.yaw, target)

    def _reachable(self, body: RobotBody, position: Vec3, goal: Vec3) -> bool:
        return can_place(body.spec, body.base, body.yaw, position, goal)

    def _moves(
        self, body: RobotBody, stage: Stage, base: Vec3, arm: Vec3, target: Vec3
    ) -> list[_Leg] | None:
        """Legs that drive (if needed) and then move the gripper to `target`."""
        drive = self._reach_drive(body, base, target)
        if drive is None:
            return None
        legs: list[_Leg] = []
        spec = body.spec
        distance = math.hypot(*drive)
        if distance > 0:
            base1, arm1 = _add(base, drive), _add(arm, drive)
            legs.append(_Leg(stage, distance / spec.base_speed, base, base1, arm, arm1))
            base, arm = base1, arm1
        legs.append(_Leg(stage, _dist(arm, target) / spec.arm_speed, base, base, arm, target))
        return legs

    def _plan_approach(self, body: RobotBody, target: Vec3, t: float) -> list[_Leg] | None:
        legs = self._moves(body, Stage.APPROACH, body.base, body.arm, target)  # type: ignore[arg-type]
        if legs:
            legs[0].start = t
        return legs

    def _settle(self, body: RobotBody) -> None:
        """Fix the body at its interpolated pose (before re-planning or stopping)."""
        base, arm = self.robot_pose(body.name)
        body.base, body.arm = base, arm

    def _end_job(self, body: RobotBody, status: CommandStatus, reason: str | None) -> None:
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
        self._emit(kind, body.name, job.command_id, job.node, ok=kind == "finished", reason=reason)
        self.version += 1

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
                self._violation("double_hold", obj.name, [obj.held_by, body.name], job)  # type: ignore[list-item]
                self._end_job(body, CommandStatus.FAILED, "held")
                return
            obj.held_by = body.name
            job.holding = True
            job.stage = Stage.GRASP
            job.legs.append(_Leg(Stage.GRASP, spec.grasp_time, *_still(body), start=end))
        elif job.stage is Stage.GRASP:
            legs = self._moves(body, Stage.CARRY, body.base, body.arm, job.goal)  # type: ignore[arg-type]
            if legs is None:
                self._end_job(body, CommandStatus.FAILED, "unreachable")
                return
            legs[0].start = end
            job.stage = Stage.CARRY
            job.legs.extend(legs)
        elif job.stage is Stage.CARRY:
            job.stage = Stage.RELEASE
            job.legs.append(_Leg(Stage.RELEASE, spec.release_time, *_still(body), start=end))
        else:
            obj.held_by = None
            obj.position = job.goal
            obj.placements += 1
            job.holding = False
            if obj.placements > 1:
                self._violation("placed_twice", obj.name, [body.name], job)
            self._end_job(body, CommandStatus.FINISHED, None)
            return
        self.version += 1


def _still(body: RobotBody) -> tuple[Vec3, Vec3, Vec3, Vec3]:
    return body.base, body.base, body.arm, body.arm  # type: ignore[return-value]


def _reply(ok: bool, reason: str | None) -> dict[str, Any]:
    return {"ok": ok, "reason": reason}


def _vec3(value: Any, what: str) -> Vec3:
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        raise SpecificationError(f"{what} {value!r} is not three numbers") from None
    if not all(math.isfinite(v) for v in (x, y, z)):
        raise SpecificationError(f"{what} {value!r} is not finite")
    return (x, y, z)


def _dist(a: Sequence[float], b: Sequence[float]) -> float:
    return math.dist(a, b)


def _add(a: Sequence[float], b: Sequence[float]) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _lerp(a: Vec3, b: Vec3, f: float) -> Vec3:
    return (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f)


def _out(v: Sequence[float]) -> list[float]:
    return [round(float(x), 4) for x in v]
