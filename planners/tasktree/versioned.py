"""A set and a dict that count their changes, so a cache can key on a number.

``TaskController.activations()`` is asked on nearly every event and must know whether
done, working or the potentials changed since the last spreading pass; comparing
frozensets of a 500-leaf tree on every call cost more than most events. Every
mutating method bumps ``version``; the containers are otherwise the builtins.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VersionedDict", "VersionedSet"]


def _bumping(base: type, name: str) -> Any:
    inner = getattr(base, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.version += 1
        return inner(self, *args, **kwargs)

    method.__name__ = name
    return method


class VersionedSet(set):  # type: ignore[type-arg]
    """A ``set`` whose ``version`` goes up on every change (or attempted change)."""

    version = 0

    for _name in (
        "add", "discard", "remove", "pop", "clear", "update", "difference_update",
        "intersection_update", "symmetric_difference_update", "__ior__", "__iand__",
        "__isub__", "__ixor__",
    ):  # fmt: skip
        locals()[_name] = _bumping(set, _name)
    del _name


class VersionedDict(dict):  # type: ignore[type-arg]
    """A ``dict`` whose ``version`` goes up on every change (or attempted change)."""

    version = 0

    for _name in (
        "__setitem__", "__delitem__", "pop", "popitem", "clear", "update", "setdefault",
        "__ior__",
    ):  # fmt: skip
        locals()[_name] = _bumping(dict, _name)
    del _name
