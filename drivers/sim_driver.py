"""The driver of a simulated robot: bridges one robot body of the world (over ZeroMQ)
to its robot agent (over MQTT).

It finds the world's address in the retained factsheet of the team's ``world`` agent,
waits until it is there, and then:

======================================= ===================== === ======================
topic                                   kind                  QoS body
======================================= ===================== === ======================
in  ``<agent>/command/<me>``            ``behaviour.execute`` 1   command_id, node,
                                                                  behaviour, params,
                                                                  lease_ms, token
in  ``<agent>/command/<me>``            ``behaviour.renew``   1   command_id, lease_ms,
                                                                  token
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
world's event log, so each event is published once. When the robot agent vanishes
(Last Will or OFFLINE) the driver cancels its behaviour, putting down anything it
holds, so a teammate can take the work over. Leases (``lease_ms``, ``token``) are
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

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import LifecycleError, RequestTimeoutError, TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.drivers.sim_params import SimDriverParams
from teamtree.hardware.profiles import PROFILES, RobotProfileSpec
from teamtree.hardware.sim_client import SimClient

COMMAND_CHANNEL = "command"
OBSERVATION_CHANNEL = "observation"
PROGRESS_CHANNEL = "progress"
COMMAND_KINDS = {
    "behaviour.execute": "execute",
    "behaviour.cancel": "cancel",
    "behaviour.pause": "pause",
    "behaviour.resume": "resume",
    "behaviour.renew": "renew",
}
_RETRIES = 3
ZMQ_ADDRESS = re.compile(r"^(tcp|ipc|inproc)://\S+$")
"""What a world's ``zmq`` factsheet field must look like."""


