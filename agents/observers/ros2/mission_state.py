"""The team's missions as one JSON document, for a ``std_msgs/String`` (pure).

A ``std_msgs/String`` of JSON rather than a message type of teamtree's own: ROS 2 tools
read it without an interface package to build or install (``ros2 topic echo``,
Foxglove's raw message view, a few lines of rclpy), and its fields can grow without a
new interface version. The document, from ``WebState.snapshot()``:

- ``team`` and ``connected`` (the bridge's link to the broker; false: stale);
- ``current``: the mission shown (the latest running one, else pending, else the
  latest to end) as ``MissionBoard.view``: ``mission``, ``kind``, ``state``
  (pending, running, succeeded, failed, cancelled, timed_out), ``done`` of ``total``
  ``unit``, ``failed``, ``reason``, ``detail``, ``ended``, ``headline``; null when
  no mission is heard of;
- ``missions``: every mission's view, by id;
- ``queue``: the mission queue's table (id, kind, state, submitted, started, ended,
  reason, summary), when the team runs a queue;
- ``tree``: the drawn task tree's mission, leaves done of leaves, and whether its
  root is done.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["mission_state", "mission_state_text"]


def mission_state(snap: dict[str, Any]) -> dict[str, Any]:
    """The document (see the module docstring) of a ``WebState.snapshot()``."""
    tree = snap.get("mission") or {}
    return {
        "team": snap.get("team"),
        "connected": bool(snap.get("connected")),
        "current": snap.get("status"),
        "missions": snap.get("statuses") or {},
        "queue": (snap.get("missions") or {}).get("rows") or [],
        "tree": {
            "mission": tree.get("id"),
            "done": tree.get("done", 0),
            "leaves": tree.get("leaves", 0),
            "complete": bool(tree.get("complete")),
        },
    }


def mission_state_text(snap: dict[str, Any]) -> str:
    """``mission_state`` as JSON text."""
    return json.dumps(mission_state(snap), sort_keys=True, default=str)
