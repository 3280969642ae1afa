"""The team as markers: what the web page's map shows (``FloorMap.view()`` inside
``WebState.snapshot()``), turned into plain marker descriptions for a
``visualization_msgs/MarkerArray`` (pure: no rclpy, no I/O).

Each marker is a dict with the fields of a ``visualization_msgs/Marker`` by name:
``ns``, ``id``, ``type`` (``CYLINDER``, ``CUBE``, ``SPHERE``, ``ARROW``,
``TEXT_VIEW_FACING``), ``pose`` (``x``, ``y``, ``z``, ``yaw``), ``scale`` (``x``,
``y``, ``z``), ``color`` (``r``, ``g``, ``b``, ``a``) and ``text``. Namespaces, so a
viewer can switch each on and off:

- ``robots``: a cylinder per robot (the simulated world's, a VDA 5050 or ROS 2
  driver's, an LTL robot on its region); orange while busy, grey when its driver says
  it is not connected; ``headings`` an arrow along its yaw;
- ``objects``: each object in its shape and size, at its height; green at its goal,
  yellow while held;
- ``goals``: a flat disc where each object must go;
- ``people``: a sphere at each person's hand;
- ``labels``: the name of each robot (with what it does now), object and person;
- ``mission``: one line over the scene with the current mission's headline.

Ids are the position of the name in sorted order within its namespace, and every
array starts with a ``DELETEALL``, so a marker whose robot or object is gone
disappears and the array always holds the whole scene.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NAMESPACES", "scene_markers"]

NAMESPACES = ("robots", "headings", "objects", "goals", "people", "labels", "mission")

#: robot body: diameter and height (m)
ROBOT_D, ROBOT_H = 0.4, 0.5
#: height of a person's hand when the world gives none (m)
HAND_Z = 0.9
#: height of the mission's line over the scene (m)
MISSION_Z = 2.0

_BLUE = (0.2, 0.4, 0.9, 0.9)
_ORANGE = (1.0, 0.55, 0.1, 0.9)
_GREY = (0.5, 0.5, 0.5, 0.6)
_WHITE = (1.0, 1.0, 1.0, 1.0)
_OBJECT = (0.8, 0.7, 0.55, 1.0)
_AT_GOAL = (0.2, 0.8, 0.3, 1.0)
_HELD = (1.0, 0.85, 0.1, 1.0)
_GOAL = (0.2, 0.8, 0.3, 0.35)
_PERSON = (0.95, 0.45, 0.7, 0.9)


def _marker(
    ns: str,
    index: int,
    kind: str,
    at: tuple[float, float, float],
    scale: tuple[float, float, float],
    color: tuple[float, float, float, float],
    *,
    yaw: float = 0.0,
    text: str = "",
) -> dict[str, Any]:
    return {
        "ns": ns,
        "id": index,
        "type": kind,
        "pose": {"x": at[0], "y": at[1], "z": at[2], "yaw": yaw},
        "scale": dict(zip("xyz", scale, strict=True)),
        "color": dict(zip("rgba", color, strict=True)),
        "text": text,
    }


def _robots(snap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every robot on a floor plan: the table's (world and drivers), else the LTL
    graph's, placed on its region."""
    plan = snap.get("map") or {}
    robots = dict((plan.get("table") or {}).get("robots") or {})
    graph = plan.get("graph") or {}
    nodes = graph.get("nodes") or {}
    for name, at in (graph.get("robots") or {}).items():
        xy = nodes.get(at.get("region"))
        if name not in robots and xy:
            robots[name] = {"x": xy[0], "y": xy[1], "yaw": 0.0, "busy": False}
    return robots


def _doing(snap: dict[str, Any], name: str) -> str:
    """What robot or person `name` does now, in the monitor's words ("" if unknown)."""
    row = (snap.get("agents") or {}).get(name) or {}
    status = row.get("status")
    return status if isinstance(status, str) and status != "idle" else ""


