"""Local brokers for one-machine runs and tests: mosquitto when installed, else amqtt.

``MosquittoBroker`` runs the mosquitto binary as a child process with a generated
config on a free port (persistence on, so sessions and queued QoS 1 messages survive
a restart). ``EmbeddedBroker`` runs amqtt inside the current process; it speaks MQTT
3.1.1 only and is slower, so it is the fallback, not the default.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import pwd
import random
import shutil
import signal
import socket
import tempfile
from pathlib import Path
from typing import Any, Protocol

from teamtree.broker.broker_kind import BrokerKind
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.errors import BrokerStartError, LifecycleError
from teamtree.broker.mosquitto_conf import MosquittoSettings, render_mosquitto_conf


def find_mosquitto() -> str | None:
    """Path of the mosquitto binary, or None (Debian installs it in /usr/sbin)."""
    return shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/usr/local/sbin")


#: how many ports below the system's ephemeral range ``free_port`` picks from
LISTEN_SPAN = 12000
_ports = random.Random()  # its own generator: a test seeding ``random`` cannot repeat picks


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands to outgoing connections (Linux's
    ``ip_local_port_range``; 32768-60999 where it cannot be read)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on `host`, for a listener started next.

    Picked at random below the ephemeral range: a port from inside it (what binding
    port 0 gives) can be taken by any client's outgoing connection between this check
    and the listener's bind, and on a busy machine one was (a broker or a web page
    failing with "address already in use"). Falls back to a port the system picks."""
    low = ephemeral_range()[0]
    candidates = range(max(1024, low - LISTEN_SPAN), low)
    for port in _ports.sample(candidates, min(64, len(candidates))):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


async def wait_for_port(host: str, port: int, timeout: float = 10.0) -> None:
    """Return once something accepts TCP connections at host:port.
    Raises BrokerStartError after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            if loop.time() > deadline:
                raise BrokerStartError(
                    f"nothing listens on {host}:{port} after {timeout:.0f} s",
                    endpoint=f"mqtt://{host}:{port}",
                ) from None
            await asyncio.sleep(0.05)
        else:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return


class LocalBroker(Protocol):
    """What `teamtree run` and the tests need from a local broker."""

    kind: BrokerKind
    endpoint: Endpoint

    async def start(self) -> Endpoint: ...

    async def stop(self) -> None: ...


class MosquittoBroker:
    """mosquitto as a child process; ``stop`` then ``start`` reuses the port and the
    persistence file, which is how tests restart the broker under a live team."""

    kind = BrokerKind.MOSQUITTO

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        workdir: Path | None = None,
        persistence: bool = True,
        binary: str | None = None,
        settings: MosquittoSettings | None = None,
    ):
        binary = binary or find_mosquitto()
        if binary is None:
            raise BrokerStartError(
                "mosquitto is not installed; install it (apt-get install -y mosquitto) "
                "or use the embedded broker (--broker-kind embedded)"
            )
        self._binary = binary
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="teamtree-mosquitto-"))
        port = port or free_port(host)
        base = settings or MosquittoSettings()
        self.settings = dataclasses.replace(
            base, port=port, bind=host, persistence_dir=self.workdir if persistence else None
        )
        self.endpoint = Endpoint(host, port)
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    async def start(self) -> Endpoint:
        """Start mosquitto and wait until it accepts connections. Raises BrokerStartError."""
        if self._process is not None and self._process.returncode is None:
            raise LifecycleError("this mosquitto is already running")
        conf = self.workdir / "mosquitto.conf"
        text = render_mosquitto_conf(self.settings)
        if os.geteuid() == 0:  # mosquitto would otherwise drop to a 'mosquitto' user
            text += f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"
        conf.write_text(text)
        log_path = self.workdir / "mosquitto.log"
        with log_path.open("ab") as log_file:
            self._process = await asyncio.create_subprocess_exec(
                self._binary,
                "-c",
                str(conf),
                stdout=log_file,
                stderr=log_file,
                stdin=asyncio.subprocess.DEVNULL,
            )
        try:
            await wait_for_port(self.endpoint.host, self.endpoint.port)
        except BrokerStartError:
            await self.stop()
            tail = log_path.read_text(errors="replace")[-800:]
            raise BrokerStartError(
                f"mosquitto did not start on port {self.endpoint.port}: {tail.strip()}",
                endpoint=self.endpoint.url,
            ) from None
        return self.endpoint

    async def stop(self, *, kill: bool = False) -> None:
        """Stop mosquitto (SIGTERM, so it saves its persistence file; SIGKILL with
        `kill` or after 5 s)."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 5.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()

    async def close(self) -> None:
        """Stop and remove the working directory if this object made it."""
        await self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    async def __aenter__(self) -> MosquittoBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class EmbeddedBroker:
    """amqtt running in this process (MQTT 3.1.1; no shared subscriptions)."""

    kind = BrokerKind.EMBEDDED

    def __init__(self, port: int | None = None, *, host: str = "127.0.0.1"):
        self.endpoint = Endpoint(host, port or free_port(host))
        self._broker: Any = None

    async def start(self) -> Endpoint:
        """Start amqtt and wait until it accepts connections. Raises BrokerStartError."""
        from amqtt.broker import Broker  # imported late: it is slow and noisy to import

        from teamtree.broker import amqtt_subscriptions
        from teamtree.broker.amqtt_keepalive import GRACE_S, enforce_keepalive
        from teamtree.broker.amqtt_logs import quiet_amqtt_noise

        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.ERROR)
        quiet_amqtt_noise()  # port probes and deliveries to closed connections
        enforce_keepalive()  # amqtt alone never drops a silent client (no Will)
        config = {
            "timeout_disconnect_delay": GRACE_S,
            "listeners": {
                "default": {"type": "tcp", "bind": f"{self.endpoint.host}:{self.endpoint.port}"}
            },
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
        self._broker = Broker(config)
        amqtt_subscriptions.install(self._broker)  # amqtt's table may change mid-walk
        try:
            await self._broker.start()
        except Exception as exc:
            raise BrokerStartError(
                f"the embedded broker did not start: {exc}", endpoint=self.endpoint.url
            ) from exc
        await wait_for_port(self.endpoint.host, self.endpoint.port)
        return self.endpoint

    async def stop(self) -> None:
        if self._broker is not None:
            with contextlib.suppress(Exception):
                await self._broker.shutdown()
            self._broker = None

    async def close(self) -> None:
        await self.stop()

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def make_local_broker(
    kind: BrokerKind | str = BrokerKind.AUTO, port: int | None = None, *, host: str = "127.0.0.1"
) -> MosquittoBroker | EmbeddedBroker:
    """The local broker for `kind`; AUTO picks mosquitto when it is installed."""
    kind = BrokerKind(kind)
    if kind is BrokerKind.AUTO:
        kind = BrokerKind.MOSQUITTO if find_mosquitto() else BrokerKind.EMBEDDED
    if kind is BrokerKind.MOSQUITTO:
        return MosquittoBroker(port, host=host)
    return EmbeddedBroker(port, host=host)
