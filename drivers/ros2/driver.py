"""The ROS 2 driver agent (kind ``ros2_driver``): one ROS 2 robot as the body of a
teamtree robot agent.

Towards its robot agent it keeps the driver contract (docs/drivers.md) through the
drivers' shared base. Towards the robot it speaks ROS 2 through one rclpy node in a
thread of its own (``ros_side``), with the interfaces its config names by type, found
at run time (``interfaces``), so the same driver drives Nav2, MoveIt or a vendor's
action server wherever those interfaces are installed:

- execute -> the behaviour's goal (action), request (service) or message (topic),
  filled from the leaf (``mapping``); ``started`` once the action server accepts the
  goal (a service: once called; a topic: once published); ``finished`` on
  ``succeeded`` (a service: its ``success`` field true, or no such field);
  ``failed`` when the server rejects the goal (``ros2_rejected``), aborts it
  (``ros2_aborted`` with the result's fields, the robot's own words first) or the
  service answers false (``ros2_failed`` with its ``message``);
- goal feedback -> the observation's ``robot.feedback`` (the running goal's latest);
- cancel -> ``cancel_goal_async`` on the goal; the behaviour fails ``cancelled`` when
  the server reports it canceled;
- leases: the robot's ``lease_ms`` is kept by the driver, which cancels the goal
  when it lapses (``lease_expired``); with ``lease_guard`` (default) a watchdog
  process of its own holds the same deadlines and cancels the goal through the
  action's cancel service when the driver itself stops renewing it (frozen or
  killed), see ``lease_guard``;
- availability: the robot is ONLINE while every mapped action and service server is
  on the graph and, with a ``pose`` topic, a pose arrived within ``alive_s``. Going
  OFFLINE fails the running behaviour (``connection_broken``), asks the server to
  cancel its goal, and empties the observation's objects, so the robot claims nothing
  and a teammate takes the node by the peer rule; when the robot comes back its
  abandoned goals are cancelled again.

Observations: the pose topic's position is the robot's ``arm`` and ``base`` (or the
config's ``arm``), the battery and diagnostics topics' latest values ride along, and
the config's stations and objects are the objects (an object a behaviour placed shows
at its goal). Objects carry no ``goal``: the driver does not perceive the world, only
what its own robot did, so a teammate's done is believed for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from dataclasses import dataclass
from typing import Any

from teamtree.agents.runtime.behaviour_wire import (
    OBSERVATION_CHANNEL,
    BehaviourCommand,
    ExecuteCommand,
    RenewCommand,
)
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.broker import TeamtreeError, wall_ms
from teamtree.drivers.base import DriverAgent, RunningCommand
from teamtree.drivers.ros2.driver_config import driver_params
from teamtree.drivers.ros2.lease_guard import GuardLink
from teamtree.drivers.ros2.mapping import (
    BehaviourError,
    Site,
    fill_placeholders,
    lookup_behaviour,
)
from teamtree.drivers.ros2.params import BehaviourSpec
from teamtree.drivers.ros2.ros_side import RosSide

#: diagnostic_msgs/DiagnosticStatus levels
_LEVELS = {0: "OK", 1: "WARN", 2: "ERROR", 3: "STALE"}


@dataclass
class _Running:
    """The behaviour the robot is carrying out for the robot agent."""

    command_id: str
    node: str | None
    behaviour: str
    params: dict[str, Any]
    spec: BehaviourSpec
    ref: str
    sent_at: float
    accepted: bool = False
    goal_id: str | None = None
    cancel_reason: str | None = None
    feedback: Any = None


class Ros2DriverAgent(DriverAgent):
    """Drive one ROS 2 robot for robot agent `agent` (see module docstring)."""

    kind = "ros2_driver"

    def __init__(
        self,
        *args: Any,
        agent: str,
        behaviours: dict[str, BehaviourSpec],
        site: Site,
        domain_id: int | None = None,
        node_name: str | None = None,
        pose: Any = None,
        battery: Any = None,
        diagnostics: Any = None,
        arm: tuple[float, float, float] | None = None,
        alive_s: float = 2.0,
        server_wait_s: float = 5.0,
        observation_hz: float = 5.0,
        lease_guard: bool = True,
        cancel_on_agent_loss: bool = True,
        frame: str = "map",
        **kwargs: Any,
    ):
        super().__init__(*args, agent=agent, cancel_on_agent_loss=cancel_on_agent_loss, **kwargs)
        self.behaviours = behaviours
        self.site = site
        self.domain_id = domain_id
        self.node_name = node_name or re.sub(r"[^A-Za-z0-9_]", "_", f"teamtree_{self.id}")
        self.pose_ref, self.battery_ref, self.diagnostics_ref = pose, battery, diagnostics
        self.arm = arm
        self.alive_s = alive_s
        self.server_wait_s = server_wait_s
        self.observation_period = 1.0 / observation_hz
        self.use_lease_guard = lease_guard
        self.guard: GuardLink | None = None
        self.current: _Running | None = None
        self.servers: dict[str, bool] = {}
        self.pose: tuple[float, float, float, float] | None = None
        self.pose_at: float | None = None
        self.battery: dict[str, Any] | None = None
        self.diagnostics: list[tuple[int, str, str]] = []
        self.online = False
        self.abandoned: dict[str, str] = {}  # ref -> action name, of goals given up on
        self.timings: list[dict[str, float]] = []  # per goal: sent -> accepted -> ended
        self.ros: RosSide | None = None
        self._events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._refs = itertools.count(1)
        self._observe_now = asyncio.Event()
        self._online_changed = asyncio.Event()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the behaviours (their interface types must be installed), topics,
        stations and objects (``driver_config``)."""
        return driver_params(spec, config)

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "agent": self.agent,
            "ros2": {
                "node": self.node_name,
                "domain_id": self.domain_id,
                "online": self.online,
                "servers": dict(self.servers),
            },
            "capabilities": {
                "behaviours": {
                    name: {"via": s.via, "name": s.name, "type": s.type}
                    for name, s in sorted(self.behaviours.items())
                },
            },
        }

    # -- the ROS side's events, in the asyncio thread -----------------------------------

    def _emit_from_ros(self, kind: str, data: Any) -> None:
        """Called in the ROS thread: hand the event to this agent's loop."""
        self._loop.call_soon_threadsafe(self._events.put_nowait, (kind, data))

    async def serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.ros = RosSide(
            node_name=self.node_name,
            domain_id=self.domain_id,
            behaviours=self.behaviours,
            emit=self._emit_from_ros,
            pose=self.pose_ref,
            battery=self.battery_ref,
            diagnostics=self.diagnostics_ref,
        )
        await asyncio.to_thread(self.ros.start)
        kind, data = await self._events.get()
        if kind != "ready":
            fix = "check the ROS 2 installation and the driver's domain_id"
            self.log.error("driver.ros2_failed", error=data, fix=fix)
            raise TeamtreeError(f"the ROS 2 node did not start: {data}")
        self.log.info("driver.ros2_ready", node=self.node_name, domain_id=self.domain_id)
        if self.use_lease_guard:
            self.guard = GuardLink(self.node_name, self.domain_id, self.log)
            await self.guard.start()
        self.spawn(self._observation_loop(), "observations")
        self.spawn(self.watch_leases(0.05), "lease_watch")
        while True:
            kind, data = await self._events.get()
            try:
                await self._on_ros(kind, data)
            except Exception as exc:  # one odd event must not stop the driver
                self.log.error("driver.ros2_event_failed", event=kind, error=repr(exc),
                               exc_info=True)  # fmt: skip

    async def on_stop(self) -> None:
        await super().on_stop()
        if self.guard is not None:
            await self.guard.stop()
        if self.ros is not None:
            await asyncio.to_thread(self.ros.stop)

    async def _on_ros(self, kind: str, data: Any) -> None:
        if kind == "servers":
            self.servers = data
            await self._check_online()
        elif kind == "pose":
            self.pose, self.pose_at = data, time.monotonic()
            await self._check_online()
        elif kind == "battery":
            self.battery = data
        elif kind == "diagnostics":
            self.diagnostics = data
        elif kind == "failed":
            raise TeamtreeError(f"the ROS 2 node stopped: {data}")
        else:
            await self._on_goal_event(kind, data)

    def _availability(self) -> str:
        """ "" when the robot is ONLINE, else why not."""
        missing = [
            f"{self.behaviours[k].via} {self.behaviours[k].name}"
            for k, ready in sorted(self.servers.items())
            if not ready
        ]
        if not self.servers and any(s.via != "topic" for s in self.behaviours.values()):
            return "its servers have not been looked for yet"
        if missing:
            return "no " + ", ".join(missing) + " on the ROS 2 graph"
        if self.pose_ref is not None:
            if self.pose_at is None:
                return f"no pose on {self.pose_ref.topic} yet"
            silent = time.monotonic() - self.pose_at
            if silent > self.alive_s:
                return f"no pose on {self.pose_ref.topic} for {silent:.1f} s"
        return ""

    async def _check_online(self) -> None:
        why = self._availability()
        online = not why
        if online == self.online:
            return
        self.online = online
        self._online_changed.set()
        self._observe_now.set()
        self.log.info("driver.ros2_connection", state="ONLINE" if online else "OFFLINE", why=why)
        with contextlib.suppress(TeamtreeError):
            await self.publish("factsheet", "factsheet", self.factsheet(), retain=True)
        if online:
            for ref in list(self.abandoned):
                self.log.warning("driver.cancel_abandoned", ref=ref)
                assert self.ros is not None
                self.ros.cancel_goal(ref)
            self.abandoned.clear()
            return
        run, self.current = self.current, None
        if run is not None:
            if run.spec.via == "action":
                self.abandoned[run.ref] = run.spec.name
                assert self.ros is not None
                self.ros.cancel_goal(run.ref)  # heard if the robot is only partitioned
            await self.report_run("failed", run, f"connection_broken: {why}")

    # -- goal events ----------------------------------------------------------------------

    async def _on_goal_event(self, kind: str, data: Any) -> None:
        ref = data[0] if isinstance(data, tuple) else data
        run = self.current
        if run is None or run.ref != ref:
            if kind == "accepted" and ref in self.abandoned and self.ros is not None:
                self.ros.cancel_goal(ref)  # accepted after we gave it up: stop it
            if kind in ("result", "cancel_answer"):
                self.log.info("driver.late_" + kind, ref=ref, detail=data[1:])
                if self.guard is not None:
                    await self.guard.ended(ref)
            return
        if kind == "accepted":
            run.accepted, run.goal_id = True, data[1]
            self.timings.append({"sent": run.sent_at, "accepted": time.monotonic()})
            if self.guard is not None and run.goal_id is not None and self.running is not None:
                await self.guard.hold(ref, run.spec.name, run.goal_id, self.running.lease_ms)
            await self.report_run("started", run)
        elif kind == "rejected":
            self.current = None
            reason = f"ros2_rejected: {run.spec.name} rejected the goal for {run.behaviour}"
            await self.report_run("failed", run, reason)
        elif kind == "feedback":
            run.feedback = data[1]
            self.stats["feedback"] += 1
            self._observe_now.set()
        elif kind == "result":
            await self._result(run, data[1], data[3])
        elif kind == "response":
            await self._response(run, data[1], data[2])
        elif kind == "published":
            self.current = None
            await self.report_run("started", run)
            await self._ended_well(run)
        elif kind == "goal_error":
            self.current = None
            await self.report_run("failed", run, data[1])
        elif kind == "cancel_answer" and data[1] in ("rejected", "unknown_goal_id"):
            self.log.warning("driver.cancel_refused", ref=ref, answer=data[1])

    async def _result(self, run: _Running, status: str, text: str) -> None:
        self.current = None
        if self.guard is not None:
            await self.guard.ended(run.ref)
        if self.timings and "ended" not in self.timings[-1]:
            self.timings[-1]["ended"] = time.monotonic()
        if status == "succeeded":
            await self._ended_well(run)
        elif status == "canceled":
            await self.report_run(
                "failed", run, f"{run.cancel_reason or 'cancelled'} (goal canceled)"
            )
        else:
            reason = f"ros2_{status}: {run.spec.name} {status} the goal: {text}"
            await self.report_run("failed", run, reason)

    async def _response(self, run: _Running, response: dict[str, Any], text: str) -> None:
        self.current = None
        field = run.spec.success_field or ("success" if "success" in response else None)
        if field is None or bool(response.get(field)):
            await self._ended_well(run)
        else:
            await self.report_run("failed", run, f"ros2_failed: {run.spec.name}: {text}")

    async def _ended_well(self, run: _Running) -> None:
        self.site.finished(run.behaviour, run.params)
        self._observe_now.set()
        await self.report_run("finished", run)

    # -- commands ------------------------------------------------------------------------

    async def carry_out(self, op: str, command: BehaviourCommand) -> None:
        if isinstance(command, ExecuteCommand):
            await self._execute(command)
            return
        run = self.current
        command_id = command.command_id
        if run is None or (command_id is not None and command_id != run.command_id):
            self.log.info("driver.nothing_to_" + op, command_id=command_id)
            return
        if isinstance(command, RenewCommand):
            if self.renewed(command) and self.guard is not None and self.running is not None:
                await self.guard.renew(run.ref, self.running.lease_ms)
        elif op == "cancel":
            await self._cancel(run, "cancelled")
        else:  # pause / resume: ROS 2 actions have neither
            self.refused(op, command_id, "ROS 2 actions have no pause; cancel and send again")

    async def _cancel(self, run: _Running, reason: str) -> None:
        if run.cancel_reason is not None:
            return
        run.cancel_reason = reason
        if run.spec.via != "action":
            self.refused("cancel", run.command_id, f"a {run.spec.via} call cannot be cancelled")
            return
        assert self.ros is not None
        self.ros.cancel_goal(run.ref)

    async def lease_lapsed(self, book: RunningCommand) -> bool:
        run = self.current
        if run is None or run.command_id != book.command_id or run.cancel_reason is not None:
            return False
        await self._cancel(run, "lease_expired")
        return True

    async def _wait_online(self) -> str:
        """ "" once the robot is ONLINE (waiting at most ``server_wait_s``), else why not."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.server_wait_s):
                while not self.online:
                    self._online_changed.clear()
                    await self._online_changed.wait()
        return "" if self.online else self._availability()

    async def _execute(self, body: ExecuteCommand) -> None:
        if self.current is not None:
            await self.report_run("failed", body, f"busy: running {self.current.command_id}")
            return
        try:
            spec = lookup_behaviour(self.behaviours, body.behaviour)
            values = fill_placeholders(
                spec.goal, self.site.context(body.behaviour.upper(), body.params)
            )
        except BehaviourError as exc:
            await self.report_run("failed", body, str(exc))
            return
        why = await self._wait_online()
        if why:
            await self.report_run("failed", body, f"ros2_unavailable: {why}")
            return
        lease_ms = self.lease_deadline_ms(body)
        if lease_ms is not None and lease_ms <= wall_ms():
            await self.report_run("failed", body, "lease_expired")  # it waited out its lease
            return
        ref = f"{body.command_id}#{next(self._refs)}"
        run = _Running(body.command_id, body.node, body.behaviour.upper(), dict(body.params),
                       spec, ref, time.monotonic())  # fmt: skip
        self.current = run
        self.accepted(body)
        key = body.behaviour.upper()
        assert self.ros is not None
        if spec.via == "action":
            self.ros.send_goal(ref, key, values)
        elif spec.via == "service":
            self.ros.call_service(ref, key, values)
        else:
            self.ros.publish(ref, key, values)
        self.log.info("driver.goal_sent", via=spec.via, name=spec.name, ref=ref)

    # -- observations ----------------------------------------------------------------------

    def observation(self) -> dict[str, Any]:
        """What the robot agent sees: the robot's pose as its arm, the config's stations
        and objects (none while the robot is OFFLINE: it then claims nothing)."""
        if self.pose is not None:
            x, y, z, yaw = self.pose
            base = [x, y, z]
            arm = base
        else:
            arm = list(self.arm or (0.0, 0.0, 0.0))
            base, yaw = [arm[0], arm[1], 0.0], 0.0
        objects: dict[str, Any] = {}
        if self.online:
            for place in (*self.site.stations.values(), *self.site.objects.values()):
                at = self.site.placed.get(place.name)
                view: dict[str, Any] = {
                    "shape": place.shape,
                    "dims": list(place.dims),
                    "position": list(at or (place.x, place.y, place.z)),
                }
                if not place.is_station:
                    # no ``goal``: the driver sees only what its own robot did, so the
                    # robot takes a teammate's word for an object placed elsewhere
                    view["at_goal"] = at is not None
                objects[place.name] = view
        run = self.current
        return {
            "t": time.time(),
            "robot": {
                "name": self.agent,
                "arm": arm,
                "base": base,
                "yaw": yaw,
                "busy": run.command_id if run is not None else None,
                "paused": False,
                "connection": "ONLINE" if self.online else "OFFLINE",
                # percent, as VDA 5050's batteryCharge (the map shows it); the whole
                # BatteryState's main fields beside it
                "battery": self._battery_percent(),
                "battery_state": self.battery,
                "errors": [
                    f"{_LEVELS.get(level, level)} {name}: {message}"
                    for level, name, message in self.diagnostics
                    if level >= 2
                ][:5],
                "feedback": run.feedback if run is not None else None,
            },
            "objects": objects,
        }

    def _battery_percent(self) -> float | None:
        """``sensor_msgs/BatteryState.percentage`` (0-1) as percent, if it is known."""
        value = (self.battery or {}).get("percentage")
        if isinstance(value, int | float) and value == value:  # NaN: not measured
            return round(float(value) * 100.0, 1)
        return None

    async def _observation_loop(self) -> None:
        while True:
            await self._check_online()  # a pose topic gone silent is noticed here
            with contextlib.suppress(TeamtreeError):
                await self.publish(OBSERVATION_CHANNEL, "observation", self.observation(), qos=0)
            self._observe_now.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.observation_period):
                    await self._observe_now.wait()
