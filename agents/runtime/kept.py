"""Which missions' state a broker keeps for a team (its retained, mission-stamped bodies).

A retained topic holds one message, so a later mission's state replaces an earlier
one's topic by topic. ``teamtree run --resume ID`` checks here first and refuses to
"continue" a mission whose state is no longer kept (it would silently start over).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter

from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, mission_of
from teamtree.broker import WireError
from teamtree.broker.connection import Connection, Incoming
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import decode


async def kept_missions(endpoint: Endpoint, team: str, wait_s: float = 1.0) -> Counter[str]:
    """Mission id -> number of retained topics of `team` that hold its state."""
    kept: Counter[str] = Counter()

    async def on_message(message: Incoming) -> None:
        parts = message.topic.split("/")
        if not message.retain or len(parts) < 5 or parts[4] in UNSCOPED_CHANNELS:
            return
        with contextlib.suppress(WireError):
            mission = mission_of(decode(message.payload, topic=message.topic).body)
            if mission is not None:
                kept[mission] += 1

    connection = Connection(
        endpoint,
        client_id=f"teamtree-{team}-kept-{uuid.uuid4().hex[:8]}",
        on_message=on_message,
        clean_session=True,
    )
    await connection.subscribe(f"teamtree/v1/{team}/#")
    task = asyncio.create_task(connection.run())
    try:
        async with asyncio.timeout(5.0):
            await connection.connected.wait()
        await asyncio.sleep(wait_s)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.close(), 3.0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    return kept
