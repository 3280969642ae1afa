"""Robot bodies and their motion: a PLACE job is a queue of straight-line legs of
base and gripper, each timed from distances and the profile's speeds."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from teamtree.hardware.profiles import (
    RobotProfileSpec,
    Vec3,
    arm_base_position,
    drive_to_reach,
    rest_position,
)
from teamtree.hardware.world.commands import Stage
from teamtree.hardware.world.vectors import add, dist, lerp, vec3


@dataclass(slots=True)
class BodyLeg:
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
        """(base, gripper) at simulated time `t`, clamped to the leg."""
        f = 1.0 if self.duration <= 0 else min(1.0, max(0.0, (t - self.start) / self.duration))
        return lerp(self.base0, self.base1, f), lerp(self.arm0, self.arm1, f)


@dataclass(slots=True)
class PlaceJob:
    """The PLACE a robot body runs: its object, goal, stage, legs left and lease."""

    command_id: str
    node: str | None
    object: str
    goal: Vec3
    stage: Stage = Stage.APPROACH
    legs: deque[BodyLeg] = field(default_factory=deque)
    paused_at: float | None = None
    holding: bool = False
    lease: float | None = None  #: simulated time the body stops at unless renewed
    token: Any = None  #: the holder's own fencing token (for the record)
    fence: int | None = None  #: the object's fence the world granted this job


@dataclass(slots=True)
class RobotBody:
    """A robot in the world: profile, base pose, gripper position, current job."""

    name: str
    spec: RobotProfileSpec
    base: Vec3
    yaw: float = 0.0
    arm: Vec3 | None = None
    job: PlaceJob | None = None

    def __post_init__(self) -> None:
        self.base = vec3(self.base, f"robot {self.name!r} base")
        if self.arm is None:
            self.arm = rest_position(self.spec, self.base, self.yaw)

    @property
    def shoulder(self) -> Vec3:
        return arm_base_position(self.spec, self.base, self.yaw)

    def pose(self, now: float) -> tuple[Vec3, Vec3]:
        """(base, gripper) at `now`, interpolated along the current motion (a paused
        job stays where it was paused)."""
        job = self.job
        if job is None or not job.legs:
            return self.base, self.arm  # type: ignore[return-value]
        t = now if job.paused_at is None else job.paused_at
        return job.legs[0].at(t)

    def still(self) -> tuple[Vec3, Vec3, Vec3, Vec3]:
        """Leg end points that keep base and gripper where they are (grasp, release)."""
        return self.base, self.base, self.arm, self.arm  # type: ignore[return-value]


def plan_moves(
    body: RobotBody, stage: Stage, base: Vec3, arm: Vec3, target: Vec3
) -> list[BodyLeg] | None:
    """Legs that drive (if needed) and then move the gripper to `target`; None when
    the body cannot reach it."""
    drive = drive_to_reach(body.spec, base, body.yaw, target)
    if drive is None:
        return None
    legs: list[BodyLeg] = []
    spec = body.spec
    distance = math.hypot(*drive)
    if distance > 0:
        base1, arm1 = add(base, drive), add(arm, drive)
        legs.append(BodyLeg(stage, distance / spec.base_speed, base, base1, arm, arm1))
        base, arm = base1, arm1
    legs.append(BodyLeg(stage, dist(arm, target) / spec.arm_speed, base, base, arm, target))
    return legs


def plan_approach(body: RobotBody, target: Vec3, t: float) -> list[BodyLeg] | None:
    """The approach legs from where `body` is to `target`, starting at `t`."""
    legs = plan_moves(body, Stage.APPROACH, body.base, body.arm, target)  # type: ignore[arg-type]
    if legs:
        legs[0].start = t
    return legs
