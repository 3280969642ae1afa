"""A multitask robot's claims on the tree's units under the seed 000 peer rule.

``UnitClaims`` carries out the unit controller's actions (claims, replies, unit
transitions and snapshots on the wire; pauses, resumes, aborts and claim decisions
here), waits for each of this robot's claims to be decided, and remembers what the
allocator must not touch now: units peers hold, units whose claim was lost a moment
ago, and units paused while the broker is gone. One module because these all read
and write the same claim bookkeeping; the robot's rounds ask it what is free or
blocked and never keep claim state of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from teamtree.agents.multitask.channels import CLAIM_REPLY, CLAIMS, UNIT_SNAPSHOT, UNITS
from teamtree.agents.treeprotocol.peer_wire import (
    UnitTransitionWire,
    claim_to_wire,
    reply_to_wire,
    snapshot_to_wire,
)
from teamtree.planners.tasktree import (
    AbortBehaviour,
    ClaimDecided,
    PauseBehaviour,
    PublishClaim,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    StartBehaviour,
    Want,
)

if TYPE_CHECKING:
    from teamtree.agents.multitask.robot import MultitaskRobot

__all__ = ["LOST_CLAIM_HOLD_S", "UnitClaims"]

LOST_CLAIM_HOLD_S = 1.0
"""Wall seconds a unit whose claim was lost stays out of this robot's rounds (the
winner's ``working`` transition is on its way)."""


class UnitClaims:
    """One multitask robot's unit claims: the controller's actions, decisions awaited,
    units lost a moment ago or paused, and what is free or blocked for its rounds."""

    def __init__(self, robot: MultitaskRobot) -> None:
        self._robot = robot
        self._decisions: dict[str, asyncio.Future[tuple[bool, str]]] = {}
        self._lost_until: dict[str, float] = {}
        self._paused_units: set[str] = set()

    async def act(self, action: Any) -> None:
        """Carry out one action of the unit controller."""
        robot = self._robot
        match action:
            case PublishClaim(claim=claim, to=to):
                if to is None:
                    await robot.publish(CLAIMS, "unit.claim", claim_to_wire(claim), team=True)
                else:  # only the peer that must answer receives it
                    body = claim_to_wire(claim)
                    await robot.publish(CLAIMS, "unit.claim", body, recipient=to, to=to)
            case PublishReply(reply=reply):
                await robot.publish(
                    CLAIM_REPLY, "unit.claim_reply", reply_to_wire(reply), recipient=reply.claimant
                )
            case PublishTransition(transition=t):
                leaves = list(robot.problem.tree.leaf_ids(t.node))
                unit = UnitTransitionWire(t.node, t.agent, t.status, list(t.stamp), leaves=leaves)
                await robot.publish(UNITS, "unit.transition", msgspec.to_builtins(unit))
            case PublishSnapshot(snapshot=snap):
                await robot.publish(
                    UNIT_SNAPSHOT, "unit.snapshot", snapshot_to_wire(snap), retain=True
                )
            case StartBehaviour():
                pass  # a won claim: the executor is waiting for it (ClaimDecided)
            case PauseBehaviour(node=unit):
                self._paused_units.add(unit)
                robot.log.warning("unit.paused", unit=unit, reason="broker lost")
            case ResumeBehaviour(node=unit):
                self._paused_units.discard(unit)
                robot.log.info("unit.resumed", unit=unit)
            case AbortBehaviour(node=unit, reason=reason):
                self._paused_units.discard(unit)
                robot.log.warning("unit.aborted", unit=unit, reason=reason)
            case ClaimDecided(claim=claim, won=won, reason=reason):
                robot.claims["won" if won else "lost"] += 1
                if claim.claim_id:  # a claim that went out (not refused before it started)
                    robot.log.info(
                        "unit.claim_won" if won else "unit.claim_lost",
                        unit=claim.node,
                        latency_ms=robot.stamp()[0] - claim.stamp[0],
                        reason=reason,
                    )
                fut = self._decisions.pop(claim.node, None)
                if fut is not None and not fut.done():
                    fut.set_result((won, reason))

    async def claim(self, unit: str, potential: float) -> bool:
        """Claim ``unit`` by the peer rule; True when this robot may work on it."""
        assert self._robot.controller is not None
        fut: asyncio.Future[tuple[bool, str]] = asyncio.get_running_loop().create_future()
        self._decisions[unit] = fut
        await self._robot.feed(Want(unit, potential))
        won, _reason = await fut
        if not won:
            self._lost_until[unit] = asyncio.get_running_loop().time() + LOST_CLAIM_HOLD_S
        return won

    async def claim_units(
        self, units: Iterable[str], potential: Mapping[str, float] | None = None
    ) -> bool:
        """Claim each of ``units`` this robot does not hold yet, in order; False at the
        first claim lost (the units won so far stay this robot's)."""
        assert self._robot.controller is not None
        for unit in dict.fromkeys(units):
            if unit not in self._robot.controller.mine:
                p = (potential or {}).get(unit, 0.0)
                if not await self.claim(unit, p):
                    return False
        return True

    def free_units(self) -> list[str]:
        """Units nobody holds or finished that this robot may claim now, in tree order."""
        assert self._robot.controller is not None
        c = self._robot.controller
        now = asyncio.get_running_loop().time()
        return [
            u
            for u in self._robot.unit_tree.leaves
            if u not in c.mine
            and u not in c.done
            and c.allowed(u)
            and self._lost_until.get(u, 0.0) <= now
        ]

    def blocked(self) -> set[str]:
        """Leaves of units this robot may not work on now (peers hold them, an OR
        alternative is committed elsewhere, a claim on them was just lost, or paused)."""
        assert self._robot.controller is not None
        c = self._robot.controller
        now = asyncio.get_running_loop().time()
        out: set[str] = set()
        for unit in self._robot.unit_tree.leaves:
            if unit in c.mine and unit not in self._paused_units:
                continue
            if (
                unit in c.mine
                or self._lost_until.get(unit, 0.0) > now
                or (unit not in c.done and not c.allowed(unit))
            ):
                out.update(self._robot.problem.tree.leaf_ids(unit))
        return out

    def held_elsewhere(self) -> bool:
        """True when some unit may come free without this robot: a peer holds one, one
        is paused, or a claim on one was lost a moment ago."""
        loop = asyncio.get_running_loop()
        return bool(
            self._robot.controller_has_peer_work()
            or self._paused_units
            or any(t > loop.time() for t in self._lost_until.values())
        )