def _object_shape(o: dict[str, Any]) -> tuple[str, tuple[float, float, float]]:
    """The marker type and scale of an object from its shape and dims."""
    size = [s for s in o.get("size") or [] if isinstance(s, int | float) and s > 0]
    shape = o.get("shape")
    if shape == "cylinder":
        r = size[0] if size else 0.04
        h = size[1] if len(size) > 1 else 2 * r
        return "CYLINDER", (2 * r, 2 * r, h)
    if shape == "sphere":
        d = 2 * (size[0] if size else 0.04)
        return "SPHERE", (d, d, d)
    w = size[0] if size else 0.08
    d = size[1] if len(size) > 1 else w
    return "CUBE", (w, d, size[2] if len(size) > 2 else min(w, d))


def scene_markers(snap: dict[str, Any]) -> list[dict[str, Any]]:
    """The markers of a ``WebState.snapshot()`` (see the module docstring), sorted by
    namespace and id; the ``DELETEALL`` that clears the last scene is the node's."""
    table = (snap.get("map") or {}).get("table") or {}
    out: list[dict[str, Any]] = []
    labels: list[tuple[str, tuple[float, float, float]]] = []
    for i, (name, r) in enumerate(sorted(_robots(snap).items())):
        x, y, yaw = float(r["x"]), float(r["y"]), float(r.get("yaw") or 0.0)
        offline = r.get("agv") and r.get("connection") not in (None, "ONLINE")
        color = _GREY if offline else _ORANGE if r.get("busy") else _BLUE
        out.append(_marker("robots", i, "CYLINDER", (x, y, ROBOT_H / 2),
                           (ROBOT_D, ROBOT_D, ROBOT_H), color))  # fmt: skip
        out.append(_marker("headings", i, "ARROW", (x, y, ROBOT_H), (0.4, 0.05, 0.05),
                           _WHITE, yaw=yaw))  # fmt: skip
        doing = _doing(snap, name)
        labels.append((f"{name}: {doing}" if doing else name, (x, y, ROBOT_H + 0.3)))
    objects = sorted((table.get("objects") or {}).items())
    for i, (name, o) in enumerate(objects):
        kind, scale = _object_shape(o)
        z = o.get("z") if isinstance(o.get("z"), int | float) else scale[2] / 2
        color = _AT_GOAL if o.get("at_goal") else _HELD if o.get("held_by") else _OBJECT
        out.append(_marker("objects", i, kind, (o["x"], o["y"], z), scale, color))
        labels.append((name, (o["x"], o["y"], z + scale[2] / 2 + 0.05)))
        goal = o.get("goal")
        if goal:
            disc = max(scale[0], scale[1]) * 1.5
            low = z - scale[2] / 2
            out.append(_marker("goals", i, "CYLINDER", (goal[0], goal[1], low + 0.002),
                               (disc, disc, 0.004), _GOAL, text=name))  # fmt: skip
    for i, (name, p) in enumerate(sorted((table.get("people") or {}).items())):
        out.append(_marker("people", i, "SPHERE", (p["x"], p["y"], HAND_Z), (0.1, 0.1, 0.1),
                           _PERSON))  # fmt: skip
        doing = _doing(snap, name)
        labels.append((f"{name}: {doing}" if doing else name, (p["x"], p["y"], HAND_Z + 0.15)))
    for i, (text, at) in enumerate(labels):
        out.append(_marker("labels", i, "TEXT_VIEW_FACING", at, (0.0, 0.0, 0.08), _WHITE,
                           text=text))  # fmt: skip
    status = snap.get("status")
    if isinstance(status, dict) and status.get("headline"):
        line = f"{status.get('mission')}: {status['headline']}"
        out.append(_marker("mission", 0, "TEXT_VIEW_FACING", (0.0, 0.0, MISSION_Z),
                           (0.0, 0.0, 0.12), _WHITE, text=line))  # fmt: skip
    for m in out:
        m["pose"] = {k: float(v) if k != "yaw" else _finite(v) for k, v in m["pose"].items()}
    return sorted(out, key=lambda m: (NAMESPACES.index(m["ns"]), m["id"]))


def _finite(value: Any) -> float:
    v = float(value)
    return v if math.isfinite(v) else 0.0
