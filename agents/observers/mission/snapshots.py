"""The robots' retained node snapshots, read as an observer (``teamtree tree
--broker``): a passive client with the observer's read-only credentials, so it needs
no write rights, publishes no presence and never shows up as a team member."""

from __future__ import annotations

import asyncio
from typing import Any

from teamtree.agents.observers.monitor import TeamObserver
from teamtree.agents.runtime.sync_ask import SYNC_GRACE_S
from teamtree.broker.connection import Incoming
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

__all__ = ["read_snapshots"]


async def read_snapshots(
    endpoint: Endpoint,
    team: str,
    wait_s: float = 1.0,
    *,
    username: str | None = None,
    password: str | None = None,
    tls_context: Any = None,
) -> dict[str, dict[str, Any]]:
    """``{robot: snapshot body}`` collected for `wait_s` seconds (and until the re-sync
    asked on connecting is over, for a broker cluster). Raises ConnectError
    when the broker cannot be reached (or refuses the credentials) within 5 s."""
    snapshots: dict[str, dict[str, Any]] = {}

    def on_message(env: Envelope, topic: Topic, message: Incoming) -> None:
        body = env.body
        if (
            env.kind == "node.snapshot"
            and topic.channel == "snapshot"
            and isinstance(body, dict)
            and body.get("agent") == env.sender
        ):
            snapshots[env.sender] = body

    observer = TeamObserver(
        endpoint,
        team,
        username=username,
        password=password,
        sys_topics=False,
        on_message=on_message,
        client_prefix="tree",
        tls_context=tls_context,
    )
    async with observer:
        await observer.wait_connected(5.0)
        await asyncio.sleep(wait_s)
        await observer.wait_synced(SYNC_GRACE_S)  # on a broker cluster: the re-sync's
    return snapshots
