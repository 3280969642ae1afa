"""The driver of a simulated robot: bridges one robot body of the world (over ZeroMQ)
to its robot agent (over MQTT).

It finds the world's address in the retained factsheet of the team's ``world`` agent,
waits until it is there, and then:

======================================= ===================== === ======================
topic                                   kind                  QoS body
======================================= ===================== === ======================
in  ``<agent>/command/<me>``            ``behaviour.execute`` 1   command_id, node,
                                                                  behaviour, params,
                                                                  lease_ms, token,
                                                                  sent_ms, clock
in  ``<agent>/command/<me>``            ``behaviour.renew``   1   command_id, lease_ms,
                                                                  token, sent_ms, clock
in  ``<agent>/command/<me>``            ``behaviour.cancel``, 1   command_id (nil: the
                                        ``.pause``,                current one)
                                        ``.resume``
out ``<me>/observation``                ``observation``       0   t, robot {name, arm,
                                                                  base, yaw, busy,
                                                                  paused, ...}, objects,
                                                                  hands (if any: each
                                                                  with its tracked
                                                                  samples)
out ``<me>/progress``                   ``behaviour.started``, 1  command_id, node,
                                        ``.paused``,              robot, ok, reason, t
                                        ``.resumed``,
                                        ``.finished``,
                                        ``.failed``
======================================= ===================== === ======================

Commands are carried out in arrival order; a request the world does not answer is
retried (``execute`` is idempotent per command_id) and then reported as failed with
reason ``world_timeout`` (``no_world`` if no world turned up). Progress comes from the
world's event log, so each event is published once. Command intake, the cancel when
the robot agent vanishes (putting down anything the body holds, so a teammate can take
the work over) and progress reporting are the drivers' shared base
(``teamtree.drivers.base``). Leases (``lease_ms``, ``sent_ms``, ``clock``, ``token``) are
passed to the world as they are: the body enforces them, not the driver, so a driver
frozen with its robot cannot keep a body running (docs/protocol.md, "Leases").
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from typing import Any

import zmq

from teamtree.agents.runtime.behaviour_wire import (
    COMMAND_CHANNEL,
    OBSERVATION_CHANNEL,
    PROGRESS_CHANNEL,
    BehaviourCommand,
    ExecuteCommand,
    RenewCommand,
)
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.team_view import Member
from teamtree.broker import LifecycleError, RequestTimeoutError, TeamtreeError, wall_ms
from teamtree.broker.inbound import give_way_to_critical
from teamtree.drivers.base import DriverAgent
from teamtree.drivers.changed_objects import merge_changed
from teamtree.drivers.observation_delta import ObservationDelta
from teamtree.drivers.sim_params import SimDriverParams
from teamtree.hardware.profiles import PROFILES, RobotProfileSpec
from teamtree.hardware.sim_client import SimClient

__all__ = ["COMMAND_CHANNEL", "OBSERVATION_CHANNEL", "PROGRESS_CHANNEL", "SimDriverAgent"]

_RETRIES = 3
WORLD_WAIT_LOG_S = 5.0
"""While no world of its mission is there, the driver says so once per this many seconds."""
ZMQ_ADDRESS = re.compile(r"^(tcp|ipc|inproc)://\S+$")
"""What a world's ``zmq`` factsheet field must look like."""


