"""Simulation theory of mind: intent from hand tracks and a simulated controller per
human (seed 000 §2.3, Fig. 3).

Pure: no I/O, no clocks; callers pass simulated time ``t`` with every sample.

Intent (``IntentTracker``). The paper: "from change in distance and vector movement of
the hand toward all objects, the object of interest is the one for which the distance
is decreasing the fastest and angle between the movement vector and hand vector to
object is the smallest". Readings chosen here, where the paper gives no numbers:

- Smoothing: a least-squares line through the hand samples of the last ``window_s``
  seconds gives the hand's position ``p`` and velocity ``v`` (noise averages out; a
  window of 0.25 s at 20 Hz is 6 samples).
- Per candidate object at ``x``: closing rate ``r = v·(x-p)/|x-p|`` (how fast the
  distance decreases, m/s) and angle ``θ = acos(r/|v|)`` between the movement vector
  and the hand-to-object vector.
- Geometry is measured in the table plane (x, y) by default (``planar``): a reach
  lifts the hand and lowers it again, which says nothing about which object on the
  table it is for, and in 3-D the lift made objects *behind* the target win early.
- The hand must move (``|v| ≥ min_speed``); a candidate needs ``θ ≤ max_angle_deg``
  and ``r ≥ min_closing``. The smallest angle wins; for one velocity it is also the
  fastest-decreasing distance (``r = |v| cos θ``), so the paper's two criteria agree.
  Optionally (``tie_deg`` > 0) objects on nearly the same bearing count as tied and
  the nearest wins. Measured (benchmarks/bench_intent.py), the tie rule, and a running
  mean of each object's angle, both lowered the accuracy of the first inferred object
  on curved reaches, so both are off; the window's line fit is the only smoothing.
- An object wins after ``confirm`` consecutive updates with the same best candidate
  (a hysteresis against noise). The intent then stays until another object is
  confirmed, the hand moves away from it (``r ≤ -min_closing`` for ``confirm``
  updates), or the object is placed.
- A hand within ``touch_radius`` of an object, or seen holding it, has that object
  as its intent at once.

Simulated controller (``HumanModel``): a copy of the task tree for one human, updated
only from observations: the inferred intent makes its leaf active (the paper raises
the node's activation potential until it is active), an object that the human held
reaching its goal makes the leaf done. The model never does work.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from msgspec import Struct, field

from teamtree.broker.lazy import lazy_module
from teamtree.planners.tasktree.activation import node_statuses, spread_activation
from teamtree.planners.tasktree.status import NodeStatus
from teamtree.planners.tasktree.tree import TaskTree

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded on first use, after the agent is ONLINE

__all__ = [
    "HandSample",
    "HumanModel",
    "IntentChange",
    "IntentParams",
    "IntentTracker",
    "ModelUpdate",
    "approach_geometry",
    "fit_motion",
]

Vec3 = tuple[float, float, float]


class HandSample(Struct, frozen=True):
    """One tracked hand position at simulated time ``t`` (seconds)."""

    t: float
    position: Vec3


class IntentParams(Struct, frozen=True):
    """Thresholds and smoothing of intent inference (module docstring)."""

    window_s: float = 0.25
    """Seconds of samples in the least-squares fit."""
    min_samples: int = 3
    """Fewer samples in the window: no estimate."""
    min_speed: float = 0.08
    """m/s; a slower hand is still and starts no new intent."""
    max_angle_deg: float = 35.0
    """Largest angle between movement and hand-to-object vectors for a candidate."""
    min_closing: float = 0.03
    """m/s; slowest decrease of distance for a candidate."""
    confirm: int = 3
    """Consecutive updates with the same best candidate before it becomes the intent."""
    touch_radius: float = 0.05
    """m; a hand this close to an object has it as its intent."""
    planar: bool = True
    """Measure velocity and angles in the table plane (x, y) only."""
    tie_deg: float = 0.0
    """Candidates within this many degrees of the smallest angle tie; the nearest wins."""

    def __post_init__(self) -> None:
        if self.window_s <= 0 or self.min_samples < 2 or self.confirm < 1:
            raise ValueError("window_s > 0, min_samples >= 2 and confirm >= 1 are required")


def fit_motion(samples: Sequence[HandSample]) -> tuple[Vec3, Vec3] | None:
    """Least-squares line through `samples`: (position at the last sample time,
    velocity in m/s). None with fewer than two distinct times."""
    if len(samples) < 2:
        return None
    t = np.array([s.t for s in samples], dtype=float)
    if float(t.max() - t.min()) <= 1e-9:
        return None
    p = np.array([s.position for s in samples], dtype=float)
    tc = t - t.mean()
    denom = float((tc * tc).sum())
    slope = (tc[:, None] * (p - p.mean(axis=0))).sum(axis=0) / denom
    at_last = p.mean(axis=0) + slope * (t[-1] - t.mean())
    return (
        (float(at_last[0]), float(at_last[1]), float(at_last[2])),
        (float(slope[0]), float(slope[1]), float(slope[2])),
    )


def approach_geometry(
    position: Sequence[float], velocity: Sequence[float], target: Sequence[float]
) -> tuple[float, float, float]:
    """(distance, closing rate m/s, angle rad) of a hand at `position` moving with
    `velocity` relative to `target`. The angle is π/2 for a still hand or a hand on
    the target (no direction)."""
    r = np.asarray(target, dtype=float) - np.asarray(position, dtype=float)
    v = np.asarray(velocity, dtype=float)
    d = float(np.linalg.norm(r))
    speed = float(np.linalg.norm(v))
    if d <= 1e-9:
        return 0.0, 0.0, math.pi / 2
    closing = float(v @ r) / d
    if speed <= 1e-12:
        return d, 0.0, math.pi / 2
    cos = max(-1.0, min(1.0, closing / speed))
    return d, closing, math.acos(cos)


class IntentChange(Struct, frozen=True):
    """The inferred intent changed from ``old`` to ``new`` object (None: no intent)."""

    old: str | None
    new: str | None
    reason: str


class IntentTracker:
    """Infer which object a hand is reaching for (seed 000 §2.3; module docstring)."""

    def __init__(self, params: IntentParams | None = None) -> None:
        self.params = params or IntentParams()
        self.samples: deque[HandSample] = deque()
        self.intent: str | None = None
        self._candidate: str | None = None
        self._streak = 0
        self._away = 0
        self.last_scores: dict[str, tuple[float, float, float]] = {}

    def add(self, samples: Iterable[HandSample]) -> None:
        """Append samples newer than the last one (older or equal times are ignored)."""
        for s in samples:
            if self.samples and s.t <= self.samples[-1].t:
                continue
            self.samples.append(s)
        if self.samples:
            horizon = self.samples[-1].t - self.params.window_s
            while len(self.samples) > 1 and self.samples[0].t < horizon - 1e-9:
                self.samples.popleft()

    def motion(self) -> tuple[Vec3, Vec3] | None:
        """(position, velocity) from the window, or None when too few samples."""
        if len(self.samples) < self.params.min_samples:
            return None
        return fit_motion(list(self.samples))

    def update(
        self,
        objects: Mapping[str, Sequence[float]],
        holding: str | None = None,
    ) -> IntentChange | None:
        """Re-evaluate against candidate `objects` (name → position; leave out placed
        objects and those other teammates hold). `holding`: the object the hand is
        seen holding. Returns the change, if any."""
        p = self.params
        if holding is not None:
            return self._set(holding, "holding")
        if self.intent is not None and self.intent not in objects:
            return self._set(None, "target gone")
        if not self.samples:
            return None
        last = self.samples[-1].position
        for name, pos in objects.items():
            if math.dist(last, pos) <= p.touch_radius:
                return self._set(name, "touching")
        motion = self.motion()
        if motion is None:
            return None
        position, velocity = motion
        if p.planar:
            position = (position[0], position[1], 0.0)
            velocity = (velocity[0], velocity[1], 0.0)
            objects = {n: (x[0], x[1], 0.0) for n, x in objects.items()}
        speed = math.sqrt(sum(c * c for c in velocity))
        self.last_scores = {
            name: approach_geometry(position, velocity, pos) for name, pos in objects.items()
        }
        if speed < p.min_speed:
            self._candidate, self._streak = None, 0
            return None
        if self.intent is not None:
            _, closing, _ = self.last_scores.get(self.intent, (0.0, 0.0, 0.0))
            self._away = self._away + 1 if closing <= -p.min_closing else 0
            if self._away >= p.confirm:
                self._away = 0
                return self._set(None, "moving away")
        max_angle, tie = math.radians(p.max_angle_deg), math.radians(p.tie_deg)
        candidates = {
            name: (d, angle)
            for name, (d, closing, angle) in self.last_scores.items()
            if angle <= max_angle and closing >= p.min_closing
        }
        if not candidates:
            self._candidate, self._streak = None, 0
            return None
        smallest = min(angle for _, angle in candidates.values())
        tied = [n for n, (_, angle) in candidates.items() if angle <= smallest + tie]
        best = min(sorted(tied), key=lambda n: candidates[n][0])
        if best == self._candidate:
            self._streak += 1
        else:
            self._candidate, self._streak = best, 1
        if self._streak >= p.confirm and best != self.intent:
            return self._set(best, "reaching")
        return None

    def clear(self) -> IntentChange | None:
        """Forget the intent (the object was placed)."""
        return self._set(None, "cleared")

    def _set(self, name: str | None, reason: str) -> IntentChange | None:
        self._away = 0
        if name == self.intent:
            return None
        change = IntentChange(self.intent, name, reason)
        self.intent = name
        self._candidate, self._streak = name, self.params.confirm if name else 0
        return change


class ModelUpdate(Struct):
    """What changed in a ``HumanModel`` after one observation."""

    activated: str | None = None
    deactivated: str | None = None
    done: list[str] = field(default_factory=list)
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.activated or self.deactivated or self.done)


class HumanModel:
    """A robot's simulated controller of one human (seed 000 §2.3, Fig. 3).

    ``observe(t, hand_samples, objects, hand_holding)`` feeds one observation:
    ``objects`` are the world's object views (``position``, ``at_goal``, ``held_by``).
    ``active`` is the leaf the human is believed to work on; ``done`` the leaves the
    human completed. ``concede(leaf)`` records that the human gave a leaf up in a
    dialog: its intent no longer activates the leaf unless the hand holds its object.
    """

    def __init__(
        self,
        tree: TaskTree,
        human: str,
        hand: str | None = None,
        params: IntentParams | None = None,
    ) -> None:
        self.tree = tree
        self.human = human
        self.hand = hand or human
        self.tracker = IntentTracker(params)
        self.leaf_of: dict[str, str] = {}
        for leaf in tree.leaves:
            obj = tree[leaf].param_dict.get("object")
            if isinstance(obj, str):
                self.leaf_of.setdefault(obj, leaf)
        self.active: str | None = None
        self.active_since: float | None = None
        self.done: set[str] = set()
        self.conceded: set[str] = set()
        self.touched: set[str] = set()  #: objects this hand has held
        self.t: float | None = None

    @property
    def intent_object(self) -> str | None:
        """The object the tracker currently infers (before the conceded filter)."""
        return self.tracker.intent

    def concede(self, leaf: str) -> ModelUpdate:
        """The human gave `leaf` up (dialog answer): deactivate it in the model."""
        self.conceded.add(leaf)
        update = ModelUpdate(reason="conceded")
        if self.active == leaf:
            update.deactivated, self.active, self.active_since = leaf, None, None
        return update

    def observe(
        self,
        t: float,
        samples: Iterable[HandSample],
        objects: Mapping[str, Mapping[str, object]],
        holding: str | None = None,
        others_done: Iterable[str] = (),
    ) -> ModelUpdate:
        """Feed one observation at simulated time `t`; returns what changed.

        `others_done`: leaves known done by teammates (so the model's tree matches)."""
        self.t = t
        update = ModelUpdate()
        for leaf in others_done:
            self.done.add(leaf)
        if holding is not None:
            self.touched.add(holding)
        for name, view in objects.items():
            leaf = self.leaf_of.get(name)
            if leaf is None or leaf in self.done:
                continue
            if view.get("at_goal") and name in self.touched:
                self.done.add(leaf)
                update.done.append(leaf)
        candidates = {
            name: tuple(float(c) for c in view["position"])  # type: ignore[union-attr]
            for name, view in objects.items()
            if not view.get("at_goal")
            and view.get("held_by") in (None, self.hand)
            and self.leaf_of.get(name) not in self.done
        }
        self.tracker.add(samples)
        change = self.tracker.update(candidates, holding)
        if change is not None:
            update.reason = change.reason
        target = self.tracker.intent
        leaf = self.leaf_of.get(target) if target is not None else None
        if leaf is not None and (leaf in self.done or (leaf in self.conceded and not holding)):
            leaf = None
        if self.active is not None and self.active in self.done:
            self.active, self.active_since = None, None
        if leaf != self.active:
            if self.active is not None:
                update.deactivated = self.active
            update.activated = leaf
            self.active = leaf
            self.active_since = t if leaf is not None else None
        return update

    def statuses(self) -> dict[str, NodeStatus]:
        """The simulated controller's node states: the active leaf shows ``working``."""
        working = [self.active] if self.active else []
        acts = spread_activation(self.tree, self.done, working, default_potential=1.0)
        return node_statuses(self.tree, acts, working)

    def belief(self) -> dict[str, object]:
        """What the robot believes this human is doing (for logs and the wire)."""
        active = self.active
        return {
            "human": self.human,
            "hand": self.hand,
            "active": active,
            "label": None if active is None else self.tree[active].label,
            "intent_object": self.tracker.intent,
            "done": sorted(self.done),
            "conceded": sorted(self.conceded),
            "t": None if self.t is None else round(self.t, 3),
        }
