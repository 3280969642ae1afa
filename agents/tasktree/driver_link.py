"""A task-tree robot's link to its driver (docs/protocol.md, "Leases"): the
``behaviour.execute|cancel|pause|resume|renew`` commands it sends on
``<me>/command/<driver>``, the lease each execute carries and the renewals that keep
it, the driver's progress, and the ways a behaviour fails without saying so.

- An execute carries a lease (``lease_ms`` deadline with ``sent_ms`` and ``clock``, so
  the body reads it on its own clock; ``token`` = the stamp the node was won at, for
  the record), renewed every ``lease_renew_s`` (QoS 0, never queued) while the robot
  holds the node; the body stops by itself when it lapses.
- A driver gone longer than the lease has stopped its body: its behaviours failed
  (``driver_lost``). A driver or world gone beyond ``service_timeout_s`` ends the
  mission with an error (exit code 2).
- A command the body no longer runs, whose end never arrived, failed
  (``progress_lost``, ``BodyWatch``).
- A behaviour that failed while its body held the object waits for the driver's next
  observations before its node goes back to the team (``FAILURE_HOLD_S``).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from teamtree.agents.runtime.behaviour_wire import (
    BehaviourWireError,
    CommandRef,
    ExecuteCommand,
    RenewCommand,
    decode_progress,
    to_wire,
)
from teamtree.agents.runtime.observation_wire import ObservationBody
from teamtree.agents.runtime.team_view import Presence, TeamView
from teamtree.agents.tasktree.robot_host import RobotHost
from teamtree.agents.tasktree.world_view import WorldView
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic
from teamtree.planners.tasktree import BehaviourFinished, BodyWatch, LeaseTerms

__all__ = ["COMMAND", "FAILURE_HOLD_OBSERVATIONS", "FAILURE_HOLD_S", "DriverLink"]

COMMAND = "command"
FAILURE_HOLD_S = 0.5
"""At most this long a behaviour that failed while its body held the object waits for
the driver's observations before its node goes back to the team (``held_when_failed``)."""
FAILURE_HOLD_OBSERVATIONS = 2
"""The driver's observations such a failure waits for (the world shows an object put
down in the next one)."""


