"""What the world remembers of each command, and the reply maps it answers with."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

BEHAVIOURS = ("place",)
"""Behaviour names ``execute`` accepts (case-insensitive)."""


class CommandStatus(enum.StrEnum):
    """Where one command (by ``command_id``) is."""

    RUNNING = "running"  #: accepted and moving
    PAUSED = "paused"  #: accepted, frozen until resumed
    FINISHED = "finished"  #: done; the object is at its goal
    FAILED = "failed"  #: rejected or failed on the way; ``reason`` says why
    CANCELLED = "cancelled"  #: cancelled before finishing (or before it arrived)


class Stage(enum.StrEnum):
    """The stages of PLACE, in order (a hand's reach and place use them too)."""

    APPROACH = "approach"
    GRASP = "grasp"
    CARRY = "carry"
    RELEASE = "release"


@dataclass(slots=True)
class CommandRecord:
    """A robot command as the world remembers it, so repeats are idempotent."""

    robot: str
    command_id: str
    node: str | None
    accepted: bool
    status: CommandStatus
    reason: str | None = None
    early_cancel: bool = False  #: cancelled before its execute arrived (not yet answered)

    def reply(self, ok: bool | None = None) -> dict[str, Any]:
        """The reply map for this command (``ok`` defaults to whether it was accepted)."""
        return {
            "ok": self.accepted if ok is None else ok,
            "reason": self.reason,
            "status": self.status.value,
            "command_id": self.command_id,
        }


def reply(ok: bool, reason: str | None) -> dict[str, Any]:
    """The smallest reply map: ``{"ok": ok, "reason": reason}``."""
    return {"ok": ok, "reason": reason}
