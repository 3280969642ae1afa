"""A restarted world continues its mission: it reads its own retained ``world.state``
back from the broker before it serves, and restores its objects from it.

A world killed mid-mission comes back from its config; without this, objects already
placed would jump back to their start and the team would see done leaves undone. So
the world agent, before serving, reads ``<world id>/state`` once on a short-lived
connection of its own (the same broker, credentials and TLS), waiting at most
``RESTORE_WAIT_S`` for the retained message. Nothing in MQTT says "no retained
message", so the reader also subscribes to a probe topic of its own and publishes one
message there once subscribed (``world.restore_probe``, an ordinary envelope stamped
with the mission, so observers that read the whole team take it as any other). The
broker sends a subscription's retained message before it routes a later publish to
the same client, so when the probe comes back without a state, none is kept: a fresh
start waits one round trip, not ``RESTORE_WAIT_S``. It restores only a state that:

- is retained on its own topic and sent by its own id (``sender``),
- is a ``world.state``,
- is stamped with its own mission (an unscoped world, one without a mission id,
  never restores: it cannot tell a restart from a new mission; a new mission starts
  from the config, never from an old mission's state),
- decodes as ``WorldStateBody`` and names only objects this world has
  (``World.restore``).

Anything else is ignored with a ``world.state_ignored`` warning naming why, as is a
broker not reached within ``RESTORE_WAIT_S``; the world then starts from its config,
as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

from teamtree.agents.runtime.mission import mission_of
from teamtree.agents.runtime.observation_wire import ObservationWireError, decode_world_state
from teamtree.broker import WireError
from teamtree.broker.connection import Connection, Incoming, Outgoing
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import decode

RESTORE_WAIT_S = 1.5
"""Seconds a starting world waits for its retained state (connecting included)."""


async def read_retained(
    endpoint: Endpoint,
    topic: str,
    *,
    client_id: str,
    wait_s: float = RESTORE_WAIT_S,
    username: str | None = None,
    password: str | None = None,
    tls_context: ssl.SSLContext | None = None,
    probe: tuple[str, bytes] | None = None,
) -> Incoming | None:
    """The retained message on `topic`, or None when none came within `wait_s`
    seconds (connecting included; closing the connection afterwards takes at most
    one more second), or none came before the `probe` (topic, payload) published after
    subscribing did (module docstring). Raises TimeoutError when the broker was not
    reached by then (nothing can be said about what it keeps)."""
    found: asyncio.Future[Incoming] = asyncio.get_running_loop().create_future()
    probed = asyncio.Event()
    probe_topic = probe[0] if probe is not None else None

    async def on_message(message: Incoming) -> None:
        if message.retain and message.topic == topic and not found.done():
            found.set_result(message)
        elif message.topic == probe_topic and not message.retain:
            probed.set()

    connection = Connection(
        endpoint,
        client_id=client_id,
        on_message=on_message,
        clean_session=True,
        username=username,
        password=password,
        tls_context=tls_context,
    )
    await connection.subscribe(topic)
    if probe_topic is not None:
        await connection.subscribe(probe_topic)
    task = asyncio.create_task(connection.run())
    try:
        async with asyncio.timeout(wait_s):
            if probe is None:
                return await found
            await connection.connected.wait()  # subscribed: retained messages are on the way
            await connection.publish(Outgoing(*probe, qos=1), wait=False)
            came_back = asyncio.ensure_future(probed.wait())
            try:
                await asyncio.wait({found, came_back}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                came_back.cancel()
            return found.result() if found.done() else None
    except TimeoutError:
        if connection.connects == 0:
            raise TimeoutError(f"the broker was not reached within {wait_s:g} s") from None
        return None
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.close(), 1.0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def state_to_restore(message: Incoming, world_id: str, mission: str) -> dict[str, Any]:
    """The body of `message` if it is `world_id`'s own ``world.state`` of `mission`;
    raises ValueError naming why not."""
    try:
        env = decode(message.payload, topic=message.topic)
    except WireError as exc:
        raise ValueError(f"malformed: {exc.reason}") from None
    if env.sender != world_id:
        raise ValueError(f"sent by {env.sender!r}, not by this world")
    if env.kind != "world.state":
        raise ValueError(f"a {env.kind!r}, not a world.state")
    named = mission_of(env.body)
    if named is None:
        raise ValueError("not stamped with a mission")
    if named != mission:
        raise ValueError(f"of mission {named!r}, not {mission!r}")
    try:
        decode_world_state(env.body)
    except ObservationWireError as exc:
        raise ValueError(f"malformed: {exc}") from None
    return env.body
