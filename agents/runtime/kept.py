"""Which missions' state a broker keeps for a team (its retained, mission-stamped bodies).

A retained topic holds one message, so a later mission's state replaces an earlier
one's topic by topic. ``teamtree run --resume ID`` checks here first and refuses to
"continue" a mission whose state is no longer kept (it would silently start over).

A RabbitMQ cluster does not send retained messages to this reader's wildcard
subscription, so it also asks running teammates to re-sync (``SyncAsker``); with no
teammate running there, nothing kept can be seen on such a broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter

from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, mission_of
from teamtree.agents.runtime.mission_status import STATUS_CHANNEL
from teamtree.agents.runtime.sync_ask import SYNC_GRACE_S, SyncAsker
from teamtree.broker import WireError
from teamtree.broker.connection import Connection, Incoming
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import decode


async def kept_missions(endpoint: Endpoint, team: str, wait_s: float = 1.0) -> Counter[str]:
    """Mission id -> number of retained topics of `team` that hold its state."""
    kept: dict[str, str] = {}  # topic -> mission (a re-published copy counts once)
    sync: SyncAsker | None = None

    async def on_message(message: Incoming) -> None:
        parts = message.topic.split("/")
        # a mission's status records how it went, not state it can be resumed from
        if len(parts) < 5 or parts[4] in UNSCOPED_CHANNELS or parts[4] == STATUS_CHANNEL:
            return
        if sync is None:
            return
        with contextlib.suppress(WireError):
            env = decode(message.payload, topic=message.topic)
            if not sync.kept(env, message):
                return
            mission = mission_of(env.body)
            if mission is not None:
                kept[message.topic] = mission

    async def on_connect() -> None:
        if sync is not None:
            sync.connected()

    connection = Connection(
        endpoint,
        client_id=f"teamtree-{team}-kept-{uuid.uuid4().hex[:8]}",
        on_message=on_message,
        on_connect=on_connect,
        clean_session=True,
    )
    sync = SyncAsker(team, connection.publish, prefix="kept")
    await connection.subscribe(f"teamtree/v1/{team}/#")
    task = asyncio.create_task(connection.run())
    try:
        async with asyncio.timeout(5.0):
            await connection.connected.wait()
        await asyncio.sleep(wait_s)
        await sync.wait_synced(SYNC_GRACE_S)
    finally:
        await sync.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.close(), 3.0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    return Counter(kept.values())
