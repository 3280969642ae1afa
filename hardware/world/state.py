"""What every part of the world shares: the simulated time, the bodies, the books.

The World facade (``facade.py``) composes its parts (clock, placing, leases, hands,
views) as mixins over this one state, so each part is a small module while a call
like ``execute`` still sees one consistent world.
"""

from __future__ import annotations

import random
from typing import Any

from teamtree.hardware.lease_clocks import LeaseClocks
from teamtree.hardware.world.bodies import RobotBody
from teamtree.hardware.world.commands import CommandRecord
from teamtree.hardware.world.events import EventLog
from teamtree.hardware.world.fences import Fences
from teamtree.hardware.world.hands import HumanHand
from teamtree.hardware.world.object_versions import ObjectVersions
from teamtree.hardware.world.objects import WorldObject


class WorldState:
    """The shared state of the world's parts (set up by ``World.__init__``)."""

    objects: dict[str, WorldObject]
    robots: dict[str, RobotBody]
    hands: dict[str, HumanHand]
    goal_tolerance: float
    hand_sample_s: float
    t: float
    version: int  #: increases on every discrete change
    _rng: random.Random
    _log: EventLog
    _commands: dict[tuple[str, str], CommandRecord]
    _fences: Fences
    lease_clocks: LeaseClocks
    _views: dict[str, tuple[tuple[Any, ...], dict[str, Any]]]
    _versions: ObjectVersions

    @property
    def violations(self) -> list[dict[str, Any]]:
        """Coordination errors made visible (``double_hold``, ``placed_twice``, ...)."""
        return self._log.violations

    def _emit(
        self,
        kind: str,
        robot: str,
        command_id: str,
        node: str | None,
        *,
        ok: bool = True,
        reason: str | None = None,
    ) -> dict[str, Any]:
        return self._log.emit(self.t, kind, robot, command_id, node, ok=ok, reason=reason)

    def _violation(
        self, kind: str, obj: str, holders: list[str], command_id: str, node: str | None
    ) -> None:
        self._log.violation(self.t, kind, obj, holders, command_id, node)