class DriverLink:
    """The commands `host` sends its driver `driver` under `lease`, and what the driver
    says back; `world` tells whether the body held an object when a behaviour failed.
    `service_timeout_s`: how long a lost driver or world may stay away."""

    def __init__(
        self,
        host: RobotHost,
        driver: str,
        lease: LeaseTerms,
        world: WorldView,
        service_timeout_s: float,
    ):
        self.host = host
        self.driver = driver
        self.lease = lease
        self.world = world
        self.service_timeout_s = service_timeout_s
        self.command_of: dict[str, str] = {}  # node -> command id
        self._commands = itertools.count(1)
        self._token_of: dict[str, list[Any]] = {}  # node -> fencing token sent with it
        # leases are read on a clock that no step of the wall clock moves: wall time
        # at the start, run on by the monotonic clock; the body learns its offset
        self._lease_epoch = (wall_ms(), time.monotonic())
        self.lease_clock = f"{host.id}-{host.session}"
        # commands whose end may have been lost with a progress message (body_watch.py)
        self.body_watch = BodyWatch(start_s=lease.lease_s + 3.0)
        self.renewed_at = 0.0
        # node -> (deadline, observations still to wait for, reason): held_when_failed
        self._failing: dict[str, tuple[float, int, str | None]] = {}
        self.driver_lost_at: float | None = None
        self.world_lost_at: float | None = None

    # -- commands ---------------------------------------------------------------

    async def command(self, kind: str, node: str) -> None:
        """Send `kind` (``behaviour.execute`` etc.) about `node`; a command about a node
        never executed is not sent."""
        host = self.host
        if kind == "behaviour.execute":
            leaf = host.tree[node]
            command_id = f"{host.id}-{host.session}-{next(self._commands)}"
            self.command_of[node] = command_id
            self.body_watch.sent(node, command_id, time.monotonic())
            sent = self.lease_now_ms()
            body = to_wire(
                ExecuteCommand(
                    command_id,
                    leaf.behavior,
                    node,
                    leaf.param_dict,
                    self.lease.deadline_ms(sent),
                    self.token(node),
                    sent,
                    self.lease_clock,
                )
            )
        elif (command_id := self.command_of.get(node)) is None:
            return
        elif kind == "behaviour.renew":
            sent = self.lease_now_ms()
            lease_ms = self.lease.deadline_ms(sent)
            body = to_wire(
                RenewCommand(command_id, lease_ms, node, self.token(node), sent, self.lease_clock)
            )
            # QoS 0: a renewal is never queued while disconnected and sent late
            await host.publish(COMMAND, kind, body, recipient=self.driver, qos=0)
            return
        else:
            body = to_wire(CommandRef(command_id, node))
        await host.publish(COMMAND, kind, body, recipient=self.driver)

    def token(self, node: str) -> list[Any]:
        """The fencing token for ``node``: the stamp this robot won it at (a re-claim
        after a reconnect wins a newer one)."""
        c = self.host.controller
        held = None if c is None else c.working.get(node)
        if held is not None and held[0] == self.host.id:
            self._token_of[node] = list(held[1])
        return self._token_of.get(node) or list(self.host._now())

    def lease_now_ms(self) -> int:
        """Now on the clock this robot's leases are read on (``lease_clock``)."""
        wall0, mono0 = self._lease_epoch
        return wall0 + int((time.monotonic() - mono0) * 1000)

    async def renew_leases(self) -> None:
        """Renew the body's lease of every node this robot holds, while connected."""
        c = self.host.controller
        now = time.monotonic()
        if c is None or now - self.renewed_at < self.lease.renew_s:
            return
        self.renewed_at = now
        if not c.connected or not self.host.connection.connected.is_set():
            return
        for node in list(c.mine):
            if node not in c.paused_leaves and not self.failing(node):  # ended
                await self.command("behaviour.renew", node)

    # -- what the driver says, and what it does not -------------------------------

    async def _failed(self, node: str, reason: str | None, *, forget: bool) -> None:
        """Record `node`'s behaviour as failed and give the node back (`forget`: drop
        its command, whose progress can no longer come)."""
        self.host.executed.append({"node": node, "ok": False, "reason": reason})
        if forget:
            self.command_of.pop(node, None)
        await self.host.feed(BehaviourFinished(node, False))

    def on_presence(self, agent_id: str, new: Presence, team_view: TeamView) -> None:
        """Note when the driver or the last world went away (None: back)."""
        if agent_id == self.driver:
            self.driver_lost_at = None if new is Presence.ONLINE else time.monotonic()
        member = team_view.get(agent_id)
        if member is not None and member.kind == "world":
            gone = not team_view.online(kind="world")
            self.world_lost_at = (self.world_lost_at or time.monotonic()) if gone else None

    async def check_driver(self) -> None:
        """A driver gone longer than the lease cannot report: its body must have
        stopped (its lease lapsed), so the behaviours it ran failed; give them back."""
        host = self.host
        c, lost = host.controller, self.driver_lost_at
        now = time.monotonic()
        for what, since in ((f"driver {self.driver}", lost), ("world", self.world_lost_at)):
            if since is not None and now - since > self.service_timeout_s:
                host.log.error(
                    "mission.failed",
                    reason=f"{what} gone for {now - since:.0f} s and not back",
                    fix="restart it; the robot resumes when it returns within "
                    f"service_timeout_s ({self.service_timeout_s:g} s)",
                )
                host.request_stop(2)
                return
        if c is None or lost is None or not c.mine:
            return
        if time.monotonic() - lost < self.lease.takeover_s:
            return
        for node in list(c.mine):
            host.log.warning("behaviour.failed", node=node, reason="driver_lost")
            await self._failed(node, "driver_lost", forget=True)

    async def on_progress(self, env: Envelope, topic: Topic) -> None:
        """The driver's ``behaviour.finished`` or ``behaviour.failed`` for the command
        this robot last sent about a node (older commands' ends are ignored)."""
        host = self.host
        if env.sender != self.driver:
            return
        try:
            progress = decode_progress(env.body)
        except BehaviourWireError as exc:
            host._drop("malformed", str(topic), env.sender, str(exc))
            return
        node = progress.node
        if node is None or self.command_of.get(node) != progress.command_id:
            return
        if env.kind == "behaviour.finished":
            host.log.info("behaviour.finished", node=node, label=host.tree[node].label)
            host.executed.append({"node": node, "ok": True})
            await host.feed(BehaviourFinished(node, True))
        elif env.kind == "behaviour.failed":
            reason = progress.reason
            host.log.warning("behaviour.failed", node=node, reason=reason)
            if self.world.holds(node):  # held_when_failed
                self._failing[node] = (
                    time.monotonic() + FAILURE_HOLD_S,
                    FAILURE_HOLD_OBSERVATIONS,
                    reason,
                )
                return
            await self._failed(node, reason, forget=False)

    def failing(self, node: str) -> bool:
        """Whether `node`'s behaviour failed and waits for the world (held_when_failed).

        A body that stops holding an object (its lease lapsed, a cancel) puts it down
        where the gripper is, which is the object's goal when it stopped in the release.
        The driver's ``behaviour.failed`` and its observation showing the object
        ``at_goal`` then race. Observation first: the robot counts its behaviour done
        (``EffectConfirmed`` while the node is its own) and says ``done``. Failure
        first, without a wait: it gave the node back (``inactive``), then counted the
        leaf done from the world, and nobody reported it done. So the failure waits for
        the driver's next ``FAILURE_HOLD_OBSERVATIONS`` observations (at most
        ``FAILURE_HOLD_S``): the node stays this robot's meanwhile (its body has
        stopped, so nothing runs twice), and the record says the same either way."""
        return node in self._failing

    async def release_failures(self, *, observed: bool) -> None:
        """Give back the held failures (``failing``) that waited out their observations
        (`observed`: one more came) or their deadline. A node the world meanwhile
        showed done was counted done by ``EffectConfirmed``; the controller ignores
        its failure."""
        if not self._failing:
            return
        now = time.monotonic()
        for node, (deadline, left, reason) in list(self._failing.items()):
            left -= observed
            if left > 0 and now < deadline:
                self._failing[node] = (deadline, left, reason)
                continue
            del self._failing[node]
            await self._failed(node, reason, forget=False)

    async def check_body(self, obs: ObservationBody) -> None:
        """A behaviour the body no longer runs, whose end never reached us (its progress
        message was lost, e.g. across a broker restart), failed: give the node back."""
        c = self.host.controller
        if c is None:
            return
        if isinstance(obs.robot.busy, bool):
            return  # this driver does not say which command runs: nothing to compare
        busy = obs.robot.command_id
        for node in self.body_watch.observe(busy, set(c.mine), time.monotonic()):
            self.host.log.warning("behaviour.failed", node=node, reason="progress_lost")
            await self._failed(node, "progress_lost", forget=True)
