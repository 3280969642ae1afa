"""Broker endpoints given as URLs: ``mqtt://host:port``, ``mqtts://``, ``ws://host:port/path``.

A clustered broker is given as a list of URLs (``"mqtt://a:1883,mqtt://b:1883"`` or a
TOML array): the first is the endpoint, the others its ``fallbacks``, and a
Connection moves to the next one when the one it uses is lost (broker/failover.py).
"""

from __future__ import annotations

from collections.abc import Sequence
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
    #: other nodes of the same (clustered) broker, tried in order when this one is lost
    fallbacks: tuple[Endpoint, ...] = ()

    @property
    def nodes(self) -> tuple[Endpoint, ...]:
        """This endpoint and its fallbacks (each without fallbacks), in order."""
        first = Endpoint(self.host, self.port, self.transport, self.tls, self.path)
        return (first, *self.fallbacks)

    @property
    def urls(self) -> str:
        """Every node's URL, comma-separated: what ``parse_endpoint`` reads back."""
        return ",".join(node.url for node in self.nodes)

    @property
    def url(self) -> str:
        """The URL of this node only (see ``urls`` for the whole list)."""
        scheme = {("tcp", False): "mqtt", ("tcp", True): "mqtts"}.get(
            (self.transport, self.tls), "wss" if self.tls else "ws"
        )
        return f"{scheme}://{self.host}:{self.port}{self.path or ''}"

    def __str__(self) -> str:
        return self.url


def parse_endpoint(url: str | Sequence[str], *, key: str = "broker") -> Endpoint:
    """Parse a broker URL, or a list of them (a sequence, or one string with commas)
    naming the nodes of one clustered broker. Raises ConfigError naming the bad entry
    and the expected form."""
    if isinstance(url, str) and "," in url:
        url = [part.strip() for part in url.split(",")]
    if not isinstance(url, str) and isinstance(url, Sequence):
        return _parse_list(list(url), key)
    return _parse_one(url, key)


def _parse_list(urls: list[object], key: str) -> Endpoint:
    if not urls:
        raise ConfigError("the broker list is empty; give at least one mqtt://HOST:PORT", key=key)
    nodes: list[Endpoint] = []
    for index, entry in enumerate(urls, 1):
        try:
            nodes.append(_parse_one(entry, key))
        except ConfigError as exc:
            raise ConfigError(
                f"entry {index} of the broker list: {str(exc).removeprefix(f'[{key}] ')}",
                key=key,
            ) from None
    if len(set(nodes)) != len(nodes):
        raise ConfigError(f"the broker list names a node twice: {urls!r}", key=key)
    first, *rest = nodes
    return Endpoint(first.host, first.port, first.transport, first.tls, first.path, tuple(rest))


def _parse_one(url: object, key: str) -> Endpoint:
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
