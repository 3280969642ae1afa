"""Keep every object's view from observations that carry only the changed ones.

The sim driver asks the world with ``objects_since`` (the ``objects_version`` of its
last reply) and gets back only the objects whose view changed after it: at 500 objects
most polls carry none or a few, instead of every object encoded by the world and
decoded by the driver. A reply without ``objects_version`` (a world that
does not know the field) carries every object and replaces the lot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["merge_changed"]


def merge_changed(
    objects: dict[str, Any], version: int, reply: Mapping[str, Any]
) -> tuple[dict[str, Any], int]:
    """(every object's latest view, the version to ask from next) after `reply`.

    `objects` is never changed: a reply with changes gives a new dict (the last one may
    still be held by a published observation), one without gives `objects` back, so an
    unchanged view stays the same object and is recognised by identity downstream."""
    changed = reply["objects"]
    new_version = reply.get("objects_version")
    if new_version is None:
        return dict(changed), 0
    if not changed:
        return objects, int(new_version)
    return {**objects, **changed}, int(new_version)
