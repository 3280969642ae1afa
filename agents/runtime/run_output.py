"""How ``teamtree run`` shows its children's output: which of their lines it echoes
and how a line fits the terminal.

Every agent logs ``peer.presence`` when any teammate comes or goes, so a team of n
says each change n - 1 times (the square of the team in all); the run says each
change once itself (``PresenceLines``) and does not echo the agents' own lines. On a
terminal a long line is wrapped under its prefix, so the output stays readable at
80 columns (and its log lines are shortened, ``compact_line``).
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import TextIO

__all__ = [
    "QUIET_EVENTS",
    "PresenceLines",
    "compact_line",
    "event_name",
    "fit_line",
    "terminal_columns",
]

#: the agents' log events ``run`` does not echo (it says what they say once itself)
QUIET_EVENTS = frozenset({"peer.presence"})
#: narrowest text column a wrapped line gets after its prefix
_MIN_TEXT = 24
_PLAIN = re.compile(r"^\S+ \[\w+\] (\S+)")
#: a plain log line: time (its microseconds apart), level, event, the key=value pairs
_PARTS = re.compile(r"^(\d\d:\d\d:\d\d\.\d{3})\d{3} (\[\w+\]) (\S+) +(.*)$")


def event_name(line: str) -> str | None:
    """The structlog event a child's output line reports (plain ``HH:MM:SS [level]
    event ...`` or a JSON object), or None for any other line."""
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return None
        event = record.get("event") if isinstance(record, dict) else None
        return event if isinstance(event, str) else None
    match = _PLAIN.match(line)
    return match.group(1) if match else None


def compact_line(agent: str, line: str) -> str:
    """A child's plain log line shortened for a terminal: time to the millisecond, one
    space after the event, and no ``agent=<agent>`` (its ``agent |`` prefix says it)."""
    match = _PARTS.match(line)
    if match is None:
        return line
    stamp, level, event, pairs = match.groups()
    pairs = re.sub(rf"(^| )agent={re.escape(agent)}(?= |$)", "", pairs).strip()
    return f"{stamp} {level} {event} {pairs}".rstrip()


def terminal_columns(out: TextIO) -> int | None:
    """The width of the terminal `out` writes to, or None when it is no terminal."""
    try:
        if not out.isatty():
            return None
        import os

        return os.get_terminal_size(out.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None


def fit_line(prefix: str, text: str, columns: int | None) -> list[str]:
    """`prefix` + `text` as output lines no wider than `columns` (None: one line as
    is): a longer line is wrapped at spaces, its continuation lines indented under
    the text, so no word is lost and none is cut."""
    if columns is None or len(prefix) + len(text) <= columns:
        return [prefix + text]
    room = max(_MIN_TEXT, columns - len(prefix))
    lead = text[: len(text) - len(text.lstrip(" "))]
    parts = textwrap.wrap(text, room, subsequent_indent=lead + "    ", break_on_hyphens=False) or [
        text
    ]
    pad = " " * (len(prefix) - 2) + "| " if prefix.endswith("| ") else " " * len(prefix)
    return [prefix + parts[0], *(pad + part for part in parts[1:])]


class PresenceLines:
    """The run's own presence lines: one per change of a member's presence as the
    run sees it (``pr2 ONLINE``), none for a repeat."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}

    def change(self, agent: str, state: str) -> str | None:
        """The line to say for `agent` now in `state`, or None when it was said."""
        if self.shown.get(agent) == state:
            return None
        self.shown[agent] = state
        return f"{agent} {state}"
