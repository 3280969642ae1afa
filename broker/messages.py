"""The messages a connection sends and receives, as plain values.

Their own module so the MQTT client (``fast_client``) builds an ``Incoming`` straight
from the packet, below the connection that hands it to the agent. msgspec Structs, not
dataclasses: one is made for every message sent and received (a tenth of a frozen
dataclass's construction time), and the class is made without compiling code at import.
"""

from __future__ import annotations

from msgspec import Struct

__all__ = ["Incoming", "Outgoing"]


class Outgoing(Struct, frozen=True):
    """A message to publish."""

    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = False


class Incoming(Struct, frozen=True):
    """A message received from the broker."""

    topic: str
    payload: bytes
    retain: bool
    qos: int
