"""Arm-robot body profiles for the simulated world (seed 000 §2.4.1, §3.1): PR2 and Baxter.

Figures are rounded from the robots' public specifications; where a paper gives no
number, the value is a plausible choice and says so. ``RobotProfileSpec`` is named
apart from the capability ``RobotProfile`` of seed 002 (``robot_types``).

| name   | base   | arm offset (m)   | reach | grip | grasps   | arm | base | grasp | release |
|--------|--------|------------------|-------|------|----------|-----|------|-------|---------|
| pr2    | mobile | 0, -0.19, 0.75   | 0.90  | 0.09 | sideways | .25 | .30  | 2.0   | 1.0     |
| baxter | fixed  | 0.06, -0.26, 1.0 | 1.04  | 0.14 | top_down | .30 | -    | 2.0   | 1.0     |

Reach and gripper width in metres, speeds in m/s, grasp and release in simulated s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.geometry import ArmModel, GraspOrientation

Vec3 = tuple[float, float, float]


def _vec3(value: Any, what: str) -> Vec3:
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        raise SpecificationError(f"{what} {value!r} is not three numbers") from None
    return (x, y, z)


@dataclass(frozen=True, slots=True)
class RobotProfileSpec:
    """What a one-armed robot body is, for the world and the grasp filters.

    ``arm_offset``: arm base (shoulder) from the robot base, in the robot frame (x
    forward, y left, z up), metres. ``reach``: how far from the arm base the gripper
    gets. ``base_travel``: how far a mobile base may drive for one reach (0 when fixed).
    ``rest``: the gripper's start position relative to the arm base (robot frame).
    Speeds in m/s; ``grasp_time`` / ``release_time`` in seconds of simulated time.
    """

    name: str
    arm_offset: Vec3
    reach: float
    gripper_max_width: float
    orientation: GraspOrientation
    mobile_base: bool
    arm_speed: float
    base_speed: float
    grasp_time: float
    release_time: float
    base_travel: float = 0.0
    tolerance_deg: float = 20.0
    rest: Vec3 = (0.35, 0.0, -0.15)

    def __post_init__(self) -> None:
        object.__setattr__(self, "orientation", GraspOrientation(self.orientation))
        object.__setattr__(self, "arm_offset", _vec3(self.arm_offset, "arm_offset"))
        object.__setattr__(self, "rest", _vec3(self.rest, "rest"))
        if min(self.reach, self.gripper_max_width, self.arm_speed) <= 0:
            raise SpecificationError(f"profile {self.name!r}: reach, gripper, arm speed must be >0")
        if self.mobile_base and (self.base_speed <= 0 or self.base_travel <= 0):
            raise SpecificationError(
                f"profile {self.name!r}: a mobile base needs base_speed and base_travel > 0"
            )
        if self.grasp_time < 0 or self.release_time < 0:
            raise SpecificationError(f"profile {self.name!r}: grasp/release times must be >= 0")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (msgpack/JSON-safe), as published in driver factsheets."""
        data = asdict(self)
        data["orientation"] = str(self.orientation)
        data["arm_offset"] = list(self.arm_offset)
        data["rest"] = list(self.rest)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RobotProfileSpec:
        """Inverse of ``to_dict``; raises SpecificationError on a malformed map."""
        try:
            return cls(**dict(data))
        except (TypeError, ValueError) as exc:
            raise SpecificationError(f"not a robot profile: {exc}") from None


PR2 = RobotProfileSpec(
    name="pr2",
    arm_offset=(0.0, -0.19, 0.75),  # right shoulder over the base, torso half up
    reach=0.90,
    gripper_max_width=0.09,
    orientation=GraspOrientation.SIDEWAYS,
    mobile_base=True,
    arm_speed=0.25,
    base_speed=0.30,
    grasp_time=2.0,
    release_time=1.0,
    base_travel=1.5,
)
BAXTER = RobotProfileSpec(
    name="baxter",
    arm_offset=(0.06, -0.26, 1.0),  # right shoulder on the pedestal
    reach=1.04,
    gripper_max_width=0.14,  # electric gripper with the wide finger set
    orientation=GraspOrientation.TOP_DOWN,
    mobile_base=False,
    arm_speed=0.30,
    base_speed=0.0,
    grasp_time=2.0,
    release_time=1.0,
)

