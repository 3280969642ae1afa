"""Which of a person's taps the simulated world accepts now, read from the world's own
``hand_observe`` reply (the hand's and the objects' views), so the person's page
enables exactly those. Mirrors ``hand_reach`` and ``hand_place``: a reach only from a
hand that holds nothing, for an object no other hand or gripper holds; a place only
from a hand holding its object still (not reaching, not already carrying it). Pure."""

from __future__ import annotations

from typing import Any

__all__ = ["HAND_STATES", "hand_state", "may_reach"]

#: what a hand does: free, reaching for an object, holding it still, carrying it
HAND_STATES = ("empty", "reaching", "holding", "placing")


def hand_state(hand: Any) -> tuple[str, str | None]:
    """(one of ``HAND_STATES``, the object) from a ``hand_view`` (``holding``:
    the object held or carried, ``busy``: the running command, ``target``: its object)."""
    hand = hand if isinstance(hand, dict) else {}
    holding, busy = hand.get("holding"), hand.get("busy")
    if busy and holding:
        return "placing", holding
    if busy:
        return "reaching", hand.get("target")
    if holding:
        return "holding", holding
    return "empty", None


def may_reach(objects: Any, obj: str | None, hand: str) -> bool:
    """Whether a free `hand` may reach for `obj` as far as the world's object views
    (`objects`) show: it exists, no other hand or gripper holds it and it is not at
    its goal already (a reach for it would be pointless)."""
    view = objects.get(obj) if isinstance(objects, dict) and obj is not None else None
    if not isinstance(view, dict):
        return False
    return view.get("held_by") in (None, hand) and not view.get("at_goal")