class SimDriverAgent(DriverAgent):
    """Drive robot `robot` of the simulated world for robot agent `agent`."""

    kind = "sim_driver"

    def __init__(
        self,
        *args: Any,
        robot: str,
        agent: str | None = None,
        world: str | None = None,
        profile: str | None = None,
        poll_hz: float = 20.0,
        idle_poll_hz: float = 10.0,
        observation_hz: float = 10.0,
        keyframe_s: float = 1.0,
        zmq_timeout_s: float = 1.0,
        command_wait_s: float = 10.0,
        cancel_on_agent_loss: bool = True,
        **kwargs: Any,
    ):
        super().__init__(
            *args, agent=agent or robot, cancel_on_agent_loss=cancel_on_agent_loss, **kwargs
        )
        self.robot = robot
        self.world_id = world
        self.profile: RobotProfileSpec | None = PROFILES.get(profile or robot)
        self.poll_period = 1.0 / poll_hz
        self.idle_poll_period = 1.0 / idle_poll_hz
        self._wake = asyncio.Event()  # a command went to the world: poll now
        self.observation_period = 1.0 / observation_hz
        self.keyframe_s = keyframe_s
        self.zmq_timeout_s = zmq_timeout_s
        self.command_wait_s = command_wait_s
        self.client: SimClient | None = None
        self.world_address: str | None = None
        self.observation: dict[str, Any] | None = None
        self._client_ready = asyncio.Event()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate robot, agent, world, profile, poll/observation rates, timeouts."""
        robot = spec.params.get("robot")
        defaults = {"agent": robot} if isinstance(robot, str) else {}
        params = decode_params(spec, config, SimDriverParams, **defaults)
        if params.profile is not None and params.profile not in PROFILES:
            known = ", ".join(sorted(PROFILES))
            raise spec_reader(spec, config).error(
                "profile", f"is {params.profile!r}; expected one of {known}"
            )
        return params_dict(params)

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "robot": self.robot,
            "agent": self.agent,
            "world": self.world_address,
            "profile": None if self.profile is None else self.profile.to_dict(),
        }

    @property
    def body_name(self) -> str:
        return self.robot

    # -- main loop ---------------------------------------------------------------------

    async def serve(self) -> None:
        while True:
            address, session = await self._find_world()
            try:
                async with SimClient(address, timeout=self.zmq_timeout_s) as client:
                    await self._serve_world(client, address, session)
            except (TeamtreeError, KeyError, TypeError, ValueError, zmq.ZMQError) as exc:
                self.log.error("driver.world_failed", world=address, error=repr(exc))
                await asyncio.sleep(1.0)

    async def _find_world(self) -> tuple[str, str | None]:
        """Wait until a world agent of this driver's mission is ONLINE with a ``zmq``
        address in its factsheet from the same session; say every
        ``WORLD_WAIT_LOG_S`` that it still waits, and for what."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        said = float("-inf")
        while True:
            refused: dict[str, str] = {}
            for member_id in sorted(self.team_view.online(kind="world")):
                if self.world_id is not None and member_id != self.world_id:
                    continue
                member = self.team_view.get(member_id)
                if member is None:
                    continue
                why = self._not_adoptable(member)
                if why is None:
                    return member.factsheet["zmq"], member.session
                refused[member_id] = why
            waited = loop.time() - start
            if waited - said >= WORLD_WAIT_LOG_S:
                say = self.log.info if said < 0 else self.log.warning  # a start, then a wait
                said = waited
                say(
                    "driver.waiting_for_world",
                    world=self.world_id or "any",
                    mission=self.mission_id,
                    waited_s=round(waited, 1),
                    refused=refused,
                    dropped_other_mission=self.stats["dropped.other_mission"],
                    dropped_stale_session=self.stats["dropped.stale_session"],
                )
            await asyncio.sleep(0.05)

    def _not_adoptable(self, member: Member) -> str | None:
        """Why this driver will not drive `member`'s world (None: it will): a world of
        another mission (a driver without a mission drives any), a factsheet from
        another session than the presence believed, or no valid address."""
        sheet = member.factsheet
        address = sheet.get("zmq")
        if not isinstance(address, str) or not ZMQ_ADDRESS.match(address):
            return "no zmq address"  # e.g. a forged factsheet: the world says its own again
        if sheet.get("session") not in (None, member.session):
            return "factsheet of another session"  # not the process whose presence we believe
        if self.mission_id is not None and (
            member.mission != self.mission_id or sheet.get("mission") != self.mission_id
        ):
            return f"of mission {member.mission or sheet.get('mission')!r}"
        return None

    def _world_still(self, address: str, session: str | None) -> bool:
        for member_id in self.team_view.online(kind="world"):
            member = self.team_view.get(member_id)
            if member is not None and member.factsheet.get("zmq") == address:
                if self._not_adoptable(member) is not None:
                    return False
                return member.session == session or session is None
        return False

    async def _serve_world(self, client: SimClient, address: str, session: str | None) -> None:
        """Poll the world at `poll_hz` while it is there; publish progress and
        observations. Returns when the world goes away or changes address."""
        info = await self._retry(client.info)
        if info is None or self.robot not in info.get("robots", {}):
            self.log.error("driver.no_such_robot", robot=self.robot, world=address)
            await asyncio.sleep(1.0)
            return
        await self._adopt(info["robots"][self.robot], address, session)
        first = await self._retry(lambda: client.observe(self.robot, 0))
        if first is None:
            return
        since = int(first.get("seq", 0))  # events before we came are not ours to report
        await self._reconcile(first)
        self.client = client
        self._client_ready.set()
        delta = ObservationDelta(self.keyframe_s)  # a keyframe first, whoever listens now
        failures = 0
        objects: dict[str, Any] = {}  # every object as the world last showed it
        version = 0  # the world's objects_version of `objects` (0: none yet)
        try:
            while self._world_still(address, session):
                try:
                    obs = await client.observe(self.robot, since, objects_since=version)
                except RequestTimeoutError:
                    failures += 1
                    if failures in (1, 10) or failures % 100 == 0:
                        self.log.warning("driver.world_silent", world=address, failures=failures)
                    continue
                failures = 0
                if not obs.get("ok"):
                    self.log.error("driver.observe_failed", reason=obs.get("reason"))
                    await asyncio.sleep(1.0)
                    continue
                objects, version = merge_changed(objects, version, obs)
                if obs["seq"] < since:  # the world restarted on the same address
                    since = version = 0  # and every object again on the next poll
                for event in obs["events"]:
                    since = max(since, int(event["seq"]))
                    await self._publish_progress(event)
                self.observation = {"t": obs["t"], "robot": obs["robot"], "objects": objects}
                hands = obs.get("hands")  # tracked human hands (seed 000 §2.3), if any
                if hands is not None:
                    self.observation["hands"] = hands
                now, every = time.monotonic(), self.observation_period
                body = delta.body(obs["t"], obs["robot"], objects, hands, now=now,
                                  every_s=every)  # fmt: skip
                if body is not None:  # a keyframe, or what changed since the last one
                    with contextlib.suppress(TeamtreeError):
                        await self.publish(OBSERVATION_CHANNEL, "observation", body, qos=0)
                await self._nap()
        finally:
            self._client_ready.clear()
            self.client = None
        self.log.info("driver.world_gone", world=address)

    async def _nap(self) -> None:
        """Wait until the next poll: ``poll_hz`` while the body runs a command,
        ``idle_poll_hz`` while it runs none (then no event of ours can come; others'
        objects moving changes only potentials), and no longer once a command went to
        the world. At 32 robots most bodies are idle at any time, and each poll costs
        the world a view of every object and the driver its decoding."""
        period = self.poll_period if self.running is not None else self.idle_poll_period
        if not self._wake.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(period):
                    await self._wake.wait()
        self._wake.clear()
        await give_way_to_critical()  # a claim or reply of an agent beside us goes first

    async def _reconcile(self, obs: dict[str, Any]) -> None:
        """After (re)connecting to a world: a command it accepted before and no longer
        runs (the world restarted and forgot it) is reported failed, so the robot gives
        the node back instead of waiting for it forever."""
        running = self.running
        robot = obs.get("robot") if isinstance(obs.get("robot"), dict) else {}
        if running is None or robot.get("busy") == running.command_id:
            return
        self.log.warning(
            "driver.command_lost", command_id=running.command_id, reason="world_restarted"
        )
        await self.report("failed", running.command_id, running.node, reason="world_restarted",
                          t=obs.get("t"))  # fmt: skip

    async def _adopt(self, robot_info: dict[str, Any], address: str, session: str | None) -> None:
        """Take the world's profile for our robot; republish the factsheet if it changed."""
        try:
            spec = RobotProfileSpec.from_dict(robot_info["profile"])
        except (KeyError, TypeError, TeamtreeError) as exc:
            self.log.warning("driver.bad_profile", error=str(exc))
            spec = self.profile
        if spec != self.profile and self.profile is not None:
            self.log.warning("driver.profile_differs", configured=self.profile.name, world=spec)
        changed = spec != self.profile or address != self.world_address
        self.profile, self.world_address = spec, address
        if changed:
            with contextlib.suppress(TeamtreeError):
                await self.publish("factsheet", "factsheet", self.factsheet(), retain=True)
        self.log.info("driver.connected", world=address, world_session=session, robot=self.robot,
                      agent=self.agent, mission=self.mission_id)  # fmt: skip

    async def _retry(self, call: Any) -> dict[str, Any] | None:
        for attempt in range(_RETRIES):
            try:
                return await call()
            except RequestTimeoutError:
                self.log.warning("driver.world_timeout", attempt=attempt + 1)
            except LifecycleError:
                return None
        return None

    async def _publish_progress(self, event: dict[str, Any]) -> None:
        """Report one world event (``kind`` started, paused, ..., as the world logs it)."""
        await self.report(
            event["kind"],
            event.get("command_id"),
            event.get("node"),
            ok=bool(event.get("ok")),
            reason=event.get("reason"),
            t=event.get("t"),
        )

    # -- commands ----------------------------------------------------------------------

    async def _wait_client(self) -> SimClient | None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.command_wait_s):
                await self._client_ready.wait()
        return self.client

    async def carry_out(self, op: str, command: BehaviourCommand) -> None:
        """Pass one command to the world (leases and tokens as they are: the body
        enforces them) and keep the book of what it accepted."""
        client = await self._wait_client()
        if client is None:
            await self._fail_locally(op, command, "no_world")
            return
        if isinstance(command, ExecuteCommand):
            lease = command.lease_ms
            call = lambda: client.execute(  # noqa: E731
                self.robot,
                command.command_id,
                command.behaviour,
                command.params,
                node=command.node,
                lease_ms=lease,
                token=command.token if lease is not None else None,
                sent_ms=command.sent_ms,
                clock=command.clock,
            )
        elif isinstance(command, RenewCommand):
            call = lambda: client.renew(  # noqa: E731
                self.robot,
                command.command_id,
                command.lease_ms,
                command.token,
                sent_ms=command.sent_ms,
                clock=command.clock,
            )
        else:
            call = lambda: getattr(client, op)(self.robot, command.command_id)  # noqa: E731
        reply = await self._retry(call)
        self._wake.set()  # what the world did with it shows in the next poll
        if reply is None:
            await self._fail_locally(op, command, "world_timeout")
            return
        accepted = reply.get("ok") and reply.get("status") in ("running", "paused")
        if isinstance(command, ExecuteCommand) and accepted:
            self.accepted(command)
        elif isinstance(command, RenewCommand) and reply.get("ok"):
            self.renewed(command)
        if not reply.get("ok"):
            self.refused(op, command.command_id, reply["reason"], **_lease_detail(command, reply))
        else:
            self.log.debug(
                "driver.done", op=op, command_id=command.command_id, status=reply.get("status")
            )

    async def _fail_locally(self, op: str, command: BehaviourCommand, reason: str) -> None:
        """The world never answered: an execute is reported failed; others are logged."""
        self.log.warning("driver.unanswered", op=op, command_id=command.command_id, reason=reason)
        if isinstance(command, ExecuteCommand):
            await self.report("failed", command.command_id, command.node, reason=reason)


def _lease_detail(command: BehaviourCommand, reply: dict[str, Any]) -> dict[str, Any]:
    """For a ``lease_expired`` refusal: how old the command was on this driver's clock
    when the body answered, and the lease it carried (ms), so a log tells a stale
    command from a misread clock."""
    sent, lease = getattr(command, "sent_ms", None), getattr(command, "lease_ms", None)
    if reply.get("reason") != "lease_expired" or sent is None or lease is None:
        return {}
    return {"age_ms": wall_ms() - sent, "lease_ms": lease - sent}
