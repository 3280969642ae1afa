"""What a robot agent sees of its VDA 5050 AGV: the observation the driver publishes.

The robot scores leaves by the distance from its "arm" to the leaf's object (seed 000
eq. 1), so the AGV's position is reported as ``arm``/``base`` and each load (at its
station, or held) and station as an object; none while the AGV is not ONLINE, so the
robot then claims nothing. Built from the driver's last AGV state alone: pure, so the
same state always reads the same.
"""

from __future__ import annotations

import time
from typing import Any

from teamtree.drivers.vda5050.site import Site
from teamtree.drivers.vda5050.state import error_text

MAX_SHOWN_ERRORS = 5
"""The AGV's current errors an observation carries (the first ones it lists)."""


def error_texts(errors: Any) -> list[str]:
    """The first ``MAX_SHOWN_ERRORS`` of a state's ``errors`` in the AGV's words; an
    entry (or a list) that is not what VDA 5050 says is skipped, never raised on."""
    if not isinstance(errors, list):
        return []
    texts = (error_text(e) for e in errors if isinstance(e, dict))
    return [t[:200] for t in texts][:MAX_SHOWN_ERRORS]


def agv_observation(
    agent: str,
    site: Site,
    agv_state: dict[str, Any] | None,
    connection: str | None,
    busy: str | None,
) -> dict[str, Any]:
    """Robot `agent`'s observation of its AGV from the AGV's last state, its
    `connection` state and the running command's id (`busy`)."""
    state = agv_state or {}
    position = state.get("agvPosition") if isinstance(state.get("agvPosition"), dict) else {}
    x, y = float(position.get("x", 0.0)), float(position.get("y", 0.0))
    online = connection == "ONLINE" and bool(state)
    objects: dict[str, Any] = {}
    if online:
        for name, station in site.stations.items():
            objects[name] = {
                "shape": "box",
                "dims": [0.5, 0.5, 0.05],
                "position": [station.x, station.y, 0.0],
            }
        for name, load in site.loads.items():
            where = site.where.get(name, load.station)
            held = where == "@agv"
            at = (x, y) if held else (site.stations[where].x, site.stations[where].y)
            objects[name] = {
                "shape": "box",
                "dims": list(load.dims),
                "position": [at[0], at[1], 0.0],
                "held_by": agent if held else None,
                "at_goal": load.goal is not None and where == load.goal,
            }
    return {
        "t": time.time(),
        "robot": {
            "name": agent,
            "arm": [x, y, 0.0],
            "base": [x, y, 0.0],
            "yaw": float(position.get("theta", 0.0)),
            # the running command's id, as the sim driver says it: robots compare it
            # with what they sent (a behaviour that ended unheard, body_watch.py)
            "busy": busy,
            "paused": bool(state.get("paused")),
            "connection": connection,
            "battery": (state.get("batteryState") or {}).get("batteryCharge"),
            "operating_mode": state.get("operatingMode"),
            "safety": state.get("safetyState"),
            # the AGV's own words for what is wrong now (errorType: description)
            "errors": error_texts(state.get("errors")),
        },
        "objects": objects,
    }
