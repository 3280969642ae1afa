"""Leases and fencing at the body (docs/protocol.md "Leases").

An ``execute`` may carry a ``lease`` (simulated time by which the body stops unless
renewed). ``renew`` moves the deadline of the running command on. When a deadline
passes the body stops by itself, puts down what it holds where the gripper is, and
fails the command ``lease_expired`` (the event says where the object was left). Every
command started on an object is granted the object's next fence (``fences``): a
``renew`` of a command another one on its object has since been granted over is
refused ``fenced``; an ``execute`` or ``renew`` whose deadline already passed is
refused ``lease_expired``. Tokens the senders stamp order nothing: a sender's clock
that runs ahead cannot outrank later commands.
"""

from __future__ import annotations

from typing import Any

from teamtree.hardware.world.bodies import RobotBody
from teamtree.hardware.world.commands import CommandStatus, reply
from teamtree.hardware.world.state import WorldState
from teamtree.hardware.world.vectors import rounded


class Leases(WorldState):
    """Renewing a running command's lease, and stopping a body whose lease lapsed."""

    def renew(
        self, robot: str, command_id: str, lease: float, t: float, token: Any = None
    ) -> dict[str, Any]:
        """Move the lease of `robot`'s running `command_id` on to `lease` (simulated
        time). Refused ``not_running`` (the command ended, e.g. its lease lapsed),
        ``lease_expired`` (`lease` already passed) or ``fenced`` (a newer command on
        the object was granted its fence since). `token` is kept for the record."""
        self.advance(t)
        body, answer = self._current(robot, command_id)
        if answer or body is None or body.job is None:  # not the command it runs
            return answer
        job = body.job
        if lease <= self.t:
            return {**reply(False, "lease_expired"), "command_id": command_id}
        if not self._fences.current(job.object, job.fence):
            return {**reply(False, "fenced"), "command_id": command_id}
        if token is not None:
            job.token = token
        job.lease = max(job.lease or lease, lease)
        return self._commands[(robot, job.command_id)].reply(ok=True)

    def _next_lapse(self) -> list[tuple[float, str]]:
        """(lease deadline, robot) of every job that has one."""
        return [
            (r.job.lease, r.name)
            for r in self.robots.values()
            if r.job is not None and r.job.lease is not None
        ]

    def _lapse(self, body: RobotBody, at: float) -> None:
        """The lease of `body`'s job passed: stop where it is, put the object down."""
        job = body.job
        assert job is not None
        if job.paused_at is None and job.legs:
            # freeze the running leg at `at` so the body stops where it is then
            job.paused_at = at
        event = self._end_job(body, CommandStatus.FAILED, "lease_expired")
        # say where the object was left, so the team knows where to pick it up
        event["object"] = job.object
        event["left_at"] = rounded(self.objects[job.object].position)
