"""Every robot's side of the favor protocol, seed 002 (§IV.C-D, §V.B): answer or
forward requests, hold itself for one requester at a time, help, heartbeat, withdraw.
The leases and messages it speaks are in ``favor.py``.

Pure: events in, actions out; time is a number the caller passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from teamtree.hardware import IDLE_BATTERY_THRESHOLD, RobotProfile
from teamtree.planners.capability.favor import (
    FavorAccept,
    FavorAction,
    FavorGrant,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRevoke,
    HelperStatus,
    Lease,
    LeaseState,
    Message,
    RoleChanged,
    Send,
    is_idle,
)
from teamtree.planners.capability.modes import (
    ActiveMatcher,
    Method,
    PassiveMatcher,
)


@dataclass
class FavorResponder:
    """Every robot's side: answer or forward requests, help, heartbeat, withdraw.

    ``hold`` is how long past a request's deadline a granted helper waits for the
    acceptance; ``heartbeat`` the period of :class:`HelperStatus` while helping.
    """

    profile: RobotProfile
    matcher: PassiveMatcher | ActiveMatcher
    battery: float = 1.0
    has_job: bool = False
    hold: float = 0.2
    heartbeat: float = 0.25
    idle_threshold: float = IDLE_BATTERY_THRESHOLD
    lease: Lease | None = None
    seen: dict[str, float] = field(default_factory=dict)
    _hold_until: float = 0.0
    _next_beat: float = 0.0

    @property
    def robot_id(self) -> str:
        """This robot's id."""
        return self.profile.robot_id

    @property
    def idle(self) -> bool:
        """Idle (§II.B) and not holding or serving a favor."""
        busy = self.lease is not None and self.lease.active
        return is_idle(self.battery, self.has_job or busy, self.idle_threshold)

    @property
    def role(self) -> str:
        """LED state (Fig. 1)."""
        if self.lease is not None and self.lease.state == LeaseState.ACCEPTED:
            return "helping"
        return "busy" if self.has_job else "idle"

    def on_request(
        self, req: FavorRequest, now: float, neighbours: Sequence[str]
    ) -> list[FavorAction]:
        """Grant, forward, or both (method 2); duplicates and own requests do nothing."""
        for rid, until in list(self.seen.items()):
            if until < now:
                del self.seen[rid]
        if req.request_id in self.seen or req.requester == self.robot_id:
            return []
        held = self.lease
        if (
            held is not None
            and held.state == LeaseState.GRANTED
            and held.requester == req.requester
            and held.request_id != req.request_id
        ):
            # the requester started a new round: its release of the old grant was lost
            held.move(LeaseState.REJECTED, now, "superseded")
        self.seen[req.request_id] = req.deadline + self.hold
        out: list[FavorAction] = []
        granted = False
        if now <= req.deadline:
            offer = self.matcher.answer(req.query, self.profile)
            if offer is not None and not self.idle:
                # could help but cannot now: say so, so the requester need not wait
                reject = FavorReject(req.request_id, req.requester, self.robot_id, "not idle")
                out.append(Send(req.requester, reject))
            elif offer is not None:
                granted = True
                self.lease = Lease(req.request_id, req.requester, self.robot_id, since=now)
                self.lease.move(LeaseState.GRANTED, now)
                self.lease.offer = offer
                self._hold_until = req.deadline + self.hold
                out.append(
                    Send(
                        req.requester,
                        FavorGrant(req.request_id, req.requester, self.robot_id, offer),
                    )
                )
        forward = req.ttl > 1 and (not granted or req.query.method == Method.ACTIVE)
        if forward:
            fwd = replace(req, ttl=req.ttl - 1, hops=(*req.hops, self.robot_id))
            for nb in sorted(set(neighbours)):
                if nb not in req.hops and nb != self.robot_id:
                    out.append(Send(nb, fwd))
        return out

    def _mine(self, msg: Message) -> bool:
        return (
            self.lease is not None
            and self.lease.request_id == msg.request_id
            and self.lease.requester == msg.requester
        )

    def on_message(self, msg: Message, now: float) -> list[FavorAction]:
        """Acceptance, release (or decline) from a requester."""
        if getattr(msg, "helper", None) != self.robot_id:
            return []
        if isinstance(msg, FavorAccept):
            return self._on_accept(msg, now)
        if isinstance(msg, FavorRelease) and self._mine(msg):
            assert self.lease is not None
            was_helping = self.lease.state == LeaseState.ACCEPTED
            if was_helping:
                self.lease.move(LeaseState.RELEASED, now, msg.reason)
                return [RoleChanged(self.robot_id, self.role)]
            self.lease.move(LeaseState.REJECTED, now, msg.reason)
        return []

    def _on_accept(self, msg: FavorAccept, now: float) -> list[FavorAction]:
        status = HelperStatus(msg.request_id, msg.requester, self.robot_id, self.battery)
        if self._mine(msg):
            assert self.lease is not None
            if self.lease.state == LeaseState.ACCEPTED:
                return [Send(msg.requester, status)]  # duplicate: re-confirm
            if self.lease.move(LeaseState.ACCEPTED, now):
                self._next_beat = now + self.heartbeat
                return [
                    RoleChanged(self.robot_id, "helping", msg.requester),
                    Send(msg.requester, status),
                ]
        if self.idle:  # hold lapsed but still free: take it
            self.lease = Lease(msg.request_id, msg.requester, self.robot_id, since=now)
            self.lease.move(LeaseState.GRANTED, now)
            self.lease.move(LeaseState.ACCEPTED, now)
            self._next_beat = now + self.heartbeat
            return [
                RoleChanged(self.robot_id, "helping", msg.requester),
                Send(msg.requester, status),
            ]
        return [
            Send(
                msg.requester,
                FavorReject(msg.request_id, msg.requester, self.robot_id, "no longer available"),
            )
        ]

    def requester_gone(self, requester: str, now: float) -> list[FavorAction]:
        """The requester vanished (e.g. its Last Will): end a favor held for it."""
        lease = self.lease
        if lease is None or lease.requester != requester or not lease.active:
            return []
        was_helping = lease.state == LeaseState.ACCEPTED
        lease.move(LeaseState.EXPIRED, now, "requester gone")
        return [RoleChanged(self.robot_id, self.role)] if was_helping else []

    def tick(self, now: float, battery: float | None = None) -> list[FavorAction]:
        """Advance time (and battery): lapse holds, heartbeat, withdraw on low battery."""
        if battery is not None:
            self.battery = battery
        lease = self.lease
        if lease is None:
            return []
        if lease.state == LeaseState.GRANTED and now > self._hold_until:
            lease.move(LeaseState.EXPIRED, now, "no acceptance")
            return []
        if lease.state != LeaseState.ACCEPTED:
            return []
        if self.battery <= self.idle_threshold:
            lease.move(LeaseState.REVOKED, now, "battery")
            return [
                Send(
                    lease.requester,
                    FavorRevoke(
                        lease.request_id,
                        lease.requester,
                        self.robot_id,
                        "battery below idle threshold",
                    ),
                ),
                RoleChanged(self.robot_id, self.role),
            ]
        if now >= self._next_beat:
            self._next_beat = now + self.heartbeat
            return [
                Send(
                    lease.requester,
                    HelperStatus(lease.request_id, lease.requester, self.robot_id, self.battery),
                )
            ]
        return []
