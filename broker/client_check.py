"""Whether ``FastClient`` may run here: the versions and private names it was written for.

``FastClient`` (``broker/fast_client.py``) subclasses aiomqtt's client and reaches into
private attributes and methods of aiomqtt and paho, some of them replaced on the live
paho instance. A release that renames one of them would stop every agent connecting,
or silently bypass an override. So pyproject.toml pins both packages exactly, and
before a process builds its first client this module checks that

- the installed versions are the pinned ones (``PINNED``), and
- every private name ``FastClient`` touches is there with the kind it expects (a
  method with the parameters it calls it with, an attribute of the type it reads),
  and aiomqtt wires paho's callbacks to the methods ``FastClient`` overrides.

``problems`` returns what is wrong, in words; ``broker/client_choice.py`` falls back
to the plain aiomqtt client when anything is. A check takes a few milliseconds
(package metadata, and a throwaway aiomqtt client with no socket), so the choice
makes it once per process.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
from dataclasses import dataclass
from typing import Any

import aiomqtt
import paho.mqtt.client as paho

__all__ = ["AIOMQTT_NAMES", "PAHO_NAMES", "PINNED", "WIRED", "Private", "installed_version",
           "name_problems", "problems", "version_problems"]  # fmt: skip

PINNED = {"aiomqtt": "2.5.1", "paho-mqtt": "2.2.0"}
"""The distributions ``FastClient`` was written against, as pinned in pyproject.toml."""


@dataclass(frozen=True)
class Private:
    """A private name of a third-party class: a method taking `params` (after
    ``self``), or an attribute of an instance, of `kind` (a type or types) if given."""

    name: str
    params: tuple[str, ...] | None = None  # a method when given
    kind: type | tuple[type, ...] | None = None  # an attribute's type, when checked

    @property
    def is_method(self) -> bool:
        return self.params is not None


_CALLBACK = ("client", "userdata", "sock")

AIOMQTT_NAMES = (
    Private("_client", kind=paho.Client),
    Private("_queue"),
    Private("_disconnected", kind=asyncio.Future),
    Private("_loop", kind=asyncio.AbstractEventLoop),
    Private("_pending_publishes", kind=dict),
    Private("_on_message", ("client", "userdata", "message")),
    Private("_on_publish", ("client", "userdata", "mid", "reason_code", "properties")),
    Private("_on_socket_open", _CALLBACK),
    Private("_on_socket_close", _CALLBACK),
    Private("_on_socket_register_write", _CALLBACK),
    Private("_on_socket_unregister_write", _CALLBACK),
    Private("_pending_call", ("mid", "value", "pending_dict")),
)
"""What ``FastClient`` reads, calls or overrides of ``aiomqtt.Client``."""

PAHO_NAMES = (
    Private("_sock"),
    Private("_sock_close", ()),
    Private("_in_packet", kind=dict),
    Private("_protocol", kind=int),
    Private("_manual_ack", kind=bool),
    Private("_out_message_mutex"),
    Private("_out_messages", kind=dict),
    Private("_last_bytes_received", kind=(int, float)),
    Private("_sock_send", ("buf",)),
    Private("_sock_recv", ("bufsize",)),
    Private("_handle_pubackcomp", ("cmd",)),
    Private("_handle_publish", ()),
    Private("_send_puback", ("mid",)),
    Private("_do_on_publish", ("mid", "reason_code", "properties")),
    Private("_packet_read", ()),
    Private("_loop_rc_handle", ("rc",)),
    Private("_packet_handle", ()),
)
"""What ``FastClient`` reads, calls or replaces of ``paho.mqtt.client.Client``."""

IN_PACKET_KEYS = ("command", "packet", "remaining_length", "pos")
"""The keys of paho's ``_in_packet`` that ``FastClient`` reads and sets."""

WIRED = {
    "on_message": "_on_message",
    "on_publish": "_on_publish",
    "on_socket_open": "_on_socket_open",
    "on_socket_close": "_on_socket_close",
    "on_socket_register_write": "_on_socket_register_write",
    "on_socket_unregister_write": "_on_socket_unregister_write",
}
"""paho callback -> the aiomqtt method it must be set to, so an override takes effect."""


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None if it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def version_problems(pinned: dict[str, str] = PINNED) -> list[str]:
    """One line per distribution whose installed version is not the pinned one."""
    found = {name: installed_version(name) for name in pinned}
    out = []
    for name, want in pinned.items():
        have = found[name]
        if have != want:
            out.append(
                f"{name} {have + ' installed' if have else 'not installed'}, {want} expected"
            )
    return out


def _member_problems(owner: str, cls: type, instance: Any, names: tuple[Private, ...]) -> list[str]:
    out = []
    for private in names:
        where = f"{owner}.{private.name}"
        if private.is_method:
            member = inspect.getattr_static(cls, private.name, None)
            if not inspect.isfunction(member):
                out.append(f"{where} is not a method ({type(member).__name__} found)")
                continue
            params = tuple(inspect.signature(member).parameters)[1:]
            if params != private.params:
                out.append(f"{where} takes {params}, expected {private.params}")
        elif not hasattr(instance, private.name):
            out.append(f"{where} is missing (an instance attribute)")
        elif private.kind is not None and not isinstance(
            getattr(instance, private.name), private.kind
        ):
            found = type(getattr(instance, private.name)).__name__
            out.append(f"{where} is a {found}, expected {private.kind}")
    return out


def name_problems(
    aiomqtt_client: type[aiomqtt.Client] = aiomqtt.Client,
    paho_client: type[paho.Client] = paho.Client,
) -> list[str]:
    """One line per private name ``FastClient`` needs that `aiomqtt_client` or
    `paho_client` lacks or has of another kind, and per paho callback aiomqtt does not
    wire to the method it overrides. Builds a throwaway client of each (no socket), so
    it must run inside the event loop."""
    probe = aiomqtt_client("localhost")
    out = _member_problems("aiomqtt.Client", aiomqtt_client, probe, AIOMQTT_NAMES)
    inner = getattr(probe, "_client", None)
    for callback, method in WIRED.items():
        if inner is not None and getattr(inner, callback, None) != getattr(probe, method, None):
            out.append(f"aiomqtt.Client does not set paho's {callback} to {method}")
    paho_probe = paho_client(paho.CallbackAPIVersion.VERSION2)
    out += _member_problems("paho.Client", paho_client, paho_probe, PAHO_NAMES)
    packet = getattr(paho_probe, "_in_packet", None)
    if isinstance(packet, dict):
        missing = [key for key in IN_PACKET_KEYS if key not in packet]
        if missing:
            out.append(f"paho.Client._in_packet lacks {missing}")
    return out


def problems() -> list[str]:
    """Everything that keeps ``FastClient`` from running here (empty: it may run):
    versions first, then names. Must run inside the event loop (``name_problems``)."""
    found = version_problems()
    try:
        found += name_problems()
    except Exception as exc:  # a probe that cannot even be built is a finding too
        found.append(f"the probe client failed: {type(exc).__name__}: {exc}")
    return found
