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

Human hands (seed 000 §2.3, §3.2.1) are bodies too: ``hand_reach`` moves a hand
along a curved path (a quadratic Bézier arc lifted by ``lift`` × distance and bowed
sideways by a random ``path_noise`` × distance) at ``speed`` to an object, grasps it
(``grasp_time``) and either holds it (``then="hold"``) or carries it to its goal and
releases it (``then="place"``); ``hand_place`` finishes a held object, ``hand_move``
moves an empty hand, ``hand_cancel`` stops it (putting down what it holds). The world
samples every hand every ``hand_sample_s`` simulated seconds with Gaussian tracking
noise (``noise``, metres) — what a camera tracking the hand would report — and
observations carry the recent track.

Leases (fencing at the body, docs/protocol.md "Leases"): ``execute`` may carry a
``lease`` (simulated time by which the body stops unless renewed) and a fencing
``token`` (the holder's claim stamp, any ordered value). ``renew`` moves the deadline
of the running command on. When a deadline passes the body stops by itself, puts
down what it holds where the gripper is, and fails the command ``lease_expired`` (the
event says where the object was left). The world remembers the highest token used per
object: an ``execute`` or ``renew`` with an older token is refused ``fenced``; one whose
deadline already passed is refused ``lease_expired``.

Failure reasons: ``busy`` (another command runs), ``held`` (another robot holds the
object), ``unreachable`` (a fixed base cannot reach object or goal, or a mobile base
would drive more than ``base_travel``), ``cancelled``, ``unknown_robot``,
``unknown_object``, ``unknown_behaviour``, ``no_goal``, ``bad_params``, ``unknown_hand``,
``not_holding``, ``moved`` (the object left the place a hand reached for). Violations
(a coordination error made visible): ``double_hold`` when a robot or hand reaches an
object another robot or hand holds, ``placed_twice`` when an object is placed a second time without
having been moved since, ``double_run`` when a robot starts a behaviour on an object
another robot's unfinished command (running or paused) is about.
"""

from __future__ import annotations

import enum
import itertools
import math
import random
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.geometry import ShapePrimitive
from teamtree.hardware.profiles import (
    RobotProfileSpec,
    Vec3,
    arm_base_position,
    can_place,
    drive_to_reach,
    profile,
    rest_position,
)

GOAL_TOLERANCE = 0.02
"""Metres between an object and its goal for ``at_goal``."""
BEHAVIOURS = ("place",)
"""Behaviour names ``execute`` accepts (case-insensitive)."""
_EVENT_LOG = 10_000
HAND_SAMPLE_S = 0.05
"""Simulated seconds between tracked hand samples."""
_TRACK_KEEP = 200
HAND_THEN = ("place", "hold")
"""What ``hand_reach`` does once the object is grasped."""


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
    lease: float | None = None  #: simulated time the body stops at unless renewed
    token: Any = None  #: the holder's fencing token


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
class _HandLeg:
    """One hand motion along a quadratic Bézier arc p0 → p1 (control point ``ctrl``)."""

    stage: Stage
    duration: float
    p0: Vec3
    p1: Vec3
    ctrl: Vec3
    start: float = 0.0

    @property
    def end(self) -> float:
        return self.start + self.duration

    def at(self, t: float) -> Vec3:
        f = 1.0 if self.duration <= 0 else min(1.0, max(0.0, (t - self.start) / self.duration))
        a, b, c = (1 - f) ** 2, 2 * (1 - f) * f, f * f
        return (
            a * self.p0[0] + b * self.ctrl[0] + c * self.p1[0],
            a * self.p0[1] + b * self.ctrl[1] + c * self.p1[1],
            a * self.p0[2] + b * self.ctrl[2] + c * self.p1[2],
        )


@dataclass(slots=True)
class _HandJob:
    command_id: str
    object: str | None
    goal: Vec3 | None
    then: str
    stage: Stage = Stage.APPROACH
    legs: deque[_HandLeg] = field(default_factory=deque)
    holding: bool = False


@dataclass(slots=True)
class HumanHand:
    """A person's hand in the world: rest pose, speed (m/s), tracking noise (m)."""

    name: str
    rest: Vec3
    speed: float = 0.3
    noise: float = 0.0
    path_noise: float = 0.0
    lift: float = 0.15
    grasp_time: float = 0.5
    release_time: float = 0.3
    position: Vec3 | None = None
    job: _HandJob | None = None
    holding: str | None = None  #: held after a finished ``then="hold"`` reach
    track: deque[tuple[float, float, float, float]] = field(
        default_factory=lambda: deque(maxlen=_TRACK_KEEP)
    )
    next_sample: float = 0.0

    def __post_init__(self) -> None:
        self.rest = _vec3(self.rest, f"hand {self.name!r} rest")
        if self.position is None:
            self.position = self.rest
        if self.speed <= 0 or self.noise < 0 or self.path_noise < 0:
            raise SpecificationError(f"hand {self.name!r}: speed > 0, noise >= 0 required")


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
        hands: Iterable[HumanHand] = (),
        goal_tolerance: float = GOAL_TOLERANCE,
        t0: float = 0.0,
        seed: int = 0,
        hand_sample_s: float = HAND_SAMPLE_S,
    ):
        self.objects: dict[str, WorldObject] = {o.name: o for o in objects}
        self.robots: dict[str, RobotBody] = {r.name: r for r in robots}
        self.hands: dict[str, HumanHand] = {h.name: h for h in hands}
        clash = set(self.hands) & set(self.robots)
        if clash:
            raise SpecificationError(f"hand and robot share the name {sorted(clash)[0]!r}")
        self.hand_sample_s = float(hand_sample_s)
        self._rng = random.Random(seed)
        for hand in self.hands.values():
            hand.next_sample = float(t0)
        self.goal_tolerance = goal_tolerance
        self.t = float(t0)
        self.version = 0
        self.violations: list[dict[str, Any]] = []
        self._events: deque[dict[str, Any]] = deque(maxlen=_EVENT_LOG)
        self._seq = 0
        self._commands: dict[tuple[str, str], _Command] = {}
        self._fence: dict[str, Any] = {}  # object -> highest fencing token accepted
        # object name -> (the fields its view was made from, the view)
        self._views: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}

    @classmethod
    def from_spec(
        cls,
        objects: Mapping[str, Mapping[str, Any]],
        robots: Mapping[str, Mapping[str, Any]],
        hands: Mapping[str, Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> World:
        """Build from plain data, as in a config::

            objects = {"cup": {"shape": "cylinder", "dims": [0.04, 0.1],
                               "position": [x, y, z], "goal": [x, y, z], "yaw": 0.0}}
            robots = {"pr2": {"profile": "pr2", "base": [x, y, z], "yaw": 0.0}}
            hands = {"alice": {"rest": [x, y, z], "speed": 0.3, "noise": 0.005,
                               "path_noise": 0.1, "lift": 0.15, "grasp_time": 0.5,
                               "release_time": 0.3}}

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
        keys = ("speed", "noise", "path_noise", "lift", "grasp_time", "release_time")
        people = [
            HumanHand(
                name,
                h.get("rest"),
                **{k: float(h[k]) for k in keys if k in h},  # type: ignore[arg-type]
            )
            for name, h in (hands or {}).items()
        ]
        return cls(objs, bodies, hands=people, **kwargs)

    # -- time ----------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Run every job up to simulated time `t` (stage ends in time order)."""
        t = max(self.t, float(t))
        while True:
            due = [
                (r.job.legs[0].end, r.name)
                for r in self.robots.values()
                if r.job is not None and r.job.paused_at is None and r.job.legs
            ] + [(h.job.legs[0].end, h.name) for h in self.hands.values() if h.job and h.job.legs]
            leases = [
                (r.job.lease, r.name)
                for r in self.robots.values()
                if r.job is not None and r.job.lease is not None
            ]
            if not due and not leases:
                break
            end, name = min(due + leases)
            if end > t:
                break
            self._sample_hands(end)
            self.t = max(self.t, end)
            if (end, name) in leases and (end, name) not in due:
                self._lapse(self.robots[name], end)
            elif name in self.hands:
                self._finish_hand_leg(self.hands[name], end)
            else:
                self._finish_leg(self.robots[name], end)
        self._sample_hands(t)
        self.t = t

    @property
    def moving(self) -> bool:
        """True while some robot is running (not paused) a job, or a hand moves."""
        return any(
            r.job is not None and r.job.paused_at is None for r in self.robots.values()
        ) or any(h.job is not None for h in self.hands.values())

    # -- commands ------------------------------------------------------------------

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
        `lease` the body stops at that simulated time unless renewed; `token` fences
        the object (see the module docstring)."""
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
        elif lease is not None and lease <= self.t:
            reason = "lease_expired"  # a command that waited out its lease is void
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
                elif reason is None and not self._fence_ok(obj.name, token):
                    reason = "fenced"
        if reason is not None or body is None or obj is None or goal is None:
            command = _Command(robot, command_id, node, False, CommandStatus.FAILED, reason)
            self._commands[key] = command
            self._emit("failed", robot, command_id, node, ok=False, reason=reason)
            self.version += 1
            return self._command_reply(command)
        others = [
            r.name
            for r in self.robots.values()
            if r.name != robot and r.job is not None and r.job.object == obj.name
        ]
        job = _Job(command_id, node, obj.name, goal, lease=lease, token=token)
        if others:  # two bodies on one object's behaviour at once
            self._violation("double_run", obj.name, [*others, robot], job)
        if token is not None:
            self._fence[obj.name] = token
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

    def renew(
        self, robot: str, command_id: str, lease: float, t: float, token: Any = None
    ) -> dict[str, Any]:
        """Move the lease of `robot`'s running `command_id` on to `lease` (simulated
        time). Refused ``not_running`` (the command ended, e.g. its lease lapsed),
        ``lease_expired`` (`lease` already passed) or ``fenced`` (an older token)."""
        self.advance(t)
        body, reply = self._current(robot, command_id)
        if body is None or body.job is None:
            return reply
        job = body.job
        if lease <= self.t:
            return {**_reply(False, "lease_expired"), "command_id": command_id}
        if token is not None and not self._fence_ok(job.object, token):
            return {**_reply(False, "fenced"), "command_id": command_id}
        if token is not None:
            job.token = self._fence[job.object] = token
        job.lease = max(job.lease or lease, lease)
        return self._command_reply(self._commands[(robot, job.command_id)], ok=True)

    def _fence_ok(self, obj: str, token: Any) -> bool:
        """True when `token` is not older than the newest one used on `obj`."""
        if token is None or obj not in self._fence:
            return True
        try:
            return not token < self._fence[obj]
        except TypeError:  # tokens of another shape: compare as text
            return not str(token) < str(self._fence[obj])

    def _lapse(self, body: RobotBody, at: float) -> None:
        """The lease of `body`'s job passed: stop where it is, put the object down."""
        job = body.job
        assert job is not None
        if job.paused_at is None and job.legs:
            # freeze the running leg at `at` so the body stops where it is then
            job.paused_at = at
        self._end_job(body, CommandStatus.FAILED, "lease_expired")
        # say where the object was left, so the team knows where to pick it up
        self._events[-1]["object"] = job.object
        self._events[-1]["left_at"] = _out(self.objects[job.object].position)

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

    # -- hands ---------------------------------------------------------------------

    def hand_reach(
        self,
        hand: str,
        command_id: str,
        obj_name: str,
        t: float,
        then: str = "place",
        goal: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """Move `hand` to object `obj_name` and grasp it; then hold it or place it at
        its goal (`then`). A reach replaces an empty hand's current motion (a person
        changes their mind); a hand holding something answers ``busy``."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return _reply(False, "unknown_hand")
        obj = self.objects.get(obj_name)
        reason: str | None = None
        target: Vec3 | None = None
        if then not in HAND_THEN:
            reason = "bad_params"
        elif h.holding is not None or (h.job is not None and h.job.holding):
            reason = "busy"
        elif obj is None:
            reason = "unknown_object"
        elif obj.held_by not in (None, hand):
            reason = "held"
        else:
            try:
                target = _vec3(goal, "goal") if goal is not None else obj.goal
            except SpecificationError:
                reason = "bad_params"
            if reason is None and target is None and then == "place":
                reason = "no_goal"
        if reason is not None or obj is None:
            self._emit("failed", hand, command_id, None, ok=False, reason=reason)
            self.version += 1
            return {**_reply(False, reason), "command_id": command_id, "status": "failed"}
        self._stop_hand(h, "replaced")
        job = _HandJob(command_id, obj.name, target, then)
        job.legs.append(self._hand_leg(h, Stage.APPROACH, h.position, obj.position, self.t))  # type: ignore[arg-type]
        h.job = job
        self._emit("started", hand, command_id, None)
        self.version += 1
        return {**_reply(True, None), "command_id": command_id, "status": "running"}

    def hand_place(
        self, hand: str, command_id: str, t: float, goal: Sequence[float] | None = None
    ) -> dict[str, Any]:
        """Carry the object `hand` holds to `goal` (default: its goal) and release it."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return _reply(False, "unknown_hand")
        if h.holding is None or h.job is not None:
            reason = "busy" if h.job is not None else "not_holding"
            return {**_reply(False, reason), "command_id": command_id, "status": "failed"}
        obj = self.objects[h.holding]
        try:
            target = _vec3(goal, "goal") if goal is not None else obj.goal
        except SpecificationError:
            return _reply(False, "bad_params")
        if target is None:
            return _reply(False, "no_goal")
        job = _HandJob(command_id, obj.name, target, "place", Stage.CARRY, holding=True)
        job.legs.append(self._hand_leg(h, Stage.CARRY, h.position, target, self.t))  # type: ignore[arg-type]
        h.job, h.holding = job, None
        self._emit("started", hand, command_id, None)
        self.version += 1
        return {**_reply(True, None), "command_id": command_id, "status": "running"}

    def hand_move(
        self, hand: str, command_id: str, position: Sequence[float], t: float
    ) -> dict[str, Any]:
        """Move an empty `hand` to `position` (e.g. back to rest); replaces a reach."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return _reply(False, "unknown_hand")
        try:
            target = _vec3(position, "position")
        except SpecificationError:
            return _reply(False, "bad_params")
        if h.holding is not None or (h.job is not None and h.job.holding):
            return {**_reply(False, "busy"), "command_id": command_id, "status": "failed"}
        self._stop_hand(h, "replaced")
        job = _HandJob(command_id, None, None, "move")
        job.legs.append(self._hand_leg(h, Stage.APPROACH, h.position, target, self.t))  # type: ignore[arg-type]
        h.job = job
        self._emit("started", hand, command_id, None)
        self.version += 1
        return {**_reply(True, None), "command_id": command_id, "status": "running"}

    def hand_cancel(self, hand: str, t: float) -> dict[str, Any]:
        """Stop `hand` where it is; an object it holds is put down there."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return _reply(False, "unknown_hand")
        self._stop_hand(h, "cancelled")
        if h.holding is not None:
            obj = self.objects[h.holding]
            obj.position, obj.held_by, obj.placements = h.position, None, 0  # type: ignore[assignment]
            h.holding = None
            self.version += 1
        return _reply(True, None)

    def hand_pose(self, hand: str, t: float | None = None) -> Vec3:
        """Where `hand` is at `t` (default now), interpolated along its motion."""
        h = self.hands[hand]
        t = self.t if t is None else t
        if h.job is not None and h.job.legs and t >= h.job.legs[0].start:
            return h.job.legs[0].at(t)
        return h.position  # type: ignore[return-value]

    def hand_view(self, hand: str, track_s: float = 0.0) -> dict[str, Any]:
        """A hand as a tracker sees it: the latest noisy sample, what it holds, and
        (with `track_s` > 0) the samples of the last `track_s` seconds as
        ``[t, x, y, z]`` rows."""
        h = self.hands[hand]
        job = h.job
        latest = h.track[-1][1:] if h.track else self.hand_pose(hand)
        view: dict[str, Any] = {
            "name": hand,
            "position": _out(latest),
            "holding": h.holding or (job.object if job is not None and job.holding else None),
            "busy": None if job is None else job.command_id,
            "target": None if job is None else job.object,
        }
        if track_s > 0:
            since = self.t - track_s
            view["track"] = [[round(x, 4) for x in s] for s in h.track if s[0] > since]
        return view

    def observe_hand(self, hand: str, t: float, since: int = 0) -> dict[str, Any]:
        """What the person owning `hand` sees at `t`: the true hand pose, every object,
        robot and hand, and the hand's events after sequence `since`."""
        self.advance(t)
        h = self.hands.get(hand)
        if h is None:
            return _reply(False, "unknown_hand")
        view = self.hand_view(hand)
        view["position"] = _out(self.hand_pose(hand))
        return {
            **_reply(True, None),
            "t": round(self.t, 4),
            "hand": view,
            "objects": {name: self.object_view(name) for name in self.objects},
            "robots": {name: self.robot_view(name) for name in self.robots},
            "hands": {name: self.hand_view(name) for name in self.hands},
            "events": self.events_since(since, hand),
            "seq": self._seq,
        }

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
        if obj.held_by in self.hands:
            return self.hand_pose(obj.held_by)  # type: ignore[arg-type]
        if obj.held_by is not None:
            return self.robot_pose(obj.held_by)[1]
        return obj.position

    def object_view(self, name: str, *, shared: bool = False) -> dict[str, Any]:
        """Object `name` as observations show it (a fresh dict the caller may keep).

        Every driver observes every object many times a second and most stand still,
        so the view of an object nobody holds is made once per pose and copied.
        ``shared``: return that view itself, for a caller that only encodes it."""
        obj = self.objects[name]
        if obj.held_by is not None:  # it moves with its holder
            return self._object_view(name, obj)
        fields = (obj.shape, obj.dims, obj.position, obj.yaw, obj.goal, self.goal_tolerance)
        cached = self._views.get(name)
        if cached is None or cached[0] != fields:
            cached = (fields, self._object_view(name, obj))
            self._views[name] = cached
        view = cached[1]
        if shared:
            return view
        goal = view["goal"]
        return {
            **view,
            "dims": list(view["dims"]),
            "position": list(view["position"]),
            "goal": None if goal is None else list(goal),
        }

    def _object_view(self, name: str, obj: WorldObject) -> dict[str, Any]:
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
            "object": None if job is None else job.object,
        }

    def observe(
        self,
        robot: str,
        t: float,
        since: int = 0,
        track_s: float = 0.5,
        *,
        shared: bool = False,
    ) -> dict[str, Any]:
        """What `robot`'s driver sees at `t`, plus its events after sequence `since`;
        with hands in the world, ``hands`` carries each hand's last `track_s` seconds
        of tracked (noisy) samples. ``shared``: the views of objects nobody holds are
        the world's own (``object_view``), for a caller that encodes the reply at once
        and does not change it (the ZeroMQ server)."""
        self.advance(t)
        if robot not in self.robots:
            return _reply(False, "unknown_robot")
        out = {
            "ok": True,
            "reason": None,
            "t": round(self.t, 4),
            "robot": self.robot_view(robot),
            "objects": {name: self.object_view(name, shared=shared) for name in self.objects},
            "events": self.events_since(since, robot),
            "seq": self._seq,
        }
        if self.hands:
            out["hands"] = {name: self.hand_view(name, track_s) for name in self.hands}
        return out

    def state(self, t: float, *, shared: bool = False) -> dict[str, Any]:
        """The whole world at `t` (the ``world.state`` body); ``shared`` as in ``observe``."""
        self.advance(t)
        out = {
            "t": round(self.t, 4),
            "objects": {name: self.object_view(name, shared=shared) for name in self.objects},
            "robots": {name: self.robot_view(name) for name in self.robots},
            "violations": len(self.violations),
        }
        if self.hands:
            out["hands"] = {name: self.hand_view(name) for name in self.hands}
        return out

    def info(self) -> dict[str, Any]:
        """Static description: robots with their profiles and start poses, objects."""
        return {
            "robots": {
                name: {"profile": b.spec.to_dict(), "base": list(b.base), "yaw": b.yaw}
                for name, b in self.robots.items()
            },
            "objects": sorted(self.objects),
            "goal_tolerance": self.goal_tolerance,
            "hands": {
                name: {"rest": list(h.rest), "speed": h.speed, "noise": h.noise}
                for name, h in self.hands.items()
            },
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

    # -- hand internals --------------------------------------------------------------

    def _hand_leg(self, h: HumanHand, stage: Stage, p0: Vec3, p1: Vec3, t: float) -> _HandLeg:
        """An arc from p0 to p1: lifted by ``lift`` and bowed sideways by a random
        ``path_noise`` share of the distance; duration = arc length / speed."""
        d = _dist(p0, p1)
        mid = _lerp(p0, p1, 0.5)
        dx, dy = p1[0] - p0[0], p1[1] - p0[1]
        horizontal = math.hypot(dx, dy)
        side = (0.0, 0.0) if horizontal < 1e-9 else (-dy / horizontal, dx / horizontal)
        bow = self._rng.gauss(0.0, h.path_noise) * d
        ctrl = (mid[0] + side[0] * bow, mid[1] + side[1] * bow, mid[2] + h.lift * d)
        leg = _HandLeg(stage, 0.0, p0, p1, ctrl, start=t)
        leg.duration = 1.0
        points = [leg.at(t + i / 16) for i in range(17)]
        length = sum(_dist(a, b) for a, b in itertools.pairwise(points))
        leg.duration = length / h.speed
        return leg

    def _hand_pause(self, h: HumanHand, stage: Stage, duration: float, t: float) -> _HandLeg:
        p = h.position
        return _HandLeg(stage, duration, p, p, p, start=t)  # type: ignore[arg-type]

    def _sample_hands(self, until: float) -> None:
        """Record each hand's tracked position at every sample time up to `until`."""
        dt = self.hand_sample_s
        for h in self.hands.values():
            if until - h.next_sample > _TRACK_KEEP * dt:
                h.next_sample = until - _TRACK_KEEP * dt
            while h.next_sample <= until + 1e-9:
                ts = h.next_sample
                p = self.hand_pose(h.name, ts)
                if h.noise > 0:
                    p = tuple(c + self._rng.gauss(0.0, h.noise) for c in p)  # type: ignore[assignment]
                h.track.append((round(ts, 4), p[0], p[1], p[2]))
                h.next_sample = ts + dt

    def _stop_hand(self, h: HumanHand, reason: str) -> None:
        job = h.job
        if job is None:
            return
        h.position = self.hand_pose(h.name)
        if job.holding and job.object is not None:
            obj = self.objects[job.object]
            obj.position, obj.held_by, obj.placements = h.position, None, 0  # type: ignore[assignment]
        h.job = None
        self._emit("failed", h.name, job.command_id, None, ok=False, reason=reason)
        self.version += 1

    def _end_hand_job(self, h: HumanHand, ok: bool, reason: str | None) -> None:
        job = h.job
        assert job is not None
        h.job = None
        kind = "finished" if ok else "failed"
        self._emit(kind, h.name, job.command_id, None, ok=ok, reason=reason)
        self.version += 1

    def _hand_violation(self, kind: str, obj: str, holders: list[str], job: _HandJob) -> None:
        self.violations.append(
            {
                "seq": len(self.violations) + 1,
                "t": round(self.t, 4),
                "kind": kind,
                "object": obj,
                "robots": holders,
                "command_id": job.command_id,
                "node": None,
            }
        )

    def _finish_hand_leg(self, h: HumanHand, end: float) -> None:
        job = h.job
        assert job is not None
        leg = job.legs.popleft()
        h.position = leg.p1
        if job.legs:
            job.legs[0].start = end
            return
        if job.object is None:  # a plain move
            self._end_hand_job(h, True, None)
            return
        obj = self.objects[job.object]
        if job.stage is Stage.APPROACH:
            if obj.held_by not in (None, h.name):
                self._hand_violation("double_hold", obj.name, [obj.held_by, h.name], job)  # type: ignore[list-item]
                self._end_hand_job(h, False, "held")
                return
            if _dist(obj.position, h.position) > 0.05:  # type: ignore[arg-type]
                self._end_hand_job(h, False, "moved")
                return
            obj.held_by, job.holding, job.stage = h.name, True, Stage.GRASP
            job.legs.append(self._hand_pause(h, Stage.GRASP, h.grasp_time, end))
        elif job.stage is Stage.GRASP:
            if job.then == "hold":
                h.holding = obj.name
                self._end_hand_job(h, True, None)
                return
            job.stage = Stage.CARRY
            job.legs.append(self._hand_leg(h, Stage.CARRY, h.position, job.goal, end))  # type: ignore[arg-type]
        elif job.stage is Stage.CARRY:
            job.stage = Stage.RELEASE
            job.legs.append(self._hand_pause(h, Stage.RELEASE, h.release_time, end))
        else:
            obj.held_by, obj.position = None, job.goal  # type: ignore[assignment]
            obj.placements += 1
            job.holding = False
            if obj.placements > 1:
                self._hand_violation("placed_twice", obj.name, [h.name], job)
            self._end_hand_job(h, True, None)
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
