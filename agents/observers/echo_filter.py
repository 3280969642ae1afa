"""Which messages ``teamtree echo`` prints: by kind, agent, mission and topic.

Every filter is checked when it is made, so a typo is refused at once with what is
wrong and how to fix it (a kind no agent sends would otherwise print nothing, forever):
a ``--kind`` must name or match (``node.*``) a kind teamtree sends, a ``--topic`` is an
MQTT filter below the team (``+/state``, ``_/mission``, ``pr2/#``), agent and mission
ids are ids. Filters of one sort are alternatives; filters of different sorts must all
hold.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from teamtree.agents.observers.wire_kinds import KNOWN_KINDS, kinds_matching
from teamtree.agents.runtime.mission import mission_of
from teamtree.broker import ConfigError, TopicError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import ROOT, VERSION, Topic, validate_id

__all__ = ["EchoFilter", "topic_matches"]


def _check_topic(pattern: str) -> list[str]:
    """`pattern`'s segments below the team; ConfigError naming a misplaced wildcard."""
    parts = pattern.strip("/").split("/")
    if parts[:2] == [ROOT, VERSION] and len(parts) > 3:
        parts = parts[3:]  # a whole topic filter: its team is the echo's own
    if not pattern.strip("/"):
        raise ConfigError("an empty topic filter; e.g. '+/state' or '_/mission'", key="--topic")
    for index, part in enumerate(parts):
        if "#" in part and (part != "#" or index != len(parts) - 1):
            raise ConfigError(
                f"{pattern!r}: '#' must be a whole last segment ('pr2/#')", key="--topic"
            )
        if "+" in part and part != "+":
            raise ConfigError(
                f"{pattern!r}: '+' must be a whole segment ('+/state', not 'pr+/state')",
                key="--topic",
            )
    return parts


def topic_matches(parts: Sequence[str], topic: Topic) -> bool:
    """Whether the filter `parts` (below the team) matches `topic`."""
    have = [
        topic.agent or "_",
        topic.channel,
        *([topic.recipient] if topic.recipient is not None else []),
    ]
    for index, part in enumerate(parts):
        if part == "#":
            return True
        if index >= len(have) or (part != "+" and part != have[index]):
            return False
    return len(parts) == len(have)


@dataclass(frozen=True)
class EchoFilter:
    """The filters, checked (``EchoFilter.parse``); an empty sort lets every message by."""

    kinds: frozenset[str] = frozenset()
    agents: frozenset[str] = frozenset()
    missions: frozenset[str] = frozenset()
    topics: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def parse(
        cls,
        kinds: Sequence[str] = (),
        agents: Sequence[str] = (),
        missions: Sequence[str] = (),
        topics: Sequence[str] = (),
    ) -> EchoFilter:
        """Check every filter; raises ConfigError naming the first bad one and the fix."""
        matched: set[str] = set()
        for pattern in kinds:
            found = kinds_matching(pattern)
            if not found:
                near = difflib.get_close_matches(pattern, sorted(KNOWN_KINDS), n=3)
                hint = f"did you mean {', '.join(near)}? " if near else ""
                raise ConfigError(
                    f"{pattern!r} is no kind of message teamtree sends; {hint}a kind is "
                    "dotted lowercase, a pattern may use * ('node.*'); "
                    "`teamtree echo --list-kinds` lists them",
                    key="--kind",
                )
            matched.update(found)
        for what, values in (("--agent", agents), ("--mission", missions)):
            for value in values:
                try:
                    validate_id(value, what.strip("-") + " id")
                except TopicError as exc:
                    raise ConfigError(exc.reason, key=what) from None
        return cls(
            kinds=frozenset(matched),
            agents=frozenset(agents),
            missions=frozenset(missions),
            topics=tuple(tuple(_check_topic(t)) for t in topics),
        )

    def __call__(self, env: Envelope, topic: Topic) -> bool:
        """Whether `env`, received on `topic`, passes every sort of filter."""
        if self.kinds and env.kind not in self.kinds:
            return False
        if self.agents and not (
            env.sender in self.agents
            or topic.recipient in self.agents
            or (env.to is not None and env.to in self.agents)
        ):
            return False
        if self.missions and mission_of(env.body) not in self.missions:
            return False
        return not self.topics or any(topic_matches(t, topic) for t in self.topics)
