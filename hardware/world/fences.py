"""Fencing at the body by the world's own counter: every command the world starts on
an object is granted the next number of that object's counter, and a renewal of a
command whose grant is no longer the object's newest is refused ``fenced``, so a
deposed holder cannot keep a body on an object another command has been given.

The grant is the world's, not a sender's clock reading: a robot whose clock runs an
hour ahead cannot hand out numbers that outrank every later command (its stamps
used to, and every later execute on the object was refused). The holder presents
its grant by the command id it renews; the grant also travels in the execute's
reply and the ``started`` event (``fence``) for the record."""

from __future__ import annotations


class Fences:
    """The newest grant per object."""

    def __init__(self) -> None:
        self._newest: dict[str, int] = {}

    def grant(self, obj: str) -> int:
        """A new command on `obj`: its grant, above every earlier one on `obj`."""
        number = self._newest.get(obj, 0) + 1
        self._newest[obj] = number
        return number

    def current(self, obj: str, grant: int | None) -> bool:
        """True when `grant` is `obj`'s newest (None: a command granted nothing)."""
        return grant is None or self._newest.get(obj, 0) == grant

    def newest(self, obj: str) -> int:
        """`obj`'s newest grant (0: none yet)."""
        return self._newest.get(obj, 0)
