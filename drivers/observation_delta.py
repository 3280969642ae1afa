"""Changed-only observations: a full keyframe now and then, and between keyframes only
the objects that moved.

A sim driver polls its body 20 times a second. Publishing every object each time
anything changed (tens of kilobytes at 500 objects), for every robot to decode and
score again, would make observations the biggest CPU cost of a big run. So:

- a *keyframe* (``full: true``) carries every object; one goes out every
  ``keyframe_s`` seconds (and first), so an agent that joins late, or that lost a
  message, has the whole picture again within that period;
- between keyframes an observation (``full: false``) carries the robot, the hands,
  and each object whose view differs from the last keyframe's: any field other than
  the pose, a position more than ``min_move_m`` away, or a heading more than
  ``min_turn_rad`` off. It is *cumulative* (everything changed since the keyframe,
  not since the last message), so a receiver that skipped messages (the inbound
  queue keeps only the newest observation, ``broker/inbound.py``) misses nothing:
  merging the newest one over what it had gives the same objects.

Choice where it matters: an object that moved and then came back to within the
threshold of its keyframe pose drops out of the delta, so a receiver keeps the moved
pose until the next keyframe (at most ``keyframe_s``); objects in this world move
from the table to a goal and stay, so this is rare, and only activation (never
safety) reads poses. Objects that vanish from the world show at the next keyframe.
Pure: ``now`` is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["ObservationDelta"]


def _moved(
    old: Mapping[str, Any], new: Mapping[str, Any], min_move: float, min_turn: float
) -> bool:
    """Whether `new` differs from `old` beyond the thresholds (see the module doc)."""
    if old.keys() != new.keys():
        return True
    for key, value in new.items():
        before = old[key]
        if key == "position":
            try:
                if math.dist(before, value) > min_move:
                    return True
            except (TypeError, ValueError):
                if before != value:
                    return True
        elif key == "yaw":
            try:
                if abs(float(value) - float(before)) > min_turn:
                    return True
            except (TypeError, ValueError):
                if before != value:
                    return True
        elif before != value:
            return True
    return False


class ObservationDelta:
    """The observation bodies one driver publishes, keyframes and deltas."""

    def __init__(
        self, keyframe_s: float = 1.0, min_move_m: float = 0.001, min_turn_rad: float = 0.01
    ):
        self.keyframe_s = keyframe_s
        self.min_move_m = min_move_m
        self.min_turn_rad = min_turn_rad
        self._key: dict[str, Any] | None = None  # objects as the last keyframe sent them
        self._key_at = -math.inf
        self._last: tuple[Any, ...] | None = None  # what the last body said
        self._last_at = -math.inf

    def body(
        self,
        t: float,
        robot: Any,
        objects: Mapping[str, Any],
        hands: Any = None,
        *,
        now: float,
        every_s: float,
    ) -> dict[str, Any] | None:
        """The body to publish now, or None: a keyframe when one is due, else a delta
        if it says something new or `every_s` passed since the last body (a keep-alive
        that also shows the robot's state)."""
        if self._key is None or now - self._key_at >= self.keyframe_s:
            self._key, self._key_at = dict(objects), now
            body = self._emit(t, robot, dict(objects), hands, True, now)
            self._last = (robot, {}, hands)  # the keyframe said it all: no delta yet
            return body
        key = self._key
        changed = {
            name: view
            for name, view in objects.items()
            if name not in key
            or (
                key[name] is not view  # unchanged views are kept as the same objects
                and key[name] != view
                and (
                    not isinstance(view, Mapping)
                    or not isinstance(key[name], Mapping)
                    or _moved(key[name], view, self.min_move_m, self.min_turn_rad)
                )
            )
        }
        said = (robot, changed, hands)
        if said == self._last and now - self._last_at < every_s:
            return None
        return self._emit(t, robot, changed, hands, False, now)

    def _emit(
        self, t: float, robot: Any, objects: dict[str, Any], hands: Any, full: bool, now: float
    ) -> dict[str, Any]:
        self._last, self._last_at = (robot, objects, hands), now
        body: dict[str, Any] = {"t": t, "robot": robot, "objects": objects, "full": full}
        if hands is not None:
            body["hands"] = hands
        return body
