"""Fencing tokens: the world refuses a command or renewal older than the newest one
used on the same object, so a deposed holder cannot move it again."""

from __future__ import annotations

from typing import Any


class Fences:
    """The highest fencing token accepted per object."""

    def __init__(self) -> None:
        self._newest: dict[str, Any] = {}

    def ok(self, obj: str, token: Any) -> bool:
        """True when `token` is not older than the newest one used on `obj`."""
        if token is None or obj not in self._newest:
            return True
        try:
            return not token < self._newest[obj]
        except TypeError:  # tokens of another shape: compare as text
            return not str(token) < str(self._newest[obj])

    def record(self, obj: str, token: Any) -> None:
        """`token` is now the newest on `obj` (the caller checked ``ok``)."""
        self._newest[obj] = token
