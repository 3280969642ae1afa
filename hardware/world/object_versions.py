"""Which object views changed since a version: observations that carry only those.

Every driver polls the world many times a second, and at 500 objects sending and
decoding every object's view on every poll would be most of a big team's CPU.
The world numbers the changes of object views with one counter shared by all
observers (the views are the same for every robot): an ``observe`` with
``objects_since`` = V returns only the objects whose view changed after V, and the
version now, which the caller sends next time.

A view counts as changed when it is a different view: the world's cached view of an
object nobody holds is replaced exactly when its pose, shape or goal changes
(``Views.object_view``), so an unchanged one is recognised by identity; a held object's
view is made afresh on each call and compared by value. A version the world never gave
out (higher than its own: a client of an earlier world on the same address) gets every
object, as a first observation does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ObjectVersions"]


class ObjectVersions:
    """The version at which each object's view last changed, and the counter."""

    def __init__(self) -> None:
        self.version = 0
        self._last: dict[str, tuple[dict[str, Any], int]] = {}

    def changed_since(
        self, since: int, names: Iterable[str], view: Callable[[str], dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        """The views (from `view`) of the objects in `names` changed after `since`;
        every one when `since` is above ``version``. Call ``version`` after it."""
        out: dict[str, dict[str, Any]] = {}
        everything = since > self.version
        last = self._last
        for name in names:
            current = view(name)
            seen = last.get(name)
            if seen is None or (seen[0] is not current and seen[0] != current):
                self.version += 1
                last[name] = (current, self.version)
                out[name] = current
            elif everything or seen[1] > since:
                out[name] = current
        return out
