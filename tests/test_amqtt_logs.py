"""The embedded broker drops amqtt error logs that report nothing wrong (a port probe,
a delivery to a client whose connection had closed, while the broker runs or stops)
and keeps every other error, a failed delivery of another kind included."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from teamtree.broker.amqtt_logs import AmqttNoiseFilter, quiet_amqtt_noise
from teamtree.broker.local_broker import EmbeddedBroker

CLOSED = RuntimeError(
    "unable to perform operation on <TCPTransport closed=True reading=False 0x5>; "
    "the handler is closed"
)
SHUTDOWN = "Task failed during broadcast shutdown: <Task finished name='Task-380'>"
RUNNING = "Task failed and will be skipped: <Task finished name='Task-367'>"
PROBE = "No data from (client @=127.0.0.1:38320) : No data to decode MQTT packet fixed header"


def _record(message: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("amqtt.broker", logging.ERROR, __file__, 1, message, (), exc_info)


@pytest.mark.parametrize(
    ("message", "exc", "kept"),
    [
        (PROBE, None, False),
        (SHUTDOWN, CLOSED, False),
        (SHUTDOWN, ConnectionResetError("reset by peer"), False),
        (SHUTDOWN, BrokenPipeError(), False),
        (SHUTDOWN, ValueError("a bad packet"), True),  # not a gone client: shown
        (SHUTDOWN, RuntimeError("the broker's own bug"), True),
        (SHUTDOWN, None, True),
        (RUNNING, CLOSED, False),  # a member left while a message to it was on its way
        (RUNNING, ConnectionResetError("reset by peer"), False),
        (RUNNING, RuntimeError("Event loop is closed"), True),  # not a closed connection
        (RUNNING, TimeoutError("Timeout waiting for PUBACK"), True),
        (RUNNING, None, True),
        ("No data from (client @=127.0.0.1:1) : something else", None, True),
        ("Broadcast loop stopped by exception", CLOSED, True),
    ],
)
def test_only_the_two_kinds_of_noise_are_dropped(
    message: str, exc: BaseException | None, kept: bool
) -> None:
    assert AmqttNoiseFilter().filter(_record(message, exc)) is kept


def test_installing_twice_adds_one_filter() -> None:
    quiet_amqtt_noise()
    quiet_amqtt_noise()
    logger = logging.getLogger("amqtt.broker")
    assert sum(isinstance(f, AmqttNoiseFilter) for f in logger.filters) == 1


async def test_a_port_probe_logs_no_error_on_the_embedded_broker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A socket opened and closed without a packet (what ``wait_for_port`` does): amqtt
    logs an error for it, which the embedded broker drops. With the filter removed the
    same probe logs it, so the probe does reach that path."""
    broker = EmbeddedBroker()
    await broker.start()
    logger = logging.getLogger("amqtt.broker")
    try:

        async def probe() -> list[str]:
            caplog.clear()
            with socket.create_connection((broker.endpoint.host, broker.endpoint.port)):
                pass
            await asyncio.sleep(0.3)  # amqtt reads the closed socket
            return [r.getMessage() for r in caplog.records if "No data from" in r.getMessage()]

        with caplog.at_level(logging.ERROR, logger="amqtt.broker"):
            assert await probe() == []
            (noise_filter,) = [f for f in logger.filters if isinstance(f, AmqttNoiseFilter)]
            logger.removeFilter(noise_filter)
            try:
                assert len(await probe()) == 1
            finally:
                logger.addFilter(noise_filter)
    finally:
        await broker.close()
