"""What the people in a team did, read from the broker alone (seed 000 §2.3: a person
publishes no task-tree state, so the monitor, recorder and timeline saw nothing).

Primary source: the world's ``world.state``. A hand reaching for (``target``) or
holding a leaf's object is its person working on that leaf; the hand leaving it while
the object is at its goal is the leaf done by that person. Hands map to people by the
``hand`` of each human's factsheet (default: the hand's name is the person's id).
Without a simulated world (real people, real robots) the robots' ``tom.belief``
messages are used instead: what the team believes the person is doing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import msgspec

from teamtree.agents.runtime.observation_wire import (
    ObservationWireError,
    WorldStateBody,
    decode_world_state,
)
from teamtree.agents.treeprotocol.mission_wire import MissionWireError, decode_mission_tree

__all__ = ["HumanWork", "WorkEvent", "human_rows"]


@dataclass(frozen=True, slots=True)
class WorkEvent:
    """A person started (``done`` is None) or stopped working on a leaf."""

    person: str
    node: str
    ts: int
    started: bool
    done: bool = False


class HumanWork:
    """Fed the team's messages in order; ``feed`` returns the people's work events."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}  # leaf -> object it moves
        self.hands: dict[str, str] = {}  # hand -> person
        self.current: dict[str, str | None] = {}  # person -> leaf worked on now
        self.done_by: dict[str, str] = {}  # leaf -> person who placed it
        self.holding: dict[str, Any] = {}  # person -> object in hand
        self.world_seen = False

    def set_leaves(self, objects: dict[str, str]) -> None:
        """A new mission: leaf id -> the object its behaviour moves."""
        if objects != self.objects:
            self.objects = dict(objects)
            self.current.clear()
            self.done_by.clear()

    def feed(self, kind: str, sender: str, body: Any, ts: int) -> list[WorkEvent]:
        """One message; never raises on a malformed body."""
        if not isinstance(body, dict):
            return []
        if kind == "factsheet" and body.get("kind") == "human":
            hand = body.get("hand")
            self.hands[hand if isinstance(hand, str) else sender] = sender
        elif kind == "mission.tree":
            with contextlib.suppress(MissionWireError):  # a malformed one is not read
                self.set_leaves(_leaf_objects(msgspec.to_builtins(decode_mission_tree(body).tree)))
        elif kind == "world.state" and isinstance(body.get("hands"), dict) and body["hands"]:
            try:
                world = decode_world_state(body)
            except ObservationWireError:  # a malformed one is not read
                return []
            self.world_seen = True
            return self._world(world, ts)
        elif kind == "tom.belief" and not self.world_seen:
            return self._belief(body, ts)
        return []

    def _leaf_of(self, obj: Any) -> str | None:
        return next((leaf for leaf, o in self.objects.items() if o == obj), None)

    def _move(self, person: str, leaf: str | None, ts: int, placed: set[str]) -> list[WorkEvent]:
        before = self.current.get(person)
        if before == leaf:
            return []
        events = []
        if before is not None:
            done = before in placed and before not in self.done_by
            if done:
                self.done_by[before] = person
            events.append(WorkEvent(person, before, ts, started=False, done=done))
        if leaf is not None and leaf in self.done_by:
            leaf = None
        self.current[person] = leaf
        if leaf is not None:
            events.append(WorkEvent(person, leaf, ts, started=True))
        return events

    def _world(self, world: WorldStateBody, ts: int) -> list[WorkEvent]:
        placed = {
            leaf
            for leaf, obj in self.objects.items()
            if obj in world.objects and world.objects[obj].at_goal
        }
        events: list[WorkEvent] = []
        for hand, view in world.hands.items():
            person = self.hands.get(hand, hand)
            self.holding[person] = view.holding
            leaf = self._leaf_of(view.holding or view.target)
            events += self._move(person, leaf, ts, placed)
        return events

    def _belief(self, body: dict[str, Any], ts: int) -> list[WorkEvent]:
        person = body.get("human")
        if not isinstance(person, str):
            return []
        listed = body.get("done")
        done = {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()
        active = body.get("active") if isinstance(body.get("active"), str) else None
        return self._move(person, active, ts, done)


def _leaf_objects(tree: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        params = node.get("params") if isinstance(node.get("params"), dict) else {}
        if "behavior" in node and isinstance(node.get("id"), str):
            if isinstance(params.get("object"), str):
                out[node["id"]] = params["object"]
        elif isinstance(node.get("children"), list):
            stack.extend(node["children"])
    return out


def human_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The people's subtasks in a recorded run, in start order, shaped like the
    recorder's summary rows: ``{agent, node, start_ms, end_ms, stop_ms, human: True}``
    where ``end_ms`` is when the person placed the object (None when they gave the
    subtask up or were still at it) and ``stop_ms`` when they stopped either way."""
    work = HumanWork()
    rows: list[dict[str, Any]] = []
    open_: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in sorted(records, key=lambda r: r.get("ts", 0)):
        kind, sender = str(rec.get("kind")), str(rec.get("sender"))
        for event in work.feed(kind, sender, rec.get("body"), rec.get("ts", 0)):
            key = (event.person, event.node)
            if event.started:
                row = {"agent": event.person, "node": event.node, "start_ms": event.ts,
                       "end_ms": None, "stop_ms": None, "human": True}  # fmt: skip
                open_[key] = row
                rows.append(row)
            elif key in open_:
                row = open_.pop(key)
                row["stop_ms"] = event.ts
                row["end_ms"] = event.ts if event.done else None
    return rows
