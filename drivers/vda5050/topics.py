"""VDA 5050 topics and message headers for one AGV.

Topics are ``<interfaceName>/v<major>/<manufacturer>/<serialNumber>/<subtopic>`` (VDA
5050 v2 §6.5: the major version is written ``v2``). Every message carries a header:
``headerId`` counted per topic, an ISO 8601 UTC ``timestamp`` with milliseconds,
``version``, ``manufacturer`` and ``serialNumber``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

VERSIONS = ("2.0.0", "2.1.0")
"""The protocol versions the driver speaks."""

SUBTOPICS = ("order", "instantActions", "state", "visualization", "connection", "factsheet")
"""The standard subtopics; the first two go to the AGV, the others come from it."""

CONNECTION_STATES = ("ONLINE", "OFFLINE", "CONNECTIONBROKEN")


def iso_timestamp(at: _dt.datetime | None = None) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z``, e.g. ``2026-11-26T08:40:00.123Z``."""
    at = at or _dt.datetime.now(_dt.UTC)
    return at.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class AgvAddress:
    """Where one AGV's messages live on its broker."""

    manufacturer: str
    serial_number: str
    interface_name: str = "uagv"
    version: str = "2.0.0"

    def __post_init__(self) -> None:
        for name in ("manufacturer", "serial_number", "interface_name"):
            value = getattr(self, name)
            if not value or any(c in value for c in "/#+"):
                raise ValueError(f"{name} {value!r} must be non-empty, without '/', '#' or '+'")
        if self.version not in VERSIONS:
            raise ValueError(f"version {self.version!r} is not one of {', '.join(VERSIONS)}")

    @property
    def major(self) -> str:
        """The topic's version level, e.g. ``v2``."""
        return "v" + self.version.split(".", 1)[0]

    def topic(self, subtopic: str) -> str:
        """The MQTT topic of `subtopic` for this AGV."""
        if subtopic not in SUBTOPICS:
            raise ValueError(f"unknown VDA 5050 subtopic {subtopic!r}")
        parts = (self.interface_name, self.major, self.manufacturer, self.serial_number, subtopic)
        return "/".join(parts)

    def subtopic(self, topic: str) -> str | None:
        """The subtopic of `topic` if it is one of this AGV's, else None."""
        prefix = self.topic("state").rsplit("/", 1)[0] + "/"
        if not topic.startswith(prefix):
            return None
        rest = topic[len(prefix) :]
        return rest if rest in SUBTOPICS else None


@dataclass
class Headers:
    """Stamps outgoing messages with the header fields; header ids count per topic."""

    address: AgvAddress
    _ids: dict[str, int] = field(default_factory=dict)

    def stamp(self, subtopic: str, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with a header for `subtopic` (next headerId, now as timestamp)."""
        header_id = self._ids.get(subtopic, -1) + 1
        self._ids[subtopic] = header_id
        return {
            "headerId": header_id,
            "timestamp": iso_timestamp(),
            "version": self.address.version,
            "manufacturer": self.address.manufacturer,
            "serialNumber": self.address.serial_number,
            **body,
        }
