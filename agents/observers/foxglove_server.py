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
from teamtree.agents.observers.monitor import MonitorState, TeamObserver
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
    #: the latest ``world.state`` body and its time (what ``/scene`` draws)
    _world: tuple[Any, int] | None = None
    #: each agent's presence as last told on /log (agents re-assert theirs: told once)
    _presence: dict[str, Any] = field(default_factory=dict)
    _server: Any = None
    observer: TeamObserver | None = None
    #: the team as the observer sees it (``run`` sets it; fed before ``on_message``)
    state: MonitorState | None = None

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

    def _channel(self, name: str, topic: Topic, kind: str) -> foxglove.Channel:
        """The channel of `kind` messages on `topic` (`name`: its text, the key)."""
        key = (name, kind)
        found = self._channels.get(key)
        if found is None:
            found = foxglove.Channel(
                channel_topic(topic, kind),
                schema=_schema(schema_name(kind), record_schema_bytes(kind)),
                message_encoding="json",
                context=self._context,
                metadata={"mqtt_topic": name, "kind": kind},
            )
            self._channels[key] = found
        return found

    def _view(self, topic: str, make: Any, *, again: bool = False) -> None:
        """Send view `topic` (its JSON text from `make()`) when it changed, or `again`
        also when it did not. Nothing is made while no viewer subscribes to it: the
        next refresh makes it for the first viewer."""
        channel = self._views[topic]
        if not channel.has_sinks():
            self._latest.pop(topic, None)
            return
        text = make()
        if text is None or (not again and self._latest.get(topic) == text):
            return
        self._latest[topic] = text
        channel.log(text, log_time=time.time_ns())

    def _scene(self) -> str | None:
        if self._world is None:
            return None
        scene = scene_update(*self._world)
        return None if scene is None else record_json(scene)

    def _tree(self) -> str | None:
        return None if self.state is None else record_json(tree_message(self.state))

    def _team(self) -> str | None:
        return None if self.state is None else record_json(self.state.snapshot())

    def on_message(self, env: Envelope, topic: Topic, message: Incoming) -> None:
        """One message of the team: on its channel, and into the views it changes."""
        self.served += 1
        now = time.time_ns()
        channel = self._channel(message.topic, topic, env.kind)
        if channel.has_sinks():  # the topic as received: its text is not built again
            record = message_record(env, message.topic, retained=bool(message.retain))
            channel.log(record_json(record), log_time=now)
        if env.kind == "world.state":
            self._world = (env.body, env.ts)
            self._view(SCENE_CHANNEL, self._scene)
        if self.state is None:
            return
        if env.kind in _TREE_KINDS:
            self._view(TREE_CHANNEL, self._tree)
        if env.kind == "presence" and isinstance(env.body, dict):
            said = env.body.get("state")
            if self._presence.get(env.sender) == said:
                return
            self._presence[env.sender] = said
        logs = self._views[LOG_CHANNEL]
        if message.retain or not logs.has_sinks():  # events, for whoever watches now
            return
        line = log_line(env, self.state)
        if line is not None:
            logs.log(record_json(line), log_time=now)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch the team and serve it until `stop` is set. Raises ConnectError when
        the broker cannot be reached."""
        await asyncio.to_thread(warm_schemas)  # no first message of a kind stalls
        self.observer = TeamObserver(
            **self.observer_args, sys_topics=False, on_message=self.on_message,
            client_prefix="foxglove",
        )  # fmt: skip
        self.state = self.observer.state
        async with self.observer:
            await self.observer.wait_connected()
            while not stop.is_set():
                self._refresh()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), REFRESH_S)

    def _refresh(self) -> None:
        """Send the views again, for viewers that connected since they last changed."""
        self._view(TREE_CHANNEL, self._tree, again=True)
        self._view(TEAM_CHANNEL, self._team, again=True)
        self._view(SCENE_CHANNEL, self._scene, again=True)
