"""Which local broker ``teamtree run`` starts: a name the config and the CLI read.

Its own module so that reading a config (every agent process does, before it
connects) does not import the local brokers' code (``local_broker``).
"""

from __future__ import annotations

import enum

__all__ = ["BrokerKind"]


class BrokerKind(enum.StrEnum):
    """Which local broker to start."""

    AUTO = "auto"  #: mosquitto when the binary is installed, else embedded
    MOSQUITTO = "mosquitto"  #: the mosquitto binary as a child process
    EMBEDDED = "embedded"  #: amqtt in this process
