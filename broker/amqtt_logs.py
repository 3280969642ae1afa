"""Two of the embedded broker's (amqtt 0.12) error logs that report nothing wrong.

- ``No data from <client> : No data to decode MQTT packet fixed header``: a client
  connected and closed without sending a packet. Every ``teamtree run`` on the
  embedded broker printed five of these at start: they are port probes
  (``wait_for_port``, an agent's reach check) that open a socket and close it.
- ``Task failed during broadcast shutdown``, with a traceback: when the broker stops,
  amqtt waits for its pending deliveries and logs each one whose client had already
  disconnected (``RuntimeError: unable to perform operation on <TCPTransport
  closed=True ...>``, or a ``ConnectionError``). The broker is stopping, and those
  clients are gone. A successful ``teamtree run`` of ``configs/hello.toml`` printed
  that traceback after "Mission succeeded" in 2 of 20 runs beside two CPU hogs, and
  the integration test that checks a run prints no traceback failed on it in CI.

``quiet_amqtt_noise`` drops exactly those records from the ``amqtt.broker`` logger.
Any other error amqtt logs, including a delivery that failed for another reason,
still shows.
"""

from __future__ import annotations

import logging

__all__ = ["AmqttNoiseFilter", "quiet_amqtt_noise"]

_PROBE = "No data to decode MQTT packet fixed header"
_SHUTDOWN = "Task failed during broadcast shutdown"


def _closed_transport(exc: BaseException | None) -> bool:
    """A write to a connection that was already closed."""
    if isinstance(exc, ConnectionError):
        return True
    return isinstance(exc, RuntimeError) and "closed" in str(exc)


class AmqttNoiseFilter(logging.Filter):
    """Drops amqtt's probe and shutdown-delivery errors (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("No data from") and message.endswith(_PROBE):
            return False
        if message.startswith(_SHUTDOWN) and record.exc_info:
            return not _closed_transport(record.exc_info[1])
        return True


_FILTER = AmqttNoiseFilter()


def quiet_amqtt_noise() -> None:
    """Install the filter on amqtt's broker logger (once; idempotent)."""
    logger = logging.getLogger("amqtt.broker")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
