"""Which handlers an agent runs for which messages, and the subscriptions behind them.

``Routing`` gives Agent its registration API (``on_team``, ``on_agents``,
``on_agent``, ``on_any``, ``urgent``), which kinds call on themselves: each
registration adds its handler to the agent's ``RouteTable``, which the receive path
reads, and subscribes to the topics it needs (once per topic filter). The sets of
latest-only topics and urgent and critical channels are shared with the agent's
connection, which orders and coalesces its inbound queue by them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic, pattern, validate_id

if TYPE_CHECKING:
    import asyncio

    from teamtree.broker.connection import Connection

Handler = Callable[[Envelope, Topic], Awaitable[None]]


class RouteTable:
    """One agent's handlers and topic filters."""

    def __init__(self) -> None:
        #: ("team" or "agents", channel) -> (kind or None for any, handler), in order
        self.handlers: dict[tuple[str, str], list[tuple[str | None, Handler]]] = {}
        self.filters: set[str] = set()
        #: own channels read with any recipient segment (``on_agents(any_recipient=True)``)
        self.any_recipient: set[str] = set()
        self.latest_topics: set[str] = set()
        self.urgent_channels: set[str] = set()
        self.critical_channels: set[str] = set()
        self.taps: list[Handler] = []


class Routing:
    """Agent's handler registration (a mixin: kinds call these methods on themselves)."""

    team: str
    id: str
    connection: Connection
    routes: RouteTable

    if TYPE_CHECKING:

        def spawn(
            self, coro: Awaitable[Any], name: str = "task", *, optional: bool = False
        ) -> asyncio.Task[Any]: ...

    def on_team(
        self, channel: str, handler: Handler, *, kind: str | None = None, share: str | None = None
    ) -> None:
        """Handle messages on the team channel `channel` (optionally only `kind`).

        With `share`, subscribe as a member of the shared subscription
        ``$share/<share>/...`` so replicas split the messages (mosquitto; a broker
        without shared subscriptions, such as amqtt, delivers each to every replica)."""
        topic_filter = pattern(self.team, None, channel)
        if share is not None:
            topic_filter = f"$share/{validate_id(share, 'share group')}/{topic_filter}"
        self._register(("team", channel), handler, kind, topic_filter)

    def urgent(self, *channels: str, critical: bool = False) -> None:
        """Handle messages on `channels` (team or agents' channels) before any other
        message waiting for this agent: for a protocol whose round trips others wait on
        (the peer rule's transitions and declarations), not for state a newer message
        supersedes. With `critical`, before even those, and this agent's own messages
        on `channels` leave within ``publish``, not a loop turn later with the others:
        for what a pending round trip waits on (the peer rule's claims and replies)."""
        names = [validate_id(c, "channel") for c in channels]
        self.routes.urgent_channels.update(names)
        if critical:
            self.routes.critical_channels.update(names)

    def on_agents(
        self,
        channel: str,
        handler: Handler,
        *,
        kind: str | None = None,
        addressed: bool = False,
        senders: Iterable[str] | None = None,
        latest: bool = False,
        any_recipient: bool = False,
    ) -> None:
        """Handle messages on every agent's own `channel` (optionally only `kind`).

        With `any_recipient`, those on ``<sender>/<channel>/<anything>`` instead (e.g.
        ``mission_status/<mission>``: one retained topic per mission).

        With `addressed`, only messages sent to this agent on
        ``<sender>/<channel>/<this id>`` (commands, directed messages). With `senders`,
        only those agents' messages: one subscription each, so the broker sends
        nothing else (the world publishes its 77 kB state on its ``state`` channel,
        where robots read their peers' transitions).

        With `latest`, each message is state that the sender's next one supersedes
        (snapshots, potentials): it is taken at QoS 0, so no acknowledgement goes back
        for it (a message lost with a connection is replaced by the sender's next, and
        a retained one comes again with the re-subscribe), and with `senders` one still
        waiting to be handled is replaced by the same sender's newer one, as
        ``on_agent(latest=True)`` does."""
        recipient = self.id if addressed else "+" if any_recipient else None
        if any_recipient:
            self.routes.any_recipient.add(channel)
        if senders is None:
            filters = [pattern(self.team, "+", channel, recipient)]
        else:
            filters = [pattern(self.team, s, channel, recipient) for s in sorted(set(senders))]
            if latest:
                self.routes.latest_topics.update(filters)
        self._register(("agents", channel), handler, kind, *filters, qos=0 if latest else 1)

    def on_agent(
        self,
        sender: str,
        channel: str,
        handler: Handler,
        *,
        kind: str | None = None,
        latest: bool = False,
    ) -> None:
        """Handle messages on one agent's own `channel` only (e.g. a robot's driver's
        observations): the broker sends nothing else, which matters at scale.

        With `latest`, only the newest message counts: one still waiting to be handled
        is replaced by a newer one (``CoalescingQueue``), so a busy agent skips stale
        observations instead of falling behind on them."""
        topic = pattern(self.team, validate_id(sender), channel)
        if latest:
            self.routes.latest_topics.add(topic)
        self._register(("agents", channel), handler, kind, topic)

    def on_any(self, handler: Handler) -> None:
        """See every valid message of the team (recorders, monitors), before routing."""
        routes = self.routes
        routes.taps.append(handler)
        topic_filter = f"{pattern(self.team, '+', '+').rsplit('/', 2)[0]}/#"
        if topic_filter not in routes.filters:
            routes.filters.add(topic_filter)
            self.spawn(self.connection.subscribe(topic_filter), "subscribe", optional=True)

    def _register(
        self,
        key: tuple[str, str],
        handler: Handler,
        kind: str | None,
        *topic_filters: str,
        qos: int = 1,
    ) -> None:
        routes = self.routes
        routes.handlers.setdefault(key, []).append((kind, handler))
        new = [f for f in dict.fromkeys(topic_filters) if f not in routes.filters]
        if new:
            routes.filters.update(new)
            self.spawn(self.connection.subscribe(*new, qos=qos), "subscribe", optional=True)
