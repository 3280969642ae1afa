"""Topic names: ``teamtree/v1/<team>/<agentId|_>/<channel>[/<recipient>]``.

An agent publishes only under its own id; team-wide channels (mission, favors,
allocation, dialogs, events) use ``_`` in the id position. A recipient segment
addresses a reply or a directed message to one agent.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from teamtree.broker.errors import TopicError

ROOT = "teamtree"
VERSION = "v1"
TEAM_CHANNEL = "_"

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
"""A team, agent or channel id (``validate_id``)."""
_ID = re.compile(ID_PATTERN)


def validate_id(value: object, what: str = "id") -> str:
    """Return `value` if it is a valid team, agent or channel id, else raise TopicError.

    Ids are 1-64 characters of letters, digits, ``_ . -``, starting with a letter or
    digit, so they never contain the MQTT separators and wildcards ``/ + # $``.
    """
    if not isinstance(value, str) or not _ID.match(value):
        raise TopicError(
            f"invalid {what} {value!r}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (no '/', '+', '#', '$' or spaces)"
        )
    return value


@dataclass(frozen=True, slots=True)
class Topic:
    """A parsed teamtree topic. `agent` is None for team-wide channels."""

    team: str
    agent: str | None
    channel: str
    recipient: str | None = None

    def __str__(self) -> str:
        return build(self.team, self.agent, self.channel, self.recipient)


def build(team: str, agent: str | None, channel: str, recipient: str | None = None) -> str:
    """Build a topic; `agent=None` gives the team-wide channel. Raises TopicError."""
    parts = [
        ROOT,
        VERSION,
        validate_id(team, "team"),
        TEAM_CHANNEL if agent is None else validate_id(agent, "agent id"),
        validate_id(channel, "channel"),
    ]
    if recipient is not None:
        parts.append(validate_id(recipient, "recipient id"))
    return "/".join(parts)


def pattern(
    team: str, agent: str | None = "+", channel: str = "+", recipient: str | None = None
) -> str:
    """Build a subscription filter; ``"+"`` in any position is a wildcard."""

    def seg(value: str | None, what: str) -> str:
        if value == "+":
            return "+"
        if value is None:
            return TEAM_CHANNEL
        return validate_id(value, what)

    parts = [
        ROOT,
        VERSION,
        validate_id(team, "team"),
        seg(agent, "agent id"),
        seg(channel, "channel"),
    ]
    if recipient is not None:
        parts.append(seg(recipient, "recipient id"))
    return "/".join(parts)


@functools.lru_cache(maxsize=4096)
def parse(topic: str) -> Topic:
    """Parse a teamtree topic. Raises TopicError naming what is wrong.

    Cached (a Topic is frozen; errors are not cached): an agent sees the same few
    hundred topics over and over, and checking five ids per message is a measurable
    share of a busy robot's CPU."""
    parts = topic.split("/")
    if len(parts) not in (5, 6) or parts[0] != ROOT:
        raise TopicError("not a teamtree topic", topic=topic)
    if parts[1] != VERSION:
        raise TopicError(f"unsupported topic version {parts[1]!r} (this is {VERSION})", topic=topic)
    try:
        team = validate_id(parts[2], "team")
        agent = None if parts[3] == TEAM_CHANNEL else validate_id(parts[3], "agent id")
        channel = validate_id(parts[4], "channel")
        recipient = validate_id(parts[5], "recipient id") if len(parts) == 6 else None
    except TopicError as exc:
        raise TopicError(exc.reason, topic=topic) from None
    return Topic(team, agent, channel, recipient)
