"""Which MQTT client a connection uses: ``FastClient``, or the plain aiomqtt one.

``FastClient`` runs only where ``broker/client_check.py`` finds the aiomqtt and paho
it was written for; elsewhere a connection falls back to ``PlainClient`` (public
aiomqtt API only) and the process logs one warning saying which versions it found and
which it expected. The environment may also choose:

- ``TEAMTREE_MQTT_CLIENT`` unset or ``auto``: ``FastClient`` if the check passes,
  else ``PlainClient`` with the warning;
- ``fast``: ``FastClient``, or a clear error naming what the check found;
- ``plain``: ``PlainClient``, without checking (a test of the fallback, a debugger, a
  version of aiomqtt or paho not vetted yet).

The check runs once per process, when its first connection starts (it needs the
event loop), and takes a few milliseconds.
"""

from __future__ import annotations

import functools
import os
from typing import Any, NoReturn

import structlog

from teamtree.broker import client_check
from teamtree.broker.errors import ConfigError
from teamtree.broker.plain_client import PlainClient

__all__ = ["MQTT_CLIENT_ENV", "client_kind", "session_client_class"]

MQTT_CLIENT_ENV = "TEAMTREE_MQTT_CLIENT"
_CHOICES = ("auto", "fast", "plain")

log = structlog.get_logger("teamtree.broker")

_said: set[str] = set()  # the choices logged in this process


@functools.cache
def _problems() -> tuple[str, ...]:
    """What keeps ``FastClient`` from running here (checked once per process)."""
    found = client_check.problems()
    try:
        import teamtree.broker.fast_client  # noqa: F401
    except ImportError as exc:  # a name it imports from paho is gone
        found.append(f"teamtree.broker.fast_client does not import: {exc}")
    return tuple(found)


def client_kind(choice: str | None = None) -> str:
    """``fast`` or ``plain``: the client a connection started now uses. `choice`
    (``auto``, ``fast`` or ``plain``) overrides ``TEAMTREE_MQTT_CLIENT``. Raises
    ConfigError for a choice it does not know, and for ``fast`` where the check fails.
    """
    raw = os.environ.get(MQTT_CLIENT_ENV, "") if choice is None else choice
    wanted = raw.strip().lower() or "auto"
    if wanted not in _CHOICES:
        _refuse(f"{MQTT_CLIENT_ENV}={raw!r}: expected auto, fast or plain")
    if wanted == "plain":
        _say("plain", f"{MQTT_CLIENT_ENV}=plain", log.info)
        return "plain"
    found = _problems()
    if not found:
        _say("fast", "the pinned aiomqtt and paho-mqtt are installed", log.debug)
        return "fast"
    if wanted == "fast":
        _refuse(
            f"{MQTT_CLIENT_ENV}=fast but FastClient cannot run here: {'; '.join(found)}. "
            f"Install the pinned versions ({_versions(client_check.PINNED)}), "
            f"or unset {MQTT_CLIENT_ENV} to fall back to the plain aiomqtt client"
        )
    _say("fallback", "; ".join(found), log.warning)
    return "plain"


def session_client_class(choice: str | None = None) -> type[Any]:
    """The client class for a new session (``client_kind``); both take aiomqtt's
    constructor arguments and offer the same interface to ``Connection``."""
    if client_kind(choice) == "plain":
        return PlainClient
    from teamtree.broker.fast_client import FastClient

    return FastClient


def _refuse(why: str) -> NoReturn:
    """Log `why` (the connection's task may be the only one to see the error), then
    raise it as a ConfigError."""
    log.error("broker.mqtt_client", error=why)
    raise ConfigError(why)


def _versions(names: dict[str, str | None]) -> str:
    return ", ".join(f"{name} {version or 'none'}" for name, version in names.items())


def _say(key: str, why: str, emit: Any) -> None:
    """Log the choice once per process: a warning for a fallback, else quieter."""
    if key in _said:
        return
    _said.add(key)
    found = {name: client_check.installed_version(name) for name in client_check.PINNED}
    emit(
        "broker.mqtt_client",
        client="fast" if key == "fast" else "plain",
        found=_versions(found),
        expected=_versions(client_check.PINNED),
        why=why,
    )
