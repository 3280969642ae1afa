"""The receive path: one incoming message validated, filtered and dispatched.

In order: the topic parses and is of this team; the envelope decodes within the size
limit and its sender is the topic's; it is not an at-least-once duplicate, another
mission's, or kept state of a replaced session; taps see it; it is for this agent.
Then its own messages are checked (``own_presence``), a peer's clock is watched
(``clock_skew``), presence and factsheets go to the team view, replies to the pending
requests, and everything else to the handlers registered for it (``routes``). Bad
input is dropped and counted (``drop_log``); a handler's error is logged and never
raised.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from teamtree.agents.runtime.clock_skew import SkewWatch
from teamtree.agents.runtime.mission import UNSCOPED_CHANNELS, foreign
from teamtree.agents.runtime.own_presence import FACTSHEET_CHANNEL, PRESENCE_CHANNEL
from teamtree.agents.runtime.request_reply import REPLY_CHANNEL
from teamtree.agents.runtime.sessions import SESSION_KEY, stale_kept
from teamtree.agents.runtime.team_view import RefusedState
from teamtree.broker import TooLargeError, WireError
from teamtree.broker.connection import Incoming
from teamtree.broker.envelope import Envelope, decode
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import build, parse

if TYPE_CHECKING:
    from teamtree.agents.runtime.agent import Agent


class DedupWindow:
    """Recently seen (topic, sender, connection id, header id) keys, to drop
    at-least-once duplicates. The sender and its random per-connection id are part of
    the key, so nobody can make a receiver drop another sender's messages by sending
    header ids ahead of it."""

    def __init__(self, size: int = 4096):
        self._order: deque[tuple[str, str, str | None, int]] = deque()
        self._seen: set[tuple[str, str, str | None, int]] = set()
        self._size = size

    def add(self, topic: str, hid: int, sender: str = "", sid: str | None = None) -> bool:
        """Record the key; False when it was already seen."""
        key = (topic, sender, sid, hid)
        if key in self._seen:
            return False
        self._seen.add(key)
        self._order.append(key)
        if len(self._order) > self._size:
            self._seen.discard(self._order.popleft())
        return True


class Receiver:
    """One agent's receive path (the connection's ``on_message``)."""

    def __init__(self, agent: Agent, max_payload: int):
        self._agent = agent
        self._max_payload = max_payload
        self._team = agent.team
        self._id = agent.id
        self._stats = agent.stats
        self._drops = agent.drops
        self._own = agent.own_presence
        self._pending = agent.request_reply.pending
        routes = agent.routes
        self._handlers = routes.handlers
        self._taps = routes.taps
        self._any_recipient = routes.any_recipient
        self._dedup = DedupWindow()
        self._skew = SkewWatch(agent.runtime.max_clock_skew_s)
        #: the session of the last retained state believed per (topic, sender)
        self._kept_sessions: dict[tuple[str, str], str] = {}

    async def receive(self, message: Incoming) -> None:
        """Validate and dispatch one message; never raises (bad input is dropped)."""
        self._stats["received"] += 1
        try:
            await self._dispatch(message)
        except Exception as exc:  # a handler bug must not kill the agent
            self._stats["handler_errors"] += 1
            self._agent.log.error(
                "handler.failed", topic=message.topic, error=repr(exc), exc_info=True
            )

    async def _dispatch(self, message: Incoming) -> None:
        agent = self._agent
        try:
            topic = parse(message.topic)
        except WireError as exc:
            self._drops.drop("topic", message.topic, None, exc.reason)
            return
        if topic.team != self._team:
            self._drops.drop("team", message.topic, topic.agent)
            return
        try:
            env = decode(message.payload, max_size=self._max_payload, topic=message.topic)
        except TooLargeError as exc:
            self._drops.drop("too_large", message.topic, topic.agent, exc.reason)
            return
        except WireError as exc:
            self._drops.drop("malformed", message.topic, exc.sender or topic.agent, exc.reason)
            return
        if topic.agent is not None and env.sender != topic.agent:
            self._drops.drop(
                "sender_mismatch", message.topic, env.sender, f"topic says {topic.agent!r}"
            )
            return
        if not self._dedup.add(message.topic, env.hid, env.sender, env.sid):
            self._stats["duplicates"] += 1
            return
        if topic.channel not in UNSCOPED_CHANNELS and foreign(env.body, agent.mission_id):
            self._stats["other_mission"] += 1  # another mission's (kept or queued): not ours
            return
        if env.sender != self._id and self._stale_retained(message.topic, env):
            return
        for tap in self._taps:
            await tap(env, topic)
        if (
            topic.recipient is not None
            and topic.recipient != self._id
            and topic.channel not in self._any_recipient
        ):
            if not self._taps:
                self._drops.drop("not_for_me", message.topic, env.sender)
            return
        if env.sender == self._id:
            if topic.channel == PRESENCE_CHANNEL and topic.agent == self._id:
                self._own.check_presence(env)
            elif topic.channel == FACTSHEET_CHANNEL and topic.agent == self._id:
                self._own.check_factsheet(env)
            return  # our own message, e.g. our retained presence
        team_view = agent.team_view
        if not message.retain and team_view.get(env.sender) is not None:
            self._watch_skew(env)  # a retained message is as old as it was kept
        agent.clock.update(env.hlc)
        team_view.seen(env.sender, env.ts)
        if topic.agent is not None and topic.channel == PRESENCE_CHANNEL:
            await self._on_presence_message(env)
            return
        if topic.agent is not None and topic.channel == FACTSHEET_CHANNEL:
            try:
                team_view.apply_factsheet(env.sender, env.body)
            except RefusedState as exc:
                self._drops.drop(exc.reason, message.topic, env.sender, str(exc))
            except ValueError as exc:
                self._drops.drop("malformed", message.topic, env.sender, str(exc))
            return
        if topic.channel == REPLY_CHANNEL and topic.recipient == self._id:
            self._pending.resolve(env)
            return
        if env.to is not None and env.to != self._id:
            self._stats["not_addressed"] += 1
            return
        if env.deadline is not None and env.deadline < wall_ms():
            self._drops.drop("expired", message.topic, env.sender, f"deadline {env.deadline}")
            return
        key = ("team" if topic.agent is None else "agents", topic.channel)
        for kind, handler in self._handlers.get(key, []):
            if kind is None or kind == env.kind:
                await handler(env, topic)

    def _watch_skew(self, env: Envelope) -> None:
        """Name a peer whose clock is off by more than ``max_clock_skew_s`` (once per
        peer per minute; ``clock_skew.SkewWatch``)."""
        offset = self._skew.observe(env.sender, env.ts, wall_ms(), time.monotonic())
        if offset is None:
            return
        self._stats["clock_skew"] += 1
        bound = self._agent.runtime.max_clock_skew_s
        self._agent.log.warning(
            "clock.skew",
            peer=env.sender,
            offset_s=round(offset / 1000, 3),
            direction="ahead" if offset > 0 else "behind",
            max_clock_skew_s=bound,
            fix=f"synchronise {env.sender}'s clock with this host's (NTP); leases and "
            "fencing do not depend on it, but the claim rule's earliest-stamp order does",
        )

    def _stale_retained(self, topic: str, env: Envelope) -> bool:
        """Whether `env` is kept state (a body naming its session) of another session
        than its sender's current one, on a topic where the current one's state was
        believed already: a replay, dropped. (The first kept state on a topic is
        believed whatever its session: a resumed mission reads its peers' old state.)"""
        body = env.body
        if not isinstance(body, dict) or SESSION_KEY not in body:
            return False
        if topic.endswith((f"/{PRESENCE_CHANNEL}", f"/{FACTSHEET_CHANNEL}")):
            return False  # the team view judges presence and factsheets
        member = self._agent.team_view.get(env.sender)
        current = None if member is None else member.session
        key = (topic, env.sender)  # per sender: on a team channel several agents keep state
        session = body[SESSION_KEY]
        if stale_kept(self._kept_sessions.get(key), current, session):
            self._drops.drop("stale_session", topic, env.sender, f"session {session!r}")
            return True
        if isinstance(session, str):
            if len(self._kept_sessions) >= 65536 and key not in self._kept_sessions:
                self._kept_sessions.pop(next(iter(self._kept_sessions)))
            self._kept_sessions[key] = session
        return False

    async def _on_presence_message(self, env: Envelope) -> None:
        agent = self._agent
        topic = build(self._team, env.sender, PRESENCE_CHANNEL)
        try:
            change = agent.team_view.apply_presence(env.sender, env.body, env.ts)
        except RefusedState as exc:
            self._drops.drop(exc.reason, topic, env.sender, str(exc))
            return
        except ValueError as exc:
            self._drops.drop("malformed", topic, env.sender, str(exc))
            return
        if change is not None:
            old, new = change
            agent.log.info("peer.presence", peer=env.sender, state=new.value, was=old.value)
            await agent.on_presence(env.sender, old, new)
