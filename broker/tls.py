"""TLS for broker connections (``mqtts://``, ``wss://``) and mosquitto TLS listeners.

Clients: ``TlsSettings.from_env()`` reads ``TEAMTREE_TLS_CA``, ``TEAMTREE_TLS_CERT``,
``TEAMTREE_TLS_KEY`` (client certificate and key, for mutual TLS) and
``TEAMTREE_TLS_INSECURE=1`` (skip host-name checks, for self-signed test brokers);
``client_context`` turns them into an ``ssl.SSLContext`` for ``Connection``. Without
any of them, ``mqtts://`` verifies the broker against the system's CAs (and
``SSL_CERT_FILE``, which Python honours).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from teamtree.broker.errors import ConfigError

__all__ = ["TlsSettings", "client_context", "render_tls_listener"]


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Where the CA, certificate and key are; all optional."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    insecure: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TlsSettings | None:
        """The settings in ``TEAMTREE_TLS_*``, or None when none is set."""
        env = os.environ if env is None else env

        def path(name: str) -> Path | None:
            value = env.get(name)
            return Path(value) if value else None

        settings = cls(
            ca=path("TEAMTREE_TLS_CA"),
            cert=path("TEAMTREE_TLS_CERT"),
            key=path("TEAMTREE_TLS_KEY"),
            insecure=env.get("TEAMTREE_TLS_INSECURE", "") in ("1", "true", "yes"),
        )
        return None if settings == cls() else settings


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """An SSLContext verifying the broker against `settings.ca` (or the system CAs),
    presenting `cert`/`key` when given. Raises ConfigError naming an unreadable file."""
    for name, value in (("ca", settings.ca), ("cert", settings.cert), ("key", settings.key)):
        if value is not None and not value.is_file():
            raise ConfigError(f"TLS {name} file not found: {value}", key=f"tls.{name}")
    if (settings.cert is None) != (settings.key is None):
        raise ConfigError("give both a TLS client certificate and its key, or neither", key="tls")
    try:
        context = ssl.create_default_context(
            cafile=str(settings.ca) if settings.ca is not None else None
        )
        if settings.cert is not None:
            context.load_cert_chain(str(settings.cert), str(settings.key))
    except ssl.SSLError as exc:
        raise ConfigError(f"bad TLS material: {exc.reason or exc}", key="tls") from None
    if settings.insecure:
        context.check_hostname = False
    return context


def render_tls_listener(
    port: int,
    *,
    ca: Path,
    cert: Path,
    key: Path,
    bind: str = "0.0.0.0",
    require_certificate: bool = False,
    websockets: bool = False,
) -> str:
    """mosquitto.conf lines for a TLS listener (append to ``render_mosquitto_conf``)."""
    lines = [
        f"listener {port} {bind}",
        f"protocol {'websockets' if websockets else 'mqtt'}",
        f"cafile {ca}",
        f"certfile {cert}",
        f"keyfile {key}",
        f"require_certificate {'true' if require_certificate else 'false'}",
    ]
    return "\n".join(lines) + "\n"
