"""The VDA 5050 driver agent (kind ``vda5050_driver``): master control for one AGV.

Towards its robot agent it keeps the same contract as the simulated driver, through
the drivers' shared base (``teamtree.drivers.base``):
``behaviour.execute|renew|cancel|pause|resume`` commands in on ``<robot>/command/<me>``,
``behaviour.started|paused|resumed|finished|failed`` out on ``<me>/progress`` and
observations on ``<me>/observation``. Towards the AGV it speaks VDA 5050 v2 JSON on the
AGV's own broker (see ``topics``):

- execute -> an ``order`` (or an order update extending the last one, see ``order``);
  the behaviour has ``started`` once a ``state`` carries the order, ``finished`` when
  its nodes are passed and its actions FINISHED, ``failed`` with the AGV's error text
  when it rejects the order or an action fails, or with ``agv_no_answer`` when no
  state acknowledges it within ``ack_timeout_s``;
- cancel -> instant action ``cancelOrder`` (the behaviour fails ``cancelled`` when the
  AGV reports it done); pause / resume -> ``startPause`` / ``stopPause`` (``paused`` /
  ``resumed`` once the state's ``paused`` flag shows it);
- ``connection`` OFFLINE or CONNECTIONBROKEN (the AGV's Last Will) fails the running
  behaviour (``connection_broken``) so the robot releases the node to a teammate by
  the peer rule, and empties the observation's objects, so the robot's potentials drop
  to 0 and it claims nothing until the AGV is ONLINE again. An order abandoned that way
  is cancelled if the AGV comes back still running it: no behaviour runs on two bodies.
- leases: the AGV knows none, so the driver keeps the lease of the running behaviour
  (``lease_ms`` of the execute, moved on by ``behaviour.renew``) and cancels the order
  (``cancelOrder``) when it lapses; the behaviour then fails ``lease_expired``. This
  stops the AGV when its robot froze or lost the broker while the driver still runs;
  a driver frozen with its robot cannot (the AGV finishes its order).
- on ONLINE it sends ``factsheetRequest``; the factsheet's actions and limits are
  published in this agent's own factsheet (``capabilities``) and a behaviour needing an
  action the factsheet does not list fails ``unsupported_action`` without an order.

Choice: VDA 5050 2.0.0's text names the instant actions array ``actions`` while its
JSON schema (and vda-5050-lib, which validates against it) requires ``instantActions``;
2.1.0 settled on ``actions``. For version 2.0.0 the driver sends both keys with the same
list, so either reading finds it; for 2.1.0 only ``actions``.

Every message it sends is first validated against the VDA 5050 JSON schemas when they
are installed (``schema``): an invalid one is not sent and the behaviour fails with the
schema error. Messages from the AGV are validated too and counted in ``stats``. The
session with the AGV's broker is ``agv_link``.

Observations: the robot scores leaves by the distance from its "arm" to the leaf's
object (seed 000 eq. 1), so the driver reports the AGV's position as ``arm``/``base``
and each load (at its station, or held) and station as an object (``observation``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import aiomqtt

from teamtree.agents.runtime.behaviour_wire import (
    OBSERVATION_CHANNEL,
    BehaviourCommand,
    ExecuteCommand,
    RenewCommand,
)
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.broker import TeamtreeError, wall_ms
from teamtree.broker.endpoint import parse_endpoint
from teamtree.drivers.base import DriverAgent, RunningCommand, driven_agent
from teamtree.drivers.vda5050.agv_link import AgvLink
from teamtree.drivers.vda5050.capabilities import capabilities
from teamtree.drivers.vda5050.observation import agv_observation
from teamtree.drivers.vda5050.order import OrderBuilder, SentOrder
from teamtree.drivers.vda5050.params import Vda5050Params
from teamtree.drivers.vda5050.schema import SchemaCheck, SchemasUnavailable
from teamtree.drivers.vda5050.site import DROP, PICK, BehaviourError, Site, site_from_config
from teamtree.drivers.vda5050.state import ACCEPTED, FINISHED, assess, error_text, new_errors
from teamtree.drivers.vda5050.topics import AgvAddress, Headers


@dataclass
class _Running:
    """The behaviour the AGV is carrying out for the robot."""

    command_id: str
    node: str | None
    order: SentOrder
    header_id: int
    sent_at: float
    started: bool = False
    pause: str | None = None  # "pause"/"resume" requested, reported once the state shows it
    cancel_action: str | None = None
    cancel_reason: str = "cancelled"  # or "lease_expired" when the driver cancelled it
    loads: list[tuple[str, str, str]] = field(default_factory=list)  # (action, load, station)


class Vda5050DriverAgent(DriverAgent):
    """Drive one VDA 5050 AGV for robot agent `agent` (see module docstring)."""

    kind = "vda5050_driver"

    def __init__(
        self,
        *args: Any,
        agent: str,
        manufacturer: str,
        serial_number: str,
        site: Site,
        interface_name: str = "uagv",
        version: str = "2.0.0",
        agv_broker: str | None = None,
        validate: bool | None = None,
        schema_dir: str | None = None,
        ack_timeout_s: float = 5.0,
        observation_hz: float = 5.0,
        request_factsheet: bool = True,
        cancel_on_agent_loss: bool = True,
        **kwargs: Any,
    ):
        super().__init__(*args, agent=agent, cancel_on_agent_loss=cancel_on_agent_loss, **kwargs)
        self.address = AgvAddress(manufacturer, serial_number, interface_name, version)
        self.headers = Headers(self.address)
        self.site = site
        #: the session with the AGV's broker: login, schema checks, orders out, states in
        self.link = AgvLink(
            self,
            self.address,
            self.headers,
            self._on_agv_message,
            agv_broker=agv_broker,
            validate=validate,
            schema_dir=schema_dir,
        )
        self.ack_timeout_s = ack_timeout_s
        self.observation_period = 1.0 / observation_hz
        self.request_factsheet = request_factsheet
        self.builder = OrderBuilder(f"{self.id}-{self.session}")
        self.agv_state: dict[str, Any] | None = None
        self.connection_state: str | None = None
        self.agv_factsheet: dict[str, Any] | None = None
        self.current: _Running | None = None
        self.abandoned: set[str] = set()
        self.timings: list[dict[str, float]] = []  # per order: sent -> acknowledged -> done
        self._errors_seen: list[Any] = []
        self._observe_now = asyncio.Event()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the AGV's identity, its broker, stations and loads."""
        reader = spec_reader(spec, config)
        defaults = driven_agent(spec, config)
        params = decode_params(spec, config, Vda5050Params, **defaults)
        if params.agv_broker is not None:
            try:
                parse_endpoint(params.agv_broker)
            except TeamtreeError as exc:
                raise reader.error("agv_broker", str(exc)) from None
        try:
            site = site_from_config(params.stations, params.loads, params.action_parameters)
        except ValueError as exc:
            raise reader.error("stations" if "station" in str(exc) else "loads", str(exc)) from None
        clash = sorted(set(site.stations) & set(site.loads))
        if clash:
            raise reader.error("loads", f"{', '.join(clash)} name both a station and a load")
        if params.validate:
            try:
                SchemaCheck(params.schema_dir)
            except SchemasUnavailable as exc:
                raise reader.error("validate", str(exc)) from None
        out = params_dict(params)
        for key in ("stations", "loads", "action_parameters"):
            del out[key]
        return {**out, "site": site}

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "agent": self.agent,
            "agv": {
                "manufacturer": self.address.manufacturer,
                "serial_number": self.address.serial_number,
                "interface_name": self.address.interface_name,
                "version": self.address.version,
                "broker": self.link.endpoint.url,
                "connection": self.connection_state,
            },
            "capabilities": self.capabilities(),
        }

    def capabilities(self) -> dict[str, Any]:
        """What the AGV's factsheet says it can do (actions and limits), if it sent one."""
        return capabilities(self.agv_factsheet)

    # -- teamtree side -------------------------------------------------------------

    # -- main loops ----------------------------------------------------------------

    async def serve(self) -> None:
        self.spawn(self._observation_loop(), "observations")
        self.spawn(self.watch_leases(0.1), "leases")
        backoff = 0.2
        while True:
            try:
                await self.link.serve()
                backoff = 0.2
            except aiomqtt.MqttError as exc:
                self.log.warning(
                    "driver.agv_broker_lost", broker=self.link.endpoint.url, error=str(exc)
                )
            self.link.client = None
            await self._on_connection("CONNECTIONBROKEN", why="the AGV's broker is unreachable")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    async def _on_agv_message(self, sub: str, payload: dict[str, Any]) -> None:
        if sub == "connection":
            await self._on_connection(str(payload.get("connectionState")))
        elif sub == "state":
            await self._on_state(payload)
        elif sub == "factsheet":
            self.agv_factsheet = payload
            self.log.info("driver.factsheet", capabilities=self.capabilities())
            with contextlib.suppress(TeamtreeError):
                await self.publish("factsheet", "factsheet", self.factsheet(), retain=True)

    async def _on_connection(self, state: str, why: str = "") -> None:
        old, self.connection_state = self.connection_state, state
        if state == old:
            return
        self.log.info("driver.agv_connection", state=state, previous=old)
        self._observe_now.set()
        with contextlib.suppress(TeamtreeError):
            await self.publish("factsheet", "factsheet", self.factsheet(), retain=True)
        if state == "ONLINE":
            if self.request_factsheet:
                await self.link.instant("factsheetRequest")
            return
        run, self.current = self.current, None
        self.builder.forget()
        if run is not None:
            self.abandoned.add(run.order.order_id)
            text = why or f"AGV {self.address.serial_number} is {state}"
            await self.report_run("failed", run, f"connection_broken: {text}")

    async def _on_state(self, state: dict[str, Any]) -> None:
        self.agv_state = state
        if self.connection_state is None:  # a state without a connection message: it is there
            self.connection_state = "ONLINE"
            self._observe_now.set()
        for error in new_errors(self._errors_seen, state):
            self.log.warning("driver.agv_error", error=error_text(error))
        self._errors_seen = list(state.get("errors") or [])
        order_id = state.get("orderId")
        if order_id in self.abandoned and (state.get("nodeStates") or state.get("driving")):
            self.abandoned.discard(order_id)  # still running what a teammate took over
            self.log.warning("driver.cancel_abandoned", order_id=order_id)
            await self.link.instant("cancelOrder")
        run = self.current
        if run is None:
            return
        if run.cancel_action is not None:
            await self._check_cancel(run, state)
            return
        verdict = assess(run.order, state, run.header_id)
        if verdict is None:
            return
        if not run.started and verdict.status in (ACCEPTED, FINISHED):
            run.started = True
            self.timings.append({"sent": run.sent_at, "ack": time.monotonic()})
            await self.report_run("started", run)
        if verdict.status == ACCEPTED:
            await self._check_pause(run, state)
            return
        self.current = None
        if verdict.status == FINISHED:
            for action, load, station in run.loads:
                self.site.where[load] = station if action == DROP else "@agv"
            self.timings[-1]["done"] = time.monotonic()
            self._observe_now.set()
            await self.report_run("finished", run)
        else:
            self.builder.forget()
            await self.report_run("failed", run, f"agv_{verdict.status}: {verdict.reason}")

    async def _check_pause(self, run: _Running, state: dict[str, Any]) -> None:
        paused = bool(state.get("paused"))
        if run.pause == "pause" and paused:
            run.pause = None
            await self.report_run("paused", run)
        elif run.pause == "resume" and not paused:
            run.pause = None
            await self.report_run("resumed", run)

    async def _check_cancel(self, run: _Running, state: dict[str, Any]) -> None:
        for action in state.get("actionStates") or []:
            if isinstance(action, dict) and action.get("actionId") == run.cancel_action:
                status = action.get("actionStatus")
                if status in ("FINISHED", "FAILED"):
                    self.current = None
                    self.builder.forget()
                    detail = action.get("resultDescription") or status.lower()
                    await self.report_run("failed", run, f"{run.cancel_reason} ({detail})")
                return

    # -- commands ------------------------------------------------------------------

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
            self.renewed(command)
        elif op == "cancel":
            await self._cancel(run, "cancelled")
        elif op in ("pause", "resume"):
            run.pause = op
            await self.link.instant("startPause" if op == "pause" else "stopPause")

    async def _cancel(self, run: _Running, reason: str) -> None:
        """Send ``cancelOrder`` once; the behaviour fails `reason` when the AGV reports
        it done."""
        if run.cancel_action is None:
            run.cancel_reason = reason
            run.cancel_action = await self.link.instant("cancelOrder")
            if run.cancel_action is None:  # could not send: nothing more will come
                self.current = None
                await self.report_run("failed", run, f"{reason} (AGV not reachable)")

    async def lease_lapsed(self, book: RunningCommand) -> bool:
        run = self.current
        if run is None or run.command_id != book.command_id or run.cancel_action is not None:
            return False
        await self._cancel(run, "lease_expired")
        return True

    async def _execute(self, body: ExecuteCommand) -> None:
        if self.current is not None:
            await self.report_run("failed", body, f"busy: running {self.current.command_id}")
            return
        if self.connection_state != "ONLINE" or self.link.client is None or self.agv_state is None:
            state = self.connection_state or "not heard from"
            await self.report_run("failed", body, f"agv_offline: AGV is {state}")
            return
        lease_ms = self.lease_deadline_ms(body)
        if lease_ms is not None and lease_ms <= wall_ms():
            await self.report_run("failed", body, "lease_expired")  # it waited out its lease
            return
        try:
            stops = self.site.stops(body.behaviour, body.params)
        except BehaviourError as exc:
            await self.report_run("failed", body, str(exc))
            return
        listed = self.capabilities()["actions"]
        for stop in stops:
            for kind, _ in stop.actions:
                if self.agv_factsheet and kind not in listed:
                    reason = f"unsupported_action: {kind} is not in the AGV's factsheet"
                    await self.report_run("failed", body, reason)
                    return
        state = self.agv_state
        last = self.builder.last
        extend = (
            last is not None
            and state.get("orderId") == last.order_id
            and (state.get("lastNodeId"), state.get("lastNodeSequenceId")) == last.last_node
            and not state.get("nodeStates")
        )
        position = state.get("agvPosition")
        start_position = None
        if isinstance(position, dict) and position.get("positionInitialized", True):
            start_position = {
                "x": position.get("x", 0.0),
                "y": position.get("y", 0.0),
                "mapId": position.get("mapId", "local"),
            }
        order = self.builder.build(
            stops,
            self.site,
            command_id=body.command_id,
            extend=extend,
            start_node=str(state.get("lastNodeId") or "start"),
            start_position=start_position,
        )
        message = self.headers.stamp("order", order.body)
        run = _Running(
            body.command_id,
            body.node,
            order,
            message["headerId"],
            time.monotonic(),
            loads=[
                (kind, stop.load, stop.station)
                for stop in stops
                for kind, _ in stop.actions
                if stop.load is not None and kind in (PICK, DROP)
            ],
        )
        problem = await self.link.send("order", message)
        if problem:
            self.builder.forget()
            await self.report_run("failed", run, problem)
            return
        self.current = run
        self.accepted(body)
        self.log.info(
            "driver.order_sent",
            order_id=order.order_id,
            update=order.order_update_id,
            stations=list(order.stations),
        )
        self.spawn(self._ack_watch(run), "ack_watch", optional=True)

    async def _ack_watch(self, run: _Running) -> None:
        await asyncio.sleep(self.ack_timeout_s)
        if self.current is run and not run.started:
            self.current = None
            self.builder.forget()
            self.abandoned.add(run.order.order_id)
            reason = f"agv_no_answer: no state acknowledged order {run.order.order_id}"
            await self.report_run("failed", run, f"{reason} within {self.ack_timeout_s:g} s")

    # -- observations ----------------------------------------------------------------

    def observation(self) -> dict[str, Any]:
        """What the robot agent sees (``observation.agv_observation``): no objects while
        the AGV is not ONLINE, so the robot then claims nothing."""
        busy = self.current.command_id if self.current is not None else None
        return agv_observation(self.agent, self.site, self.agv_state, self.connection_state, busy)

    async def _observation_loop(self) -> None:
        while True:
            with contextlib.suppress(TeamtreeError):
                await self.publish(OBSERVATION_CHANNEL, "observation", self.observation(), qos=0)
            self._observe_now.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.observation_period):
                    await self._observe_now.wait()
