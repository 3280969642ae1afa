"""The World facade: one object over the world's parts (clock, placing, leases,
hands, views, restore), built from bodies or from plain config data."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from teamtree.broker import SpecificationError
from teamtree.hardware.lease_clocks import LeaseClocks
from teamtree.hardware.profiles import profile
from teamtree.hardware.world.bodies import RobotBody
from teamtree.hardware.world.clock import Clock
from teamtree.hardware.world.commands import CommandRecord
from teamtree.hardware.world.events import EventLog
from teamtree.hardware.world.fences import Fences
from teamtree.hardware.world.hand_commands import HandCommands
from teamtree.hardware.world.hands import HAND_SAMPLE_S, HumanHand
from teamtree.hardware.world.leases import Leases
from teamtree.hardware.world.object_versions import ObjectVersions
from teamtree.hardware.world.objects import GOAL_TOLERANCE, WorldObject
from teamtree.hardware.world.placing import Placing
from teamtree.hardware.world.restore import Restoring
from teamtree.hardware.world.views import Views


class World(Clock, Placing, Leases, HandCommands, Views, Restoring):
    """Objects and robot bodies over simulated time. See the package docstring.

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
        self.objects = {o.name: o for o in objects}
        self.robots = {r.name: r for r in robots}
        self.hands = {h.name: h for h in hands}
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
        self._log = EventLog()
        self._commands: dict[tuple[str, str], CommandRecord] = {}
        self._fences = Fences()
        #: each holder clock's offset from the body's, for lease deadlines
        self.lease_clocks = LeaseClocks()
        # object name -> (the fields its view was made from, the view)
        self._views = {}
        self._versions = ObjectVersions()  # for observations of what changed only

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
