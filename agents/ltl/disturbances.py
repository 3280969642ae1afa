"""Disturbances of an LTL robot (seed 003 §V-B): a fall, a critical failure, a state
change, a blocked corridor, injected over ``_/disturb`` (``teamtree disturb``).

Each is checked against the robot (a wheeled robot cannot fall; a state change must
name a state of its transition system; an edge must be on the map), acknowledged
with ``ltl.disturb_ack`` ``{accepted, detail}``, and applied by setting what the
behaviour tree's checks read: ``fallen`` (→ R1), ``failed`` (→ R2), the current state
(→ R3), ``blocked`` / ``unreported`` edges (→ R4). Before the first plan or while a
global reallocation holds the robot, accepted disturbances wait in ``deferred``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from teamtree.agents.ltl.ltl_wire import DisturbAckWire, DisturbWire, LtlWireError, decode, to_wire
from teamtree.agents.ltl.planner import DISTURBANCES
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.ltl import ROBOT_TYPES, TSState

if TYPE_CHECKING:
    from teamtree.agents.ltl.robot import LtlRobotAgent

__all__ = ["DisturbanceHandling"]


class DisturbanceHandling:
    """Mixin of ``LtlRobotAgent``: takes, checks and applies disturbances (see the
    module docstring). It reads and sets the robot's state, so it runs only as part
    of an ``LtlRobotAgent``."""

    async def _on_disturb(self: LtlRobotAgent, env: Envelope, topic: Topic) -> None:
        try:
            body = decode(env.body, DisturbWire)
        except LtlWireError as exc:  # dropped, and the sender told why (it is waiting)
            self._drop("malformed", str(topic), env.sender, str(exc))
            await self.reply(env, "ltl.disturb_ack", to_wire(DisturbAckWire(False, str(exc))))
            return
        ok, detail = self._check_disturbance(body)
        if ok and (self.plan is None or self.hold_epoch is not None):
            self.deferred.append(body)
            detail = f"deferred until the next plan arrives ({detail})"
        elif ok:
            detail = await self._apply_disturbance(body)
        (self.log.info if ok else self.log.warning)(
            "ltl.disturbance", kind=body.kind, accepted=ok, detail=detail
        )
        await self.reply(env, "ltl.disturb_ack", to_wire(DisturbAckWire(ok, detail)))

    def _check_disturbance(self: LtlRobotAgent, body: DisturbWire) -> tuple[bool, str]:
        kind = body.kind
        if kind not in DISTURBANCES:
            return False, f"unknown disturbance {kind!r}; expected one of {list(DISTURBANCES)}"
        if kind == "fall" and not self.spec.legged:
            return False, (
                f"{self.id} is a wheeled {self.spec.type}; falls (R1) apply to legged robots only"
            )
        if kind == "state_change":
            if self.plan_finished:
                return False, f"{self.id} has finished its plan; nothing to reallocate"
            try:
                target = self._state_change_target(body)
            except ValueError as exc:
                return False, str(exc)
            return True, f"state change to {tuple(target)}"
        if kind == "blocked_edge":
            try:
                edge = self._blocked_edge(body)
            except ValueError as exc:
                return False, str(exc)
            return True, f"edge {edge[0]}-{edge[1]} blocked"
        if kind == "critical" and self.failed:
            return False, f"{self.id} has already failed"
        return True, kind

    def _state_change_target(self: LtlRobotAgent, body: DisturbWire) -> TSState:
        modes = ROBOT_TYPES[self.spec.type][1]
        mode = body.mode
        if mode is None:  # the load falls off / the training stops / a load is put on
            others = [m for m in modes if m != self.current.mode]
            mode = "standby" if self.current.mode != "standby" else others[0]
        region = body.region or self.current.region
        target = TSState(region, mode)
        if target not in self.ts.succ:
            raise ValueError(f"{tuple(target)} is not a state of {self.id} (modes {list(modes)})")
        if target == self.current:
            raise ValueError(f"{self.id} is already in {tuple(target)}")
        return target

    def _blocked_edge(self: LtlRobotAgent, body: DisturbWire) -> tuple[str, str]:
        if body.edge:
            a, b = body.edge
        else:
            if self.plan is None:
                raise ValueError(f"{self.id} has no plan yet; give the edge (--edge A,B)")
            moves = self._moves_ahead()
            if not moves:
                raise ValueError(f"{self.id} has no move left on its plan; give --edge A,B")
            a, b = moves[0]
        if not any((s.region, t.region) in ((a, b), (b, a)) for s, t in self.ts.edges() if s != t):
            raise ValueError(f"{a}-{b} is not an edge of the map")
        return a, b

    async def _apply_disturbance(self: LtlRobotAgent, body: DisturbWire) -> str:
        kind = body.kind
        if kind == "fall":
            self.fallen = True  # detected by the 'upright' check at its rate
            return "fallen; R1 recovery stand follows"
        if kind == "critical":
            self.failed = True
            self._interrupt()  # motors stop at once
            return "critical failure; R2 global reallocation follows"
        if kind == "state_change":
            try:
                target = self._state_change_target(body)
            except ValueError as exc:
                return f"ignored: {exc}"
            self._interrupt()  # the running action is cut off
            await self._record(target, "state_change")
            return f"state changed to {tuple(target)}; R3 follows"
        a, b = self._blocked_edge(body)
        self.blocked |= {(a, b), (b, a)}  # a blocked corridor is blocked both ways
        self.unreported |= {(a, b)}
        if body.scope == "robot":  # only for this robot (too narrow for it, say)
            self.private_edges |= {(a, b)}
            return f"edge {a}-{b} blocked for {self.id} only; R4 follows"
        return f"edge {a}-{b} blocked; R4 follows"
