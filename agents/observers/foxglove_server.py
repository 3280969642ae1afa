"""The live view in Foxglove: a Foxglove WebSocket server (the ``foxglove-sdk``
package) fed from the broker alone, which Foxglove or Lichtblick opens at
``ws://HOST:PORT``.

It serves every message of the team on its channel (``record_channels``: one per
kind and team topic, JSON with its JSON Schema, as echo and the recorders write it)
and the views of ``live_view``: ``/scene`` (the world in 3D), ``/tree`` (the task tree
and mission state), ``/team`` (the monitor's view) and ``/log`` (the team's events as
log lines). ``/scene``, ``/tree`` and ``/team`` are sent again every second, so a
viewer that connects mid-mission sees the world and the tree at once.

An observer like the monitor: it never joins the team (no presence, read-only broker
rights), and it offers viewers no way to speak (no client publishing, services or
parameters), so any number of viewers watch and none has a voice. A viewer that
disconnects, however abruptly, is the SDK's to drop; the others go on.

Needs the optional ``foxglove-sdk`` package (``pip install 'teamtree[foxglove]'``):
this module is not imported by ``teamtree.agents.observers`` for that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import foxglove

from teamtree.agents.observers.live_view import (
    SCENE_SCHEMA,
    SCENE_SCHEMA_NAME,
    TREE_SCHEMA,
    TREE_SCHEMA_NAME,
    log_line,
    scene_update,
    tree_message,
)
from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.observers.record_channels import (
    LOG_CHANNEL,
    LOG_SCHEMA,
    LOG_SCHEMA_NAME,
    channel_topic,
    record_schema_bytes,
    schema_name,
    warm_schemas,
)
from teamtree.agents.observers.wire_json import message_record, record_json
from teamtree.broker.connection import Incoming
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

__all__ = ["REFRESH_S", "SCENE_CHANNEL", "TEAM_CHANNEL", "TREE_CHANNEL", "LiveServer"]

SCENE_CHANNEL = "/scene"
TREE_CHANNEL = "/tree"
TEAM_CHANNEL = "/team"
REFRESH_S = 1.0
"""How often the scene, the tree and the team view are sent again (late viewers)."""
#: kinds that can change the tree's view
_TREE_KINDS = frozenset(
    {"mission.tree", "mission.status", "presence", "node.transition", "node.snapshot",
     "node.claim", "node.claim_decided", "unit.transition", "unit.snapshot"}
)  # fmt: skip
_TEAM_SCHEMA = {"type": "object", "description": "the monitor's view of the team"}


def _schema(name: str, schema: dict[str, Any] | bytes) -> foxglove.Schema:
    data = schema if isinstance(schema, bytes) else json.dumps(schema).encode()
    return foxglove.Schema(name=name, encoding="jsonschema", data=data)


@dataclass
class LiveServer:
    """Serve `observer`'s team to Foxglove viewers at `host`:`port` (0: any free port)
    until ``run``'s `stop` is set."""

    observer_args: dict[str, Any]
    host: str = "127.0.0.1"
    port: int = 8765
    name: str = "teamtree"
    #: messages of the team served (what the end line reports)
    served: int = 0
    _context: foxglove.Context = field(default_factory=foxglove.Context)
    _channels: dict[tuple[str, str], foxglove.Channel] = field(default_factory=dict)
    _views: dict[str, foxglove.Channel] = field(default_factory=dict)
    _latest: dict[str, str] = field(default_factory=dict)
    #: each agent's presence as last told on /log (agents re-assert theirs: told once)
    _presence: dict[str, Any] = field(default_factory=dict)
    _server: Any = None
    observer: TeamObserver | None = None

    def start(self) -> int:
        """Start the WebSocket server; returns the port it listens on. Raises
        RuntimeError (the SDK's) when the port cannot be bound."""
        self._server = foxglove.start_server(
            name=self.name, host=self.host, port=self.port, capabilities=[],
            context=self._context,
        )  # fmt: skip
        for topic, name, schema in (
            (SCENE_CHANNEL, SCENE_SCHEMA_NAME, SCENE_SCHEMA),
            (TREE_CHANNEL, TREE_SCHEMA_NAME, TREE_SCHEMA),
            (TEAM_CHANNEL, "teamtree.team", _TEAM_SCHEMA),
            (LOG_CHANNEL, LOG_SCHEMA_NAME, LOG_SCHEMA),
        ):
            self._views[topic] = foxglove.Channel(
                topic, schema=_schema(name, schema), message_encoding="json",
                context=self._context,
            )  # fmt: skip
        return int(self._server.port)

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def _channel(self, topic: Topic, kind: str) -> foxglove.Channel:
        key = (str(topic), kind)
        found = self._channels.get(key)
        if found is None:
            found = foxglove.Channel(
                channel_topic(topic, kind),
                schema=_schema(schema_name(kind), record_schema_bytes(kind)),
                message_encoding="json",
                context=self._context,
                metadata={"mqtt_topic": str(topic), "kind": kind},
            )
            self._channels[key] = found
        return found

    def _view(self, topic: str, text: str, *, again: bool = False) -> None:
        """Send `text` on view `topic` when it changed (`again`: also when it did not)."""
        if not again and self._latest.get(topic) == text:
            return
        self._latest[topic] = text
        channel = self._views[topic]
        if channel.has_sinks():
            channel.log(text, log_time=time.time_ns())

    def on_message(self, env: Envelope, topic: Topic, message: Incoming) -> None:
        """One message of the team: on its channel, and into the views it changes."""
        self.served += 1
        now = time.time_ns()
        channel = self._channel(topic, env.kind)
        if channel.has_sinks():
            record = message_record(env, topic, retained=bool(message.retain))
            channel.log(record_json(record), log_time=now)
        state = self.observer.state if self.observer is not None else None
        if env.kind == "world.state":
            scene = scene_update(env.body, env.ts)
            if scene is not None:
                self._view(SCENE_CHANNEL, record_json(scene))
        if state is None:
            return
        if env.kind in _TREE_KINDS:
            self._view(TREE_CHANNEL, record_json(tree_message(state)))
        if env.kind == "presence" and isinstance(env.body, dict):
            said = env.body.get("state")
            if self._presence.get(env.sender) == said:
                return
            self._presence[env.sender] = said
        line = log_line(env, state)
        if line is not None and not message.retain:
            self._views[LOG_CHANNEL].log(record_json(line), log_time=now)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch the team and serve it until `stop` is set. Raises ConnectError when
        the broker cannot be reached."""
        await asyncio.to_thread(warm_schemas)  # no first message of a kind stalls
        self.observer = TeamObserver(
            **self.observer_args, sys_topics=False, on_message=self.on_message,
            client_prefix="foxglove",
        )  # fmt: skip
        async with self.observer:
            await self.observer.wait_connected()
            while not stop.is_set():
                self._refresh()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), REFRESH_S)

    def _refresh(self) -> None:
        """Send the views again, for viewers that connected since they last changed."""
        assert self.observer is not None
        state = self.observer.state
        self._view(TREE_CHANNEL, record_json(tree_message(state)), again=True)
        self._view(TEAM_CHANNEL, record_json(state.snapshot()), again=True)
        scene = self._latest.get(SCENE_CHANNEL)
        if scene is not None:
            self._view(SCENE_CHANNEL, scene, again=True)