class SimDriverAgent(Agent):
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
        observation_hz: float = 10.0,
        zmq_timeout_s: float = 1.0,
        command_wait_s: float = 10.0,
        cancel_on_agent_loss: bool = True,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.robot = robot
        self.agent = agent or robot
        self.world_id = world
        self.profile: RobotProfileSpec | None = PROFILES.get(profile or robot)
        self.poll_period = 1.0 / poll_hz
        self.observation_period = 1.0 / observation_hz
        self.zmq_timeout_s = zmq_timeout_s
        self.command_wait_s = command_wait_s
        self.cancel_on_agent_loss = cancel_on_agent_loss
        self.client: SimClient | None = None
        self.world_address: str | None = None
        self.observation: dict[str, Any] | None = None
        self._client_ready = asyncio.Event()
        self._commands: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._running: tuple[str, str | None] | None = None
        """(command_id, node) of the execute the world accepted and has not ended."""

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

    # -- wiring ------------------------------------------------------------------------

    async def setup(self) -> None:
        self.on_agents(COMMAND_CHANNEL, self._on_command, addressed=True)

    async def _on_command(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.agent or topic.recipient != self.id:
            self.stats["commands_ignored"] += 1
            return
        op = COMMAND_KINDS.get(env.kind)
        body = env.body if isinstance(env.body, dict) else None
        if op is None or body is None:
            self._drop("malformed", str(topic), env.sender, f"command {env.kind!r}")
            return
        self.log.debug("command.received", kind=env.kind, command_id=body.get("command_id"))
        self._commands.put_nowait((op, body))

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if (
            agent_id == self.agent
            and self.cancel_on_agent_loss
            and new in (Presence.CONNECTION_BROKEN, Presence.OFFLINE)
        ):
            self.log.info("driver.agent_lost", agent=agent_id, state=new.value)
            self._commands.put_nowait(("cancel", {"command_id": None, "lost": True}))

    # -- main loops --------------------------------------------------------------------

    async def main(self) -> None:
        self.spawn(self._command_loop(), "commands")
        while True:
            address, session = await self._find_world()
            try:
                async with SimClient(address, timeout=self.zmq_timeout_s) as client:
                    await self._serve_world(client, address, session)
            except (TeamtreeError, KeyError, TypeError, ValueError, zmq.ZMQError) as exc:
                self.log.error("driver.world_failed", world=address, error=repr(exc))
                await asyncio.sleep(1.0)

    async def _find_world(self) -> tuple[str, str | None]:
        """Wait until a world agent is ONLINE with a ``zmq`` address in its factsheet."""
        logged = False
        while True:
            for member_id in sorted(self.team_view.online(kind="world")):
                if self.world_id is not None and member_id != self.world_id:
                    continue
                member = self.team_view.get(member_id)
                address = member.factsheet.get("zmq") if member is not None else None
                if member is None or not isinstance(address, str) or not ZMQ_ADDRESS.match(address):
                    continue  # e.g. a forged factsheet: the world will publish its own again
                if member.factsheet.get("session") not in (None, member.session):
                    continue  # not from the process whose presence we believe
                return address, member.session
            if not logged:
                self.log.info("driver.waiting_for_world", world=self.world_id or "any")
                logged = True
            await asyncio.sleep(0.05)

    def _world_still(self, address: str, session: str | None) -> bool:
        for member_id in self.team_view.online(kind="world"):
            member = self.team_view.get(member_id)
            if member is not None and member.factsheet.get("zmq") == address:
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
        await self._adopt(info["robots"][self.robot], address)
        first = await self._retry(lambda: client.observe(self.robot, 0))
        if first is None:
            return
        since = int(first.get("seq", 0))  # events before we came are not ours to report
        await self._reconcile(first)
        self.client = client
        self._client_ready.set()
        last_published, last_body = 0.0, None
        failures = 0
        try:
            while self._world_still(address, session):
                try:
                    obs = await client.observe(self.robot, since)
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
                if obs["seq"] < since:  # the world restarted on the same address
                    since = 0
                for event in obs["events"]:
                    since = max(since, int(event["seq"]))
                    await self._publish_progress(event)
                body = {"t": obs["t"], "robot": obs["robot"], "objects": obs["objects"]}
                if "hands" in obs:  # tracked human hands (seed 000 §2.3)
                    body["hands"] = obs["hands"]
                now = time.monotonic()
                changed = (body["robot"], body["objects"], body.get("hands")) != last_body
                if changed or now - last_published >= self.observation_period:
                    self.observation = body
                    last_body = (body["robot"], body["objects"], body.get("hands"))
                    last_published = now
                    with contextlib.suppress(TeamtreeError):
                        await self.publish(OBSERVATION_CHANNEL, "observation", body, qos=0)
                await asyncio.sleep(self.poll_period)
        finally:
            self._client_ready.clear()
            self.client = None
        self.log.info("driver.world_gone", world=address)

    async def _reconcile(self, obs: dict[str, Any]) -> None:
        """After (re)connecting to a world: a command it accepted before and no longer
        runs (the world restarted and forgot it) is reported failed, so the robot gives
        the node back instead of waiting for it forever."""
        running = self._running
        robot = obs.get("robot") if isinstance(obs.get("robot"), dict) else {}
        if running is None or robot.get("busy") == running[0]:
            return
        self.log.warning("driver.command_lost", command_id=running[0], reason="world_restarted")
        self._running = None
        event = {"kind": "failed", "command_id": running[0], "node": running[1], "ok": False,
                 "reason": "world_restarted", "t": obs.get("t")}  # fmt: skip
        await self._publish_progress(event)

    async def _adopt(self, robot_info: dict[str, Any], address: str) -> None:
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
        self.log.info("driver.connected", world=address, robot=self.robot, agent=self.agent)

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
        kind = f"behaviour.{event['kind']}"
        if (
            self._running is not None
            and event.get("command_id") == self._running[0]
            and event["kind"] in ("finished", "failed")
        ):
            self._running = None
        body = {
            "command_id": event.get("command_id"),
            "node": event.get("node"),
            "robot": self.robot,
            "ok": bool(event.get("ok")),
            "reason": event.get("reason"),
            "t": event.get("t"),
        }
        self.log.info(
            "driver.progress", kind=kind, command_id=body["command_id"], reason=body["reason"]
        )
        with contextlib.suppress(TeamtreeError):
            await self.publish(PROGRESS_CHANNEL, kind, body)

    # -- commands ----------------------------------------------------------------------

    async def _wait_client(self) -> SimClient | None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.command_wait_s):
                await self._client_ready.wait()
        return self.client

    async def _command_loop(self) -> None:
        while True:
            op, body = await self._commands.get()
            try:
                await self._carry_out(op, body)
            except Exception as exc:  # one bad command must not stop the driver
                self.log.error("driver.command_failed", op=op, error=repr(exc), exc_info=True)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise  # the driver stops
                # a cancellation from below (e.g. a closed socket) is not ours: go on
                self.log.error("driver.command_failed", op=op, error="cancelled")

    async def _carry_out(self, op: str, body: dict[str, Any]) -> None:
        command_id = body.get("command_id")
        if op in ("execute", "renew") and not isinstance(command_id, str):
            self.log.warning("driver.bad_command", op=op, body=body)
            return
        client = await self._wait_client()
        if client is None:
            await self._fail_locally(op, body, "no_world")
            return
        lease = body.get("lease_ms") if isinstance(body.get("lease_ms"), int) else None
        if op == "execute":
            call = lambda: client.execute(  # noqa: E731
                self.robot,
                command_id,  # type: ignore[arg-type]
                str(body.get("behaviour", "")),
                body.get("params") if isinstance(body.get("params"), dict) else {},
                node=body.get("node") if isinstance(body.get("node"), str) else None,
                lease_ms=lease,
                token=body.get("token") if lease is not None else None,
            )
        elif op == "renew":
            if lease is None:
                self.log.warning("driver.bad_command", op=op, body=body)
                return
            call = lambda: client.renew(self.robot, command_id, lease, body.get("token"))  # type: ignore[arg-type]  # noqa: E731
        else:
            cid = command_id if isinstance(command_id, str) else None
            call = lambda: getattr(client, op)(self.robot, cid)  # noqa: E731
        reply = await self._retry(call)
        if reply is None:
            await self._fail_locally(op, body, "world_timeout")
            return
        if op == "execute" and reply.get("ok") and reply.get("status") in ("running", "paused"):
            node = body.get("node") if isinstance(body.get("node"), str) else None
            self._running = (command_id, node)  # type: ignore[assignment]
        if not reply.get("ok"):
            self.log.info("driver.refused", op=op, command_id=command_id, reason=reply["reason"])
        else:
            self.log.debug("driver.done", op=op, command_id=command_id, status=reply.get("status"))

    async def _fail_locally(self, op: str, body: dict[str, Any], reason: str) -> None:
        """The world never answered: an execute is reported failed; others are logged."""
        self.log.warning(
            "driver.unanswered", op=op, command_id=body.get("command_id"), reason=reason
        )
        if op == "execute":
            event = {
                "kind": "failed",
                "command_id": body.get("command_id"),
                "node": body.get("node"),
                "ok": False,
                "reason": reason,
                "t": None,
            }
            await self._publish_progress(event)
