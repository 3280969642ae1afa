"""A subscription table for the embedded broker (amqtt) that may change while walked.

amqtt 0.12's ``Broker`` walks ``_subscriptions`` (topic filter -> sessions) with awaits
inside the loop: sending a connecting client the retained messages of every filter,
and filtering each broadcast by topic. A client that subscribes to a new filter
during one of those awaits grows the dict, and the walk ends in "dictionary changed
size during iteration". In the first case amqtt drops the connecting client's
session: on ``teamtree run`` a member was disconnected at start-up, about one run in
thirteen, and came back 5 s later (``tests/test_embedded_broker_subscriptions.py``).

``SnapshotSubscriptions`` walks a copy of its keys (or items) instead, so a filter
added meanwhile is seen by the next walk, as mosquitto does; the lists of sessions
are shared, not copied. ``install`` swaps it into a started ``Broker``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["SnapshotSubscriptions", "install"]


class SnapshotSubscriptions(dict):  # type: ignore[type-arg]
    """A dict whose iteration, ``keys`` and ``items`` read a snapshot."""

    def __iter__(self) -> Iterator[Any]:
        return iter(list(super().keys()))

    def keys(self) -> list[Any]:  # type: ignore[override]
        return list(super().keys())

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return list(super().items())


def install(broker: Any) -> None:
    """Give amqtt's `broker` a snapshot-walked subscription table (kept entries)."""
    table = broker._subscriptions
    if not isinstance(table, SnapshotSubscriptions):
        broker._subscriptions = SnapshotSubscriptions(table)
