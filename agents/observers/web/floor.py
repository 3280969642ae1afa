"""The team page's map, from what the team publishes (pure: no I/O, no clock reads).

Three floor plans, each drawn when its messages are heard:

- ``table``: the simulated world's retained ``world.state`` (tea party, multitask):
  every robot's base, heading, gripper and what it holds; every person's hand and
  what it holds; every object with its goal and whether it is there. A VDA 5050 or
  ROS 2 driver's ``observation`` adds its robot (reported position, heading, battery
  and connection) and the stations and loads or objects it reports to the same plan.
- ``graph``: an LTL team's topological map (the hospital of seed 003: the only map
  the LTL planner plans on), its corridors reported blocked (``ltl.map``) and each
  robot on the region and operating mode its last step (``ltl.step``, ``ltl.done``)
  or its factsheet's start put it in.
- ``kit``: the kitting table of seed 001 (workspaces × spots, the cobot's factsheet
  ``pattern``), each spot as the published actions left it (empty, on the person's
  or the robot's tray, placed, placed wrong) and what the cobot and the person do.

``notes`` say what the map does not show (e.g. AGV errors: a VDA 5050 driver's
observation does not carry them; its failed behaviours name them under Alerts).
"""

from __future__ import annotations

import math
from typing import Any

from teamtree.planners.ltl import HOSPITAL_MAP

__all__ = ["FloorMap"]

#: notes kept (oldest dropped)
MAX_NOTES = 6
#: driver kinds whose observations put a real robot (and its stations, objects) on the plan
ROBOT_DRIVERS = ("vda5050_driver", "ros2_driver")
#: AGVs and objects from VDA 5050 observations kept on the plan
MAX_AGVS = 50
AGV_NOTE = (
    "AGV errors are not shown: this VDA 5050 driver's observation does not carry them "
    "(a failed order's error is under Alerts)"
)


def _xy(value: Any) -> list[float] | None:
    """``[x, y]`` of a position list, or None when it is not one."""
    if isinstance(value, list | tuple) and len(value) >= 2:
        x, y = value[0], value[1]
        fx, fy = _num(x), _num(y)
        if fx is not None and fy is not None:
            return [fx, fy]
    return None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), 4)


def _str(value: Any) -> str | None:
    return value[:80] if isinstance(value, str) and value else None


