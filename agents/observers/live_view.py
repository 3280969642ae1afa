"""What the live Foxglove view shows beside the raw messages, as plain JSON: the world
as a 3D scene, the task tree and mission state, and the team's log lines.

Pure functions of what the team said (no server here, see ``foxglove_server``), in
Foxglove's well-known JSON shapes where one exists, so its panels draw them:

- ``/scene``: a ``foxglove.SceneUpdate`` from each ``world.state``: every robot (its
  base a grey box, its gripper a blue ball, its name), object (a box or cylinder of its
  dims, green once at its goal, orange while held), goal (a flat translucent square)
  and person's hand (a pink ball);
- ``/tree``: the mission and its leaves, each open, working (by whom) or done (by
  whom), from the monitor's state (``MonitorState``);
- ``/team``: the monitor's whole view (``MonitorState.snapshot``);
- ``/log``: ``foxglove.Log`` lines for what a person follows: presence, a leaf started,
  finished or given back, a lost claim, a failed behaviour, a mission's state.
"""

from __future__ import annotations

import math
from typing import Any

from teamtree.agents.observers.monitor import MonitorState
from teamtree.agents.observers.record_channels import LOG_SCHEMA, SCHEMA_DIALECT
from teamtree.agents.runtime.observation_wire import (
    ObjectView,
    ObservationWireError,
    decode_world_state,
)
from teamtree.broker.envelope import Envelope

__all__ = [
    "SCENE_SCHEMA",
    "SCENE_SCHEMA_NAME",
    "TREE_SCHEMA",
    "TREE_SCHEMA_NAME",
    "log_line",
    "scene_update",
    "tree_message",
]

FRAME = "world"
"""The frame every scene entity is in: the simulated world's."""
SCENE_SCHEMA_NAME = "foxglove.SceneUpdate"
TREE_SCHEMA_NAME = "teamtree.tree"

_NUMBER = {"type": "number"}
_VEC3 = {
    "type": "object",
    "properties": {"x": _NUMBER, "y": _NUMBER, "z": _NUMBER},
    "required": ["x", "y", "z"],
}
_POSE = {
    "type": "object",
    "properties": {
        "position": _VEC3,
        "orientation": {
            "type": "object",
            "properties": {"x": _NUMBER, "y": _NUMBER, "z": _NUMBER, "w": _NUMBER},
            "required": ["x", "y", "z", "w"],
        },
    },
    "required": ["position", "orientation"],
}
_COLOR = {
    "type": "object",
    "properties": {"r": _NUMBER, "g": _NUMBER, "b": _NUMBER, "a": _NUMBER},
    "required": ["r", "g", "b", "a"],
}
_SHAPE = {
    "type": "object",
    "properties": {"pose": _POSE, "size": _VEC3, "color": _COLOR},
    "required": ["pose", "size", "color"],
}
_TEXT = {
    "type": "object",
    "properties": {
        "pose": _POSE,
        "billboard": {"type": "boolean"},
        "font_size": _NUMBER,
        "scale_invariant": {"type": "boolean"},
        "color": _COLOR,
        "text": {"type": "string"},
    },
    "required": ["pose", "text"],
}
SCENE_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA_DIALECT,
    "title": SCENE_SCHEMA_NAME,
    "description": "the world as Foxglove's 3D panel draws it (the part of "
    "foxglove.SceneUpdate teamtree fills)",
    "type": "object",
    "properties": {
        "deletions": {"type": "array"},
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "timestamp": LOG_SCHEMA["properties"]["timestamp"],
                    "frame_id": {"type": "string"},
                    "id": {"type": "string"},
                    "frame_locked": {"type": "boolean"},
                    "metadata": {"type": "array"},
                    "cubes": {"type": "array", "items": _SHAPE},
                    "spheres": {"type": "array", "items": _SHAPE},
                    "cylinders": {"type": "array", "items": _SHAPE},
                    "texts": {"type": "array", "items": _TEXT},
                },
                "required": ["timestamp", "frame_id", "id"],
            },
        },
    },
    "required": ["deletions", "entities"],
}
TREE_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA_DIALECT,
    "title": TREE_SCHEMA_NAME,
    "description": "the mission's task tree: each leaf open, working or done, and by whom",
    "type": "object",
    "properties": {
        "mission": {"type": ["string", "null"]},
        "text": {"type": ["string", "null"]},
        "state": {"type": ["string", "null"]},
        "headline": {"type": ["string", "null"]},
        "done": {"type": "integer", "minimum": 0},
        "total": {"type": "integer", "minimum": 0},
        "leaves": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "label": {"type": "string"},
                    "state": {"enum": ["open", "working", "done"]},
                    "agent": {"type": ["string", "null"]},
                },
                "required": ["id", "label", "state", "agent"],
            },
        },
    },
    "required": ["mission", "state", "done", "total", "leaves"],
}


