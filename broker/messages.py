"""The messages a connection sends and receives, as plain values.

Their own module so the MQTT client (``fast_client``) builds an ``Incoming`` straight
from the packet, below the connection that hands it to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Incoming", "Outgoing"]


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message to publish."""

    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = False


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message received from the broker."""

    topic: str
    payload: bytes
    retain: bool
    qos: int