class FloorMap:
    """Feed every message of the team (``feed``); ``view()`` is the page's map."""

    def __init__(self) -> None:
        self.table: dict[str, Any] | None = None  # from world.state
        self.agvs: dict[str, dict[str, Any]] = {}  # driver -> its AGV's report
        self.site: dict[str, dict[str, Any]] = {}  # stations and loads the AGVs report
        self.graph_robots: dict[str, dict[str, Any]] = {}  # LTL robot -> region, mode
        self.blocked: set[tuple[str, str]] = set()
        self.graph_seen = False
        self.kit: dict[str, Any] | None = None
        self.cobots: dict[str, dict[str, Any]] = {}  # cobot -> pattern, spots (factsheet)
        self.notes: list[str] = []

    # -- feeding -------------------------------------------------------------------

    def feed(self, kind: str, sender: str, body: Any, sender_kind: str | None) -> None:
        """One message; `sender_kind` is the sender's factsheet kind (None: unknown).
        Never raises on a bad body: what cannot be read is not drawn."""
        if not isinstance(body, dict):
            return
        if kind == "world.state":
            self._world(body)
        elif kind == "observation" and sender_kind in ROBOT_DRIVERS:
            self._agv(sender, body)
        elif kind == "factsheet":
            self._factsheet(sender, body)
        elif kind in ("ltl.step", "ltl.done"):
            self._ltl_at(sender, body.get("state"))
        elif kind == "ltl.map" and isinstance(body.get("blocked"), list):
            self.blocked = {
                (min(a, b), max(a, b))
                for e in body["blocked"][:500]
                if isinstance(e, list | tuple) and len(e) == 2
                for a, b in [(str(e[0]), str(e[1]))]
            }
        elif kind.startswith("kitting."):
            self._kitting(kind, sender, body)

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes = [*self.notes, text][-MAX_NOTES:]

    def _world(self, body: dict[str, Any]) -> None:
        robots, objects, people = {}, {}, {}
        for name, r in _items(body.get("robots")):
            base = _xy(r.get("base")) or _xy(r.get("arm"))
            if base is None:
                continue
            robots[name] = {
                "x": base[0],
                "y": base[1],
                "yaw": _num(r.get("yaw")) or 0.0,
                "arm": _xy(r.get("arm")),
                "holding": _str(r.get("holding")),
                "busy": bool(r.get("busy")),
                "profile": _str(r.get("profile")),
            }
        for name, o in _items(body.get("objects")):
            at = _xy(o.get("position"))
            if at is None:
                continue
            objects[name] = _object(o, at)
        for name, h in _items(body.get("hands")):
            at = _xy(h.get("position"))
            if at is not None:
                people[name] = {"x": at[0], "y": at[1], "holding": _str(h.get("holding"))}
        self.table = {"t": _num(body.get("t")), "robots": robots, "objects": objects,
                      "people": people}  # fmt: skip

    def _agv(self, driver: str, body: dict[str, Any]) -> None:
        robot = body.get("robot") if isinstance(body.get("robot"), dict) else {}
        at = _xy(robot.get("base")) or _xy(robot.get("arm"))
        if at is None:
            return
        name = _str(robot.get("name")) or driver
        if name not in self.agvs and len(self.agvs) >= MAX_AGVS:
            return
        battery = _num(robot.get("battery"))
        self.agvs[name] = {
            "x": at[0],
            "y": at[1],
            "yaw": _num(robot.get("yaw")) or 0.0,
            "battery": battery,
            "connection": _str(robot.get("connection")),
            "busy": bool(robot.get("busy")),
            "errors": [str(e)[:160] for e in _list(robot.get("errors"))[:5]],
            "driver": driver,
            "holding": next(
                (n for n, o in _items(body.get("objects")) if o.get("held_by") == name), None
            ),
        }
        for obj, o in _items(body.get("objects")):
            where = _xy(o.get("position"))
            if where is not None and (obj in self.site or len(self.site) < MAX_AGVS * 4):
                self.site[obj] = _object(o, where)
        if "errors" not in robot:
            self._note(AGV_NOTE)

    def _factsheet(self, sender: str, body: dict[str, Any]) -> None:
        kind = body.get("kind")
        if kind in ("ltl_planner", "ltl_robot"):
            self.graph_seen = True
        if kind == "ltl_robot" and sender not in self.graph_robots:
            self._ltl_at(sender, body.get("start"))
        if kind == "cobot" and isinstance(body.get("pattern"), list):
            spots = body.get("spots")
            self.cobots[sender] = {
                "pattern": [str(c)[:20] for c in body["pattern"][:200]],
                "spots": spots if isinstance(spots, int) and 0 < spots <= 50 else 5,
                "human": _str(body.get("human")),
            }
            if self.kit is not None and self.kit["cobot"] == sender:
                self.kit.update(self.cobots[sender])

    def _ltl_at(self, robot: str, state: Any) -> None:
        if not (isinstance(state, list | tuple) and len(state) == 2):
            return
        region, mode = str(state[0]), str(state[1])
        if region in HOSPITAL_MAP.regions:
            self.graph_seen = True
            self.graph_robots[robot] = {"region": region, "mode": mode[:40]}

    def _kitting(self, kind: str, sender: str, body: dict[str, Any]) -> None:
        if kind == "kitting.start":
            n = body.get("n")
            n = n if isinstance(n, int) and 0 < n <= 200 else 20
            sheet = self.cobots.get(sender, {})
            self.kit = {"cobot": sender, "human": _str(body.get("human")), "n": n,
                        "pattern": sheet.get("pattern", []), "spots": sheet.get("spots", 5),
                        "state": ["empty"] * n, "colour": [None] * n,
                        "robot_doing": None, "human_doing": None, "done": False}  # fmt: skip
            return
        kit = self.kit
        if kit is None:
            return
        task = body.get("task")
        if kind == "kitting.done" and sender == kit["cobot"]:
            kit["done"], kit["robot_doing"], kit["human_doing"] = True, None, None
            return
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < kit["n"]:
            return
        action, phase = body.get("action"), body.get("phase")
        if isinstance(body.get("colour"), str):
            kit["colour"][task] = body["colour"][:20]
        who = "robot_doing" if sender == kit["cobot"] else "human_doing"
        if kind not in ("kitting.robot_action", "kitting.human_action"):
            return
        if who == "human_doing" and sender != kit["human"]:
            return
        if phase == "start":
            kit[who] = {"task": task, "action": str(action)[:4]}
            return
        kit[who] = None
        if phase != "end":
            return
        kit["state"][task] = _spot_after(kind, str(action), self._right_colour(kit, task))

    @staticmethod
    def _right_colour(kit: dict[str, Any], task: int) -> bool:
        pattern = kit["pattern"]
        colour = kit["colour"][task]
        return not (task < len(pattern) and colour is not None and pattern[task] != colour)

    # -- reading -------------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """The map as JSON-ready data: the plans heard of (``table``, ``graph``,
        ``kit``; absent when not heard of) and ``notes``."""
        out: dict[str, Any] = {"notes": list(self.notes)}
        if self.table is not None or self.agvs:
            table = self.table or {"t": None, "robots": {}, "objects": {}, "people": {}}
            agvs = {n: {**a, "agv": True} for n, a in self.agvs.items()}
            out["table"] = {
                **table,
                "robots": {**table["robots"], **agvs},
                "objects": {**table["objects"], **self.site},
            }
        if self.graph_seen:
            edges = sorted({(min(e.source, e.target), max(e.source, e.target))
                            for e in HOSPITAL_MAP.edges})  # fmt: skip
            out["graph"] = {
                "nodes": {n: list(xy) for n, xy in HOSPITAL_MAP.regions.items()},
                "edges": [[a, b, (a, b) in self.blocked] for a, b in edges],
                "robots": dict(self.graph_robots),
            }
        if self.kit is not None:
            out["kit"] = {**self.kit, "state": list(self.kit["state"]),
                          "colour": list(self.kit["colour"])}  # fmt: skip
        return out


def _items(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """The (name, map) pairs of a map of maps (others skipped), at most 500."""
    if not isinstance(value, dict):
        return []
    return [(str(k)[:80], v) for k, v in list(value.items())[:500] if isinstance(v, dict)]


def _list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def _object(o: dict[str, Any], at: list[float]) -> dict[str, Any]:
    dims = o.get("dims") if isinstance(o.get("dims"), list | tuple) else []
    sizes = [d for d in (_num(d) for d in dims[:3]) if d is not None]
    position = o.get("position") if isinstance(o.get("position"), list | tuple) else []
    return {
        "x": at[0],
        "y": at[1],
        "z": _num(position[2]) if len(position) > 2 else None,  # a 3-D view's height
        "shape": _str(o.get("shape")) or "box",
        "size": sizes,  # the first two draw the plan; a box's third is its height
        "goal": _xy(o.get("goal")),
        "at_goal": o.get("at_goal") is True,
        "held_by": _str(o.get("held_by")),
    }


def _spot_after(kind: str, action: str, right: bool) -> str:
    """A kit spot's state after an action ended (seed 001 Fig. 6): R2 puts the block on
    the person's tray, H2 on the robot's, R3 clears the spot, the rest fill it."""
    if kind == "kitting.robot_action":
        return {"R2": "human_tray", "R3": "empty"}.get(action, "placed")
    if action == "H2":
        return "robot_tray"
    return "placed" if right else "wrong"