def _stamp(ms: int) -> dict[str, int]:
    return {"sec": ms // 1000, "nsec": (ms % 1000) * 1_000_000}


def _color(r: float, g: float, b: float, a: float = 1.0) -> dict[str, float]:
    return {"r": r, "g": g, "b": b, "a": a}


def _pose(x: float, y: float, z: float, yaw: float = 0.0) -> dict[str, Any]:
    return {
        "position": {"x": x, "y": y, "z": z},
        "orientation": {"x": 0.0, "y": 0.0, "z": math.sin(yaw / 2), "w": math.cos(yaw / 2)},
    }


def _label(text: str, x: float, y: float, z: float) -> dict[str, Any]:
    return {
        "pose": _pose(x, y, z),
        "billboard": True,
        "font_size": 14.0,
        "scale_invariant": True,
        "color": _color(1.0, 1.0, 1.0),
        "text": text,
    }


def _shape(x: float, y: float, z: float, size: tuple[float, float, float], color: Any, yaw=0.0):
    return {
        "pose": _pose(x, y, z, yaw),
        "size": {"x": size[0], "y": size[1], "z": size[2]},
        "color": color,
    }


def _object_size(view: ObjectView) -> tuple[float, float, float]:
    """A primitive's bounding box from its ``dims`` (a box's three sides; a cylinder's
    radius and height; a sphere's radius)."""
    dims = [abs(float(d)) for d in view.dims] or [0.05]
    if view.shape == "box" and len(dims) >= 3:
        return dims[0], dims[1], dims[2]
    if len(dims) >= 2:
        return 2 * dims[0], 2 * dims[0], dims[1]
    return 2 * dims[0], 2 * dims[0], 2 * dims[0]


def scene_update(body: Any, ts: int) -> dict[str, Any] | None:
    """A ``world.state`` body, sent at `ts` (UTC ms), as a ``foxglove.SceneUpdate``;
    None when the body is not a world state (the view skips it)."""
    try:
        world = decode_world_state(body)
    except ObservationWireError:
        return None
    stamp = _stamp(ts)
    entities = []

    def entity(ident: str, **shapes: list[dict[str, Any]]) -> None:
        entities.append(
            {"timestamp": stamp, "frame_id": FRAME, "id": ident, "frame_locked": False,
             "metadata": [], **shapes}
        )  # fmt: skip

    for name, robot in sorted(world.robots.items()):
        base = robot.base or robot.arm
        grey, blue = _color(0.5, 0.5, 0.55), _color(0.2, 0.45, 0.9)
        named = name + (f": {robot.node}" if robot.node else "")
        entity(
            f"robot/{name}",
            cubes=[_shape(base[0], base[1], 0.4, (0.6, 0.6, 0.8), grey, robot.yaw)],
            spheres=[_shape(*robot.arm, (0.08, 0.08, 0.08), blue)],
            texts=[_label(named, base[0], base[1], 1.0)],
        )
    for name, obj in sorted(world.objects.items()):
        size = _object_size(obj)
        color = (
            _color(0.42, 0.66, 0.31) if obj.at_goal
            else _color(0.95, 0.55, 0.15) if obj.held_by
            else _color(0.85, 0.85, 0.85)
        )  # fmt: skip
        kind = (
            "cubes" if obj.shape == "box" else "cylinders" if obj.shape == "cylinder" else "spheres"
        )
        entity(
            f"object/{name}",
            **{kind: [_shape(*obj.position, size, color, obj.yaw)]},
            texts=[_label(name, obj.position[0], obj.position[1], obj.position[2] + size[2])],
        )
        if obj.goal is not None:
            goal = (max(size[0], 0.05) * 1.4, max(size[1], 0.05) * 1.4, 0.005)
            entity(f"goal/{name}", cubes=[_shape(*obj.goal, goal, _color(0.42, 0.66, 0.31, 0.35))])
    for name, hand in sorted(world.hands.items()):
        x, y, z = hand.position
        entity(
            f"hand/{name}",
            spheres=[_shape(x, y, z, (0.1, 0.1, 0.1), _color(0.9, 0.45, 0.6))],
            texts=[_label(hand.name or name, x, y, z + 0.15)],
        )
    return {"deletions": [], "entities": entities}


def tree_message(state: MonitorState) -> dict[str, Any]:
    """The mission's leaves and how far each is, as the monitor's `state` knows them."""
    working = {n: a for a, row in state.agents.items() for n in row.working}
    done = state.done_nodes
    status = state.board.view(state.mission_filter) or {}
    leaves = [
        {
            "id": node,
            "label": state.label(node),
            "state": "done" if node in done else "working" if node in working else "open",
            "agent": done.get(node) or working.get(node),
        }
        for node in state.leaves
    ]
    return {
        "mission": status.get("mission") or state.mission_id,
        "text": state.mission.get("text"),
        "state": status.get("state"),
        "headline": status.get("headline"),
        "done": sum(1 for leaf in leaves if leaf["state"] == "done"),
        "total": len(leaves),
        "leaves": leaves,
    }


_LEVELS = {"debug": 1, "info": 2, "warning": 3, "error": 4}


def _log(env: Envelope, level: str, text: str) -> dict[str, Any]:
    return {
        "timestamp": _stamp(env.ts),
        "level": _LEVELS[level],
        "message": text,
        "name": env.sender,
        "file": "",
        "line": 0,
    }


def log_line(env: Envelope, state: MonitorState) -> dict[str, Any] | None:
    """A ``foxglove.Log`` line for what `env` tells a person (None: nothing to tell);
    leaves named by their labels in `state`."""
    body = env.body if isinstance(env.body, dict) else {}
    kind = env.kind
    if kind == "presence":
        presence = str(body.get("state", "?"))
        level = "info" if presence == "ONLINE" else "warning"
        return _log(env, level, f"{env.sender} is {presence} ({body.get('kind', '?')})")
    if kind == "node.transition":
        node = state.label(str(body.get("node"))) or str(body.get("node"))
        words = {"working": "started", "done": "finished", "inactive": "gave back",
                 "skipped": "skipped"}  # fmt: skip
        verb = words.get(str(body.get("status")))
        return None if verb is None else _log(env, "info", f"{env.sender} {verb} {node}")
    if kind == "node.claim_decided" and body.get("won") is False:
        node = state.label(str(body.get("node"))) or str(body.get("node"))
        return _log(env, "info", f"{env.sender} lost {node}: {body.get('reason', '')}")
    if kind == "behaviour.failed":
        return _log(env, "error", f"{env.sender}: behaviour failed: {body.get('reason', '')}")
    if kind == "mission.status":
        with_reason = f": {body['reason']}" if body.get("reason") else ""
        level = "error" if body.get("state") in ("failed", "timed_out") else "info"
        return _log(env, level, f"mission {body.get('state', '?')}{with_reason} ({env.sender})")
    if kind == "mission.result":
        level = "info" if body.get("ok") else "error"
        return _log(env, level, f"mission result: {body.get('summary', '')}")
    return None
