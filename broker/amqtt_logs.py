"""Two kinds of the embedded broker's (amqtt 0.12) error logs that report nothing wrong.

- ``No data from <client> : No data to decode MQTT packet fixed header``: a client
  connected and closed without sending a packet. Every ``teamtree run`` on the
  embedded broker printed five of these at start: they are port probes
  (``wait_for_port``, an agent's reach check) that open a socket and close it.
- A delivery to a client whose connection had already closed, with a traceback
  (``RuntimeError: unable to perform operation on <TCPTransport closed=True ...>;
  the handler is closed``, or a ``ConnectionError``). amqtt logs it in two places:
  ``Task failed during broadcast shutdown`` when the broker stops and waits for its
  pending deliveries, and ``Task failed and will be skipped`` when the broker is
  running and a client disconnects while a message to it is on its way (the members
  of a finished mission leave together). The client is gone either way: for a
  clean session its messages go with it, and a QoS 1 message to a persistent
  session stays in the session's in-flight store, since amqtt stores it there before
  the failed write. A successful ``teamtree run`` of ``configs/hello.toml`` printed
  the shutdown traceback in 2 of 20 runs beside two CPU hogs, and the running one in
  1 of 30; the integration test that checks a run prints no traceback failed in CI
  on each.

``quiet_amqtt_noise`` drops exactly those records from the ``amqtt.broker`` logger.
Any other error amqtt logs, including a delivery that failed for another reason,
still shows.
"""

from __future__ import annotations

import logging

__all__ = ["AmqttNoiseFilter", "quiet_amqtt_noise"]

_PROBE = "No data to decode MQTT packet fixed header"
_DELIVERY_FAILED = ("Task failed during broadcast shutdown", "Task failed and will be skipped")
# What uvloop's stream says when written to after it closed.
_CLOSED_WRITE = ("closed=True", "the handler is closed")


def _closed_transport(exc: BaseException | None) -> bool:
    """A write to a connection that was already closed."""
    if isinstance(exc, ConnectionError):
        return True
    return isinstance(exc, RuntimeError) and any(part in str(exc) for part in _CLOSED_WRITE)


class AmqttNoiseFilter(logging.Filter):
    """Drops amqtt's probe errors and deliveries to closed connections (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("No data from") and message.endswith(_PROBE):
            return False
        if message.startswith(_DELIVERY_FAILED) and record.exc_info:
            return not _closed_transport(record.exc_info[1])
        return True


_FILTER = AmqttNoiseFilter()


def quiet_amqtt_noise() -> None:
    """Install the filter on amqtt's broker logger (once; idempotent)."""
    logger = logging.getLogger("amqtt.broker")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
