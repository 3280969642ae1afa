"""Broker endpoints given as URLs: ``mqtt://host:port``, ``mqtts://``, ``ws://host:port/path``."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from teamtree.broker.errors import ConfigError

_DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883, "ws": 9001, "wss": 9443}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a broker listens and how to talk to it."""

    host: str
    port: int
    transport: str = "tcp"
    tls: bool = False
    path: str | None = None

    @property
    def url(self) -> str:
        scheme = {("tcp", False): "mqtt", ("tcp", True): "mqtts"}.get(
            (self.transport, self.tls), "wss" if self.tls else "ws"
        )
        return f"{scheme}://{self.host}:{self.port}{self.path or ''}"

    def __str__(self) -> str:
        return self.url


def parse_endpoint(url: str, *, key: str = "broker") -> Endpoint:
    """Parse a broker URL. Raises ConfigError naming the expected form."""
    form = "expected mqtt://HOST:PORT (or mqtts://, ws://HOST:PORT/PATH, wss://)"
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"{url!r} is not a broker URL; {form}", key=key)
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS:
        raise ConfigError(f"unknown scheme {parts.scheme!r} in {url!r}; {form}", key=key)
    try:
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise ConfigError(f"bad port in {url!r}; {form}", key=key) from None
    if not parts.hostname:
        raise ConfigError(f"no host in {url!r}; {form}", key=key)
    ws = parts.scheme in ("ws", "wss")
    return Endpoint(
        host=parts.hostname,
        port=port,
        transport="websockets" if ws else "tcp",
        tls=parts.scheme in ("mqtts", "wss"),
        path=(parts.path or "/mqtt") if ws else None,
    )
