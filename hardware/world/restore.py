"""Restoring a world from its last published state (``World.state``'s body): the
world service, restarted within one mission, continues where its predecessor ended
instead of starting from its config.

Only what outlives the process is restored: each object's position and yaw, and
whether it was placed (an object shown at its goal counts as placed once, so a second
PLACE of it is ``placed_twice``). Nothing holds an object after a restart (no body
survived), so an object a robot or a hand held is put down where the state last
showed it. Shapes, dims and goals stay the config's; robots and hands start from their
configured poses; commands, events and violations start anew.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.profiles import Vec3
from teamtree.hardware.world.state import WorldState
from teamtree.hardware.world.vectors import vec3


class Restoring(WorldState):
    """``restore``: object poses and placed state from a ``state`` body."""

    def restore(self, state: Mapping[str, Any]) -> list[str]:
        """Put this world's objects where `state` (a decoded ``world.state`` body)
        shows them; returns the names of the objects restored, sorted. Objects the
        state does not show keep their config pose.

        All or nothing: raises SpecificationError naming why (no ``objects`` table,
        an object this world does not have, a position that is not three finite
        numbers, a yaw that is not a finite number) and changes nothing then. Meant for
        a world nothing has happened in yet: refused once a robot or hand has a job.
        """
        busy = [n for n, b in self.robots.items() if b.job is not None]
        busy += [n for n, h in self.hands.items() if h.job is not None or h.holding]
        if busy:
            raise SpecificationError(f"cannot restore a running world ({busy[0]!r} is busy)")
        objects = state.get("objects") if isinstance(state, Mapping) else None
        if not isinstance(objects, Mapping):
            raise SpecificationError("state has no objects table")
        poses: dict[str, tuple[Vec3, float | None, bool]] = {}
        for name, view in objects.items():
            if name not in self.objects:
                raise SpecificationError(f"state shows object {name!r}, which this world lacks")
            if not isinstance(view, Mapping):
                raise SpecificationError(f"state's object {name!r} is not a table")
            position = vec3(view.get("position"), f"state's object {name!r} position")
            yaw = view.get("yaw")
            if yaw is not None and (
                isinstance(yaw, bool) or not isinstance(yaw, int | float) or not math.isfinite(yaw)
            ):
                raise SpecificationError(f"state's object {name!r} yaw {yaw!r} is not a number")
            placed = view.get("at_goal") is True
            poses[name] = (position, None if yaw is None else float(yaw), placed)
        for name, (position, yaw, placed) in poses.items():
            obj = self.objects[name]
            obj.position = position
            if yaw is not None:
                obj.yaw = yaw
            obj.held_by = None  # nobody survived the restart to hold it
            obj.placements = 1 if placed and obj.at_goal(self.goal_tolerance) else 0
        self.version += 1
        return sorted(poses)
