"""The VDA 5050 driver's own MQTT session with its AGV's broker.

Everything that touches that broker lives here and nowhere else: the login (from the
environment, or the driver's own AGV login, or its team credentials), the
subscriptions to the AGV's ``connection``, ``state`` and ``factsheet``, decoding and
schema-checking what comes in, and schema-checking and publishing what goes out
(orders and instant actions). The driver keeps the meaning of those messages; this
session keeps the wire, so one object owns the client and its failure modes.
"""

from __future__ import annotations

import itertools
import json
import os
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aiomqtt

from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker.acl import agv_login_name
from teamtree.broker.endpoint import parse_endpoint
from teamtree.drivers.vda5050.order import instant_action
from teamtree.drivers.vda5050.schema import SchemaCheck, SchemasUnavailable
from teamtree.drivers.vda5050.topics import AgvAddress, Headers

if TYPE_CHECKING:
    from teamtree.drivers.vda5050.driver import Vda5050DriverAgent

_QOS = {"order": 0, "instantActions": 0}

AgvHandler = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Takes one decoded message from the AGV: its subtopic and its JSON object."""


class AgvLink:
    """One driver's session with the broker its AGV speaks on (see module docstring)."""

    def __init__(
        self,
        driver: Vda5050DriverAgent,
        address: AgvAddress,
        headers: Headers,
        on_message: AgvHandler,
        *,
        agv_broker: str | None,
        validate: bool | None,
        schema_dir: str | None,
    ):
        self._driver = driver
        self.address = address
        self.headers = headers
        self._on_message = on_message
        self.endpoint = parse_endpoint(agv_broker) if agv_broker else driver.endpoint
        # credentials for the AGV's broker come from the environment, never the config;
        # on the team's own broker the driver's team credentials and TLS are reused
        self.username = os.environ.get("TEAMTREE_AGV_USERNAME") or None
        self.password = os.environ.get("TEAMTREE_AGV_PASSWORD") or None
        self.tls: ssl.SSLContext | None = None
        if agv_broker is None and self.password is None:
            # its own AGV login (`teamtree acl` writes `<id>.agv`): where client ids are
            # bound to logins, a second connection as the driver would take its session
            agv_login = agent_credentials(agv_login_name(driver.id))
            own = driver.connection._auth
            self.username, self.password = (
                (agv_login["username"], agv_login["password"]) if agv_login else own
            )
            self.tls = driver.connection._tls
        self.schema: SchemaCheck | None = None
        if validate is not False:
            try:
                self.schema = SchemaCheck(schema_dir)
            except SchemasUnavailable:
                if validate:
                    raise
        #: the connected client; None while the AGV's broker is not connected
        self.client: aiomqtt.Client | None = None
        self._action_ids = itertools.count(1)

    async def serve(self) -> None:
        """Connect, subscribe and hand each AGV message to the driver until the
        connection ends (``aiomqtt.MqttError``)."""
        driver, ep = self._driver, self.endpoint
        async with aiomqtt.Client(
            ep.host,
            ep.port,
            identifier=f"teamtree-{driver.team}-{driver.id}-master",
            keepalive=max(2, int(driver.runtime.keepalive_s)),
            transport=ep.transport,
            websocket_path=ep.path,
            tls_context=self.tls or (ssl.create_default_context() if ep.tls else None),
            username=self.username,
            password=self.password,
        ) as client:
            for sub in ("connection", "state", "factsheet"):
                await client.subscribe(self.address.topic(sub), qos=1 if sub == "connection" else 0)
            self.client = client
            driver.log.info(
                "driver.agv_broker_connected", broker=ep.url, agv=self.address.serial_number
            )
            async for message in client.messages:
                sub = self.address.subtopic(str(message.topic))
                if sub is None:
                    continue
                try:
                    payload = json.loads(message.payload)  # type: ignore[arg-type]
                    if not isinstance(payload, dict):
                        raise ValueError("not a JSON object")
                except (ValueError, TypeError) as exc:
                    driver.drops.drop(
                        "malformed", str(message.topic), None, f"VDA 5050 {sub}: {exc}"
                    )
                    continue
                self._check_inbound(sub, payload)
                try:
                    await self._on_message(sub, payload)
                except Exception as exc:  # one odd message must not stop the driver
                    driver.stats["agv_message_errors"] += 1
                    driver.log.error("driver.agv_message_failed", subtopic=sub, error=repr(exc))

    def _check_inbound(self, sub: str, payload: dict[str, Any]) -> None:
        stats = self._driver.stats
        stats[f"agv_{sub}"] += 1
        if self.schema is None:
            return
        errors = self.schema.errors(sub, payload)
        if errors:
            stats["schema_failed_in"] += 1
            self._driver.log.warning("driver.agv_message_invalid", subtopic=sub, errors=errors[:3])

    async def instant(self, kind: str, **params: Any) -> str | None:
        """Send one instant action; returns its actionId (None: not sent)."""
        driver = self._driver
        action_id = f"{driver.id}-{driver.session}-ia{next(self._action_ids)}-{kind}"
        actions = [instant_action(kind, action_id, **params)]
        body: dict[str, Any] = {"actions": actions}
        if self.address.version == "2.0.0":
            body["instantActions"] = actions  # the 2.0.0 JSON schema's name (driver's doc)
        message = self.headers.stamp("instantActions", body)
        problem = await self.send("instantActions", message)
        if problem:
            driver.log.warning("driver.instant_action_not_sent", kind=kind, reason=problem)
            return None
        driver.log.info("driver.instant_action", kind=kind, action_id=action_id)
        return action_id

    async def send(self, sub: str, message: dict[str, Any]) -> str:
        """Validate and publish; returns "" when sent, else why not."""
        driver = self._driver
        if self.schema is not None:
            errors = self.schema.errors(sub, message)
            if errors:
                driver.stats["schema_failed_out"] += 1
                driver.log.error("driver.invalid_message", subtopic=sub, errors=errors[:3])
                return f"schema: {sub} message invalid: {'; '.join(errors[:3])}"
        client = self.client
        if client is None:
            return "agv_offline: the AGV's broker is not connected"
        try:
            await client.publish(self.address.topic(sub), json.dumps(message), qos=_QOS[sub])
        except aiomqtt.MqttError as exc:
            return f"agv_offline: {exc}"
        driver.stats[f"sent_{sub}"] += 1
        return ""