PROFILES: dict[str, RobotProfileSpec] = {p.name: p for p in (PR2, BAXTER)}


def profile(name: str) -> RobotProfileSpec:
    """The built-in profile `name` (``"pr2"``, ``"baxter"``); raises SpecificationError
    listing the known names."""
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(PROFILES))
        message = f"unknown robot profile {name!r}; expected one of: {known}"
        raise SpecificationError(message) from None


def rotate_yaw(v: Sequence[float], yaw: float) -> Vec3:
    """`v` rotated by `yaw` radians about the vertical axis."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * v[0] - s * v[1], s * v[0] + c * v[1], float(v[2]))


def arm_base_position(spec: RobotProfileSpec, base: Sequence[float], yaw: float = 0.0) -> Vec3:
    """World position of the arm base (shoulder) for the robot base at `base`, `yaw`."""
    off = rotate_yaw(spec.arm_offset, yaw)
    return (base[0] + off[0], base[1] + off[1], base[2] + off[2])


def rest_position(spec: RobotProfileSpec, base: Sequence[float], yaw: float = 0.0) -> Vec3:
    """World position of the gripper at rest for the robot base at `base`, `yaw`."""
    shoulder = arm_base_position(spec, base, yaw)
    off = rotate_yaw(spec.rest, yaw)
    return (shoulder[0] + off[0], shoulder[1] + off[1], shoulder[2] + off[2])


APPROACH_MARGIN = 0.95
"""A mobile base drives until the target is this fraction of the reach away."""


def drive_to_reach(
    spec: RobotProfileSpec, base: Sequence[float], yaw: float, target: Sequence[float]
) -> Vec3 | None:
    """How far the base at `base` must drive (x, y, 0) to bring `target` within reach;
    (0, 0, 0) when it already is, None when it cannot: a fixed base, a target too high
    or low, or a drive longer than ``base_travel``. The world's rule, exactly."""
    shoulder = arm_base_position(spec, base, yaw)
    d = [target[i] - shoulder[i] for i in range(3)]
    if math.hypot(*d) <= spec.reach + 1e-9:
        return (0.0, 0.0, 0.0)
    if not spec.mobile_base or abs(d[2]) >= spec.reach:
        return None
    horizontal = math.hypot(d[0], d[1])
    drive = horizontal - APPROACH_MARGIN * math.sqrt(spec.reach**2 - d[2] ** 2)
    if drive > spec.base_travel + 1e-9:
        return None
    return (d[0] / horizontal * drive, d[1] / horizontal * drive, 0.0)


def can_place(
    spec: RobotProfileSpec,
    base: Sequence[float],
    yaw: float,
    position: Sequence[float],
    goal: Sequence[float],
) -> bool:
    """Can the robot at `base`, `yaw` PLACE an object from `position` to `goal`? (The
    world answers ``unreachable`` exactly when this is False.)"""
    first = drive_to_reach(spec, base, yaw, position)
    if first is None:
        return False
    moved = (base[0] + first[0], base[1] + first[1], base[2])
    return drive_to_reach(spec, moved, yaw, goal) is not None


def arm_model(
    spec: RobotProfileSpec | str, base_pose: Sequence[float], yaw: float | None = None
) -> ArmModel:
    """The grasp-filter ``ArmModel`` of `spec` with its base at `base_pose`.

    `base_pose` is ``(x, y, z)`` or ``(x, y, z, yaw)``; `yaw` (radians) overrides the
    fourth value. Raises SpecificationError for an unknown profile name or bad pose.
    """
    spec = profile(spec) if isinstance(spec, str) else spec
    if len(base_pose) not in (3, 4):
        raise SpecificationError(f"base pose {base_pose!r} is not (x, y, z) or (x, y, z, yaw)")
    if yaw is None:
        yaw = float(base_pose[3]) if len(base_pose) == 4 else 0.0
    return ArmModel(
        base_position=arm_base_position(spec, base_pose, yaw),
        reach=spec.reach,
        gripper_max_width=spec.gripper_max_width,
        orientation=spec.orientation,
        tolerance_deg=spec.tolerance_deg,
        mobile_base=spec.mobile_base,
        base_travel=spec.base_travel if spec.mobile_base else 0.0,
    )
