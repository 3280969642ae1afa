"""The driver's ``observation`` body on ``<driver>/observation`` (docs/protocol.md,
"Simulated world and drivers") as declared msgspec Structs: what the body sees, the
robot's pose and job, the objects, and (with people in the world) their tracked hands;
and the world's ``world.state``, made of the same views.

Drivers of every sort publish it (the simulated one, the VDA 5050 bridge, third-party
ones), so only what a robot needs is required: ``t``, ``robot.arm`` and each object's
``shape``, ``dims`` and ``position``; the rest has defaults, and unknown keys (e.g. the
VDA 5050 bridge's ``connection``, ``battery``) are ignored. ``robot.busy`` is the
running command's id; a driver that does not know it may send a bool (the VDA 5050
bridge does), which counts as "no command id". The robot decodes each observation
once with ``decode_observation``, which raises ObservationWireError (a ``ValueError``
naming the field's path, e.g. ``$.objects[...].position``) on a malformed body.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from teamtree.agents.runtime.wire_decode import decode_body

Vec3 = tuple[float, float, float]


class ObservationWireError(ValueError):
    """An ``observation`` body that does not match its declared type."""


class RobotView(Struct, frozen=True):
    """The body: gripper (``arm``) and ``base`` positions, heading, and its job: the
    command it runs (``busy``), the tree node, the object it works on and holds."""

    arm: Vec3
    name: str | None = None
    profile: str | None = None
    base: Vec3 | None = None
    yaw: float = 0.0
    busy: str | bool | None = None
    paused: bool = False
    node: str | None = None
    holding: str | None = None
    object: str | None = None

    @property
    def command_id(self) -> str | None:
        """The id of the command the body runs (None: idle, or not said)."""
        return self.busy if isinstance(self.busy, str) else None


class ObjectView(Struct, frozen=True):
    """An object: primitive ``shape`` with ``dims``, pose, its goal (if any), whether
    it is there, and who holds it (a robot or a hand; null: nobody)."""

    shape: str
    dims: tuple[float, ...]
    position: Vec3
    yaw: float = 0.0
    goal: Vec3 | None = None
    at_goal: bool = False
    held_by: str | None = None


class HandView(Struct, frozen=True):
    """A tracked human hand: its latest (noisy) position, what it holds and reaches
    for, and its recent samples as ``[t, x, y, z]`` rows."""

    position: Vec3
    name: str | None = None
    holding: str | None = None
    busy: str | None = None
    target: str | None = None
    track: list[tuple[float, float, float, float]] = []


class ObservationBody(Struct, frozen=True):
    """The ``observation`` body: ``t`` is the body's time (simulated seconds for the
    simulated world, UTC seconds for a real one); ``hands`` only with people.

    ``full`` false: ``objects`` holds only those that changed since the driver's last
    full observation (a keyframe), to be merged over what the receiver has
    (``merge_objects``); a driver that omits it sends every object each time."""

    t: float
    robot: RobotView
    objects: dict[str, ObjectView]
    hands: dict[str, HandView] = {}
    full: bool = True


def merge_objects(
    known: dict[str, ObjectView] | None, obs: ObservationBody
) -> dict[str, ObjectView] | None:
    """The objects as `obs` shows them, over `known` (what earlier observations
    showed): a full observation replaces them, a delta is merged over them. None while
    only deltas arrived since the receiver started (it waits for a keyframe)."""
    if obs.full:
        return dict(obs.objects)
    if known is None:
        return None
    known.update(obs.objects)
    return known


def decode_observation(body: Any) -> ObservationBody:
    """An ``observation`` body; raises ObservationWireError naming the field."""
    return decode_body(body, ObservationBody, ObservationWireError, "observation")


class WorldStateBody(Struct, frozen=True):
    """``world.state`` on ``<world>/state`` (retained): the whole simulated world in the
    same views as an observation, every robot's, and the count of violations so far.
    Declared here, beside the views, so observers read it without loading the world
    service."""

    t: float
    objects: dict[str, ObjectView]
    robots: dict[str, RobotView]
    violations: int
    hands: dict[str, HandView] = {}


def decode_world_state(body: Any) -> WorldStateBody:
    """A ``world.state`` body; raises ObservationWireError naming the field."""
    return decode_body(body, WorldStateBody, ObservationWireError, "world.state")
