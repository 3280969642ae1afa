"""Human hands as bodies (seed 000 §2.3, §3.2.1): curved reaches at a person's
speed, and the noisy track a camera would report."""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from dataclasses import dataclass, field

from teamtree.broker import SpecificationError
from teamtree.hardware.profiles import Vec3
from teamtree.hardware.world.commands import Stage
from teamtree.hardware.world.vectors import dist, lerp, vec3

HAND_SAMPLE_S = 0.05
"""Simulated seconds between tracked hand samples."""
HAND_THEN = ("place", "hold")
"""What ``hand_reach`` does once the object is grasped."""
TRACK_KEEP = 200
"""Tracked samples kept per hand."""


@dataclass(slots=True)
class HandLeg:
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
        """The hand's position at simulated time `t`, clamped to the leg."""
        f = 1.0 if self.duration <= 0 else min(1.0, max(0.0, (t - self.start) / self.duration))
        a, b, c = (1 - f) ** 2, 2 * (1 - f) * f, f * f
        return (
            a * self.p0[0] + b * self.ctrl[0] + c * self.p1[0],
            a * self.p0[1] + b * self.ctrl[1] + c * self.p1[1],
            a * self.p0[2] + b * self.ctrl[2] + c * self.p1[2],
        )


@dataclass(slots=True)
class HandJob:
    """What a hand is doing: reach (then hold or place), place a held object, or move."""

    command_id: str
    object: str | None
    goal: Vec3 | None
    then: str
    stage: Stage = Stage.APPROACH
    legs: deque[HandLeg] = field(default_factory=deque)
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
    job: HandJob | None = None
    holding: str | None = None  #: held after a finished ``then="hold"`` reach
    track: deque[tuple[float, float, float, float]] = field(
        default_factory=lambda: deque(maxlen=TRACK_KEEP)
    )
    next_sample: float = 0.0

    def __post_init__(self) -> None:
        self.rest = vec3(self.rest, f"hand {self.name!r} rest")
        if self.position is None:
            self.position = self.rest
        if self.speed <= 0 or self.noise < 0 or self.path_noise < 0:
            raise SpecificationError(f"hand {self.name!r}: speed > 0, noise >= 0 required")

    def pose(self, t: float) -> Vec3:
        """Where the hand is at `t`, interpolated along its motion."""
        if self.job is not None and self.job.legs and t >= self.job.legs[0].start:
            return self.job.legs[0].at(t)
        return self.position  # type: ignore[return-value]

    def arc(self, stage: Stage, p0: Vec3, p1: Vec3, t: float, rng: random.Random) -> HandLeg:
        """An arc from p0 to p1: lifted by ``lift`` and bowed sideways by a random
        ``path_noise`` share of the distance; duration = arc length / speed."""
        d = dist(p0, p1)
        mid = lerp(p0, p1, 0.5)
        dx, dy = p1[0] - p0[0], p1[1] - p0[1]
        horizontal = math.hypot(dx, dy)
        side = (0.0, 0.0) if horizontal < 1e-9 else (-dy / horizontal, dx / horizontal)
        bow = rng.gauss(0.0, self.path_noise) * d
        ctrl = (mid[0] + side[0] * bow, mid[1] + side[1] * bow, mid[2] + self.lift * d)
        leg = HandLeg(stage, 0.0, p0, p1, ctrl, start=t)
        leg.duration = 1.0
        points = [leg.at(t + i / 16) for i in range(17)]
        length = sum(dist(a, b) for a, b in itertools.pairwise(points))
        leg.duration = length / self.speed
        return leg

    def pause(self, stage: Stage, duration: float, t: float) -> HandLeg:
        """A leg that keeps the hand where it is for `duration` (grasp, release)."""
        p = self.position
        return HandLeg(stage, duration, p, p, p, start=t)  # type: ignore[arg-type]

    def sample(self, until: float, dt: float, rng: random.Random) -> None:
        """Record the tracked (noisy) position at every sample time up to `until`."""
        if until - self.next_sample > TRACK_KEEP * dt:
            self.next_sample = until - TRACK_KEEP * dt
        while self.next_sample <= until + 1e-9:
            ts = self.next_sample
            p = self.pose(ts)
            if self.noise > 0:
                p = tuple(c + rng.gauss(0.0, self.noise) for c in p)  # type: ignore[assignment]
            self.track.append((round(ts, 4), p[0], p[1], p[2]))
            self.next_sample = ts + dt
