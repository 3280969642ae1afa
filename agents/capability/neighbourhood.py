"""Which factory robots one robot reaches, read from the team's factsheets (position,
range, LED): its neighbours for a request, and every peer as the reach replay sees it.
A factsheet is a peer's own word, so one without a usable position, range or profile
is left out rather than trusted."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from teamtree.agents.runtime.team_view import TeamView
from teamtree.broker import ConfigError
from teamtree.hardware import RobotProfile
from teamtree.planners.capability import Peer


def _valid_position(value: Any) -> bool:
    if not isinstance(value, list | tuple) or len(value) != 2:
        return False
    x, y = value
    return (
        isinstance(x, int | float)
        and isinstance(y, int | float)
        and not isinstance(x, bool)
        and not isinstance(y, bool)
    )


def _idle(sheet: dict[str, Any]) -> bool:
    return sheet.get("led") == "idle" and bool(sheet.get("available", True))


def neighbours(
    view: TeamView,
    kind: str,
    position: Sequence[float],
    comm_range: float,
    *,
    idle_only: bool = False,
) -> list[str]:
    """Online robots of `kind` within `comm_range` of `position` (optionally idle ones),
    sorted by id."""
    out = []
    for member in view.members.values():
        sheet = member.factsheet
        if not member.online or sheet.get("kind") != kind:
            continue
        pos = sheet.get("position")
        if not _valid_position(pos) or math.dist(pos, position) > comm_range:
            continue
        if idle_only and not _idle(sheet):
            continue
        out.append(member.id)
    return sorted(out)


class PeerProfiles:
    """Every online peer as its factsheet describes it. Profiles are decoded once per
    session of each peer: the factsheets are read again on every request."""

    def __init__(self) -> None:
        self._profiles: dict[tuple[str, str], RobotProfile] = {}

    def peers(self, view: TeamView, me: str, kind: str) -> dict[str, Peer]:
        """Every online robot of `kind` but `me`, by id."""
        out: dict[str, Peer] = {}
        for member in view.members.values():
            sheet = member.factsheet
            if member.id == me or not member.online or sheet.get("kind") != kind:
                continue
            pos, rng = sheet.get("position"), sheet.get("comm_range")
            if not _valid_position(pos) or not isinstance(rng, int | float):
                continue
            key = (member.id, str(sheet.get("session")))
            profile = self._profiles.get(key)
            if profile is None:
                try:
                    profile = RobotProfile.from_dict(sheet.get("profile"))
                except (ConfigError, TypeError, KeyError, AttributeError, ValueError):
                    continue
                self._profiles[key] = profile
            out[member.id] = Peer(profile, (float(pos[0]), float(pos[1])), float(rng), _idle(sheet))
        return out
