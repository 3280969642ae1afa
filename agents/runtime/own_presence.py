"""What an agent says of itself: its presence, factsheet and Last Will, and their defence.

After every connect the agent publishes, retained, ONLINE presence and its factsheet,
each naming its session and since (``sessions.py``); the Will says CONNECTION_BROKEN.
When someone else's message on those topics says otherwise (a forger, a replay of an
older session, a stale Will kept by the broker), the agent says the truth again, at
most once per ``REASSERT_EVERY_S`` per topic, and speaks from after a session of its
id that claims a later since.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from teamtree.agents.runtime.agent_state import AgentState
from teamtree.agents.runtime.presence_wire import Presence, heartbeat_body, presence_body
from teamtree.agents.runtime.sessions import SESSION_KEY, SINCE_KEY
from teamtree.broker import TeamtreeError
from teamtree.broker.connection import Outgoing
from teamtree.broker.envelope import Envelope, encode
from teamtree.broker.hlc import wall_ms

if TYPE_CHECKING:
    from teamtree.agents.runtime.agent import Agent

PRESENCE_CHANNEL = "connection"
FACTSHEET_CHANNEL = "factsheet"
HEARTBEAT_CHANNEL = "heartbeat"
REASSERT_EVERY_S = 1.0
"""An agent says its own presence or factsheet again at most once per this many seconds
(two processes under one id must not answer each other's answers at network speed)."""


class OwnPresence:
    """One agent's own presence and factsheet messages, and their reassertion."""

    def __init__(self, agent: Agent):
        self._agent = agent
        #: the connection ids this process has used: messages with one are its own
        self.sids = {agent.connection_sid}
        self._reasserted_at: dict[str, float] = {}  #: channel -> when last said again
        self._reassert_pending: set[str] = set()

    async def announce(self) -> None:
        """On a new connection: a new connection id, then ONLINE presence and the
        factsheet, ahead of anything queued."""
        agent = self._agent
        agent.connection_sid = uuid.uuid4().hex[:16]
        self.sids.add(agent.connection_sid)
        await agent.connection.publish_now(self.presence_message(Presence.ONLINE))
        await agent.connection.publish_now(self.factsheet_message())

    def check_factsheet(self, env: Envelope) -> None:
        """A factsheet under this agent's id that this process did not send (e.g. a
        forged world address, or a replay of an older session's): publish the true one
        again, retained."""
        agent = self._agent
        if env.sid in self.sids or env.body == agent.factsheet() or not self.speaking():
            return
        if isinstance(env.body, dict):
            self._outbid(env.body)
        agent.stats["factsheet_reasserted"] += 1
        agent.log.warning("factsheet.reasserted", sid=env.sid)
        self._reassert(FACTSHEET_CHANNEL, self.factsheet_message)

    def check_presence(self, env: Envelope) -> None:
        """Someone (a forger, a replay of an older session's presence, or the broker with
        a stale Will) says something else of this running agent than that this session
        is online: say ONLINE again, so the broker keeps, and peers believe, presence
        from the agent itself."""
        agent = self._agent
        body = env.body if isinstance(env.body, dict) else {}
        if body.get("state") == Presence.ONLINE.value and body.get("session") == agent.session:
            return
        if not self.speaking():
            return
        self._outbid(body)
        agent.stats["presence_reasserted"] += 1
        agent.log.warning(
            "presence.reasserted",
            seen=body.get("state"),
            session=body.get("session"),
            mission=body.get("mission"),
        )
        self._reassert(PRESENCE_CHANNEL, lambda: self.presence_message(Presence.ONLINE))

    def _outbid(self, body: dict[str, Any]) -> None:
        """Another session of this id says it speaks from no earlier than this one (a
        forgery dated ahead, or an earlier process of this agent on a clock that ran
        ahead): speak from after it, presence and factsheet both, so peers believe
        this process again rather than it for good."""
        agent = self._agent
        since = body.get(SINCE_KEY)
        if body.get(SESSION_KEY) == agent.session or not isinstance(since, int):
            return
        if since >= agent.since:
            agent.stats["session_outbid"] += 1
            agent.log.warning("session.outbid", session=body.get(SESSION_KEY), since=since,
                              ahead_ms=since - agent.since)  # fmt: skip
            agent.since = since + 1
            self._reassert(PRESENCE_CHANNEL, lambda: self.presence_message(Presence.ONLINE))
            self._reassert(FACTSHEET_CHANNEL, self.factsheet_message)

    def speaking(self) -> bool:
        """Running and connected: what this agent says of itself can go out now."""
        agent = self._agent
        return agent.state is AgentState.RUNNING and agent.connection.connected.is_set()

    def _reassert(self, channel: str, message: Callable[[], Outgoing]) -> None:
        """Publish this agent's own `channel` message again: at once, or at the end of
        ``REASSERT_EVERY_S`` after the last time (one pending at a time per channel)."""
        if not self.speaking():
            return
        if channel in self._reassert_pending:
            return  # one is already waiting for its turn: it says the same
        last = self._reasserted_at.get(channel, float("-inf"))
        wait = max(0.0, last + REASSERT_EVERY_S - time.monotonic())
        self._reassert_pending.add(channel)
        agent = self._agent

        async def again() -> None:
            try:
                if wait:
                    await asyncio.sleep(wait)
                if agent.state is AgentState.RUNNING:
                    await agent.connection.publish(message(), wait=False)
            finally:
                self._reassert_pending.discard(channel)
                self._reasserted_at[channel] = time.monotonic()

        agent.spawn(again(), channel, optional=True)

    def factsheet_message(self) -> Outgoing:
        """The agent's factsheet, retained on its ``factsheet`` topic."""
        agent = self._agent
        topic = agent.topic(FACTSHEET_CHANNEL)
        sheet = agent.envelope("factsheet", agent.factsheet(), topic)
        return Outgoing(topic, encode(sheet), qos=1, retain=True)

    def presence_message(self, state: Presence) -> Outgoing:
        """The agent's presence `state`, retained on its ``connection`` topic."""
        agent = self._agent
        topic = agent.topic(PRESENCE_CHANNEL)
        body = presence_body(state, agent.kind, agent.session, agent.mission_id, agent.since)
        return Outgoing(topic, encode(agent.envelope("presence", body, topic)), qos=1, retain=True)

    def will(self) -> Outgoing:
        """The Last Will: CONNECTION_BROKEN presence."""
        return self.presence_message(Presence.CONNECTION_BROKEN)

    async def heartbeat_loop(self) -> None:
        """Every ``runtime.heartbeat_s``: the drop summaries due, and while connected a
        QoS 0 heartbeat with uptime and message counts."""
        agent = self._agent
        while True:
            await asyncio.sleep(agent.runtime.heartbeat_s)
            agent.drops.flush()
            if agent.connection.connected.is_set():
                body = heartbeat_body(
                    wall_ms() - agent._started_ms,
                    agent.stats["sent"],
                    agent.stats["received"],
                    agent.stats["dropped"],
                )
                with contextlib.suppress(TeamtreeError):
                    await agent.publish(HEARTBEAT_CHANNEL, "heartbeat", body, qos=0)
