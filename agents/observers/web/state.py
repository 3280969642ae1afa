"""The web view's picture of a team, fed message by message (pure: no I/O, no clock
reads of its own): the monitor's view plus what a dashboard draws — the task tree
with each node's state and worker, presence with since-when, factsheets, a timeline
that includes the people's work, and alerts.

A person publishes no task-tree state (seed 000 §2.3); their work comes from
``teamtree.agents.observers.human_work`` (the world's hands, else the robots' beliefs).
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from teamtree.agents.observers.human_work import HumanWork, WorkEvent
from teamtree.agents.observers.monitor import MonitorState, now_words
from teamtree.agents.observers.web.drawn_tree import DrawnTree
from teamtree.agents.observers.web.expectations import KittingExpectations, spot_label
from teamtree.agents.observers.web.floor import FloorMap
from teamtree.agents.observers.web.history import MAX_SPANS, UNNAMED, MissionHistory
from teamtree.agents.observers.web.plans import TeamPlans
from teamtree.agents.runtime.mission import mission_of
from teamtree.agents.runtime.mission_status import STATUS_KIND, at_least_tree_done
from teamtree.agents.runtime.observation_wire import ObservationWireError, decode_world_state
from teamtree.agents.treeprotocol.decided_wire import lost_claim
from teamtree.agents.treeprotocol.mission_wire import MissionWireError, tree_from_body
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic

__all__ = ["MAX_ALERTS", "MAX_MISSIONS", "MAX_SPANS", "WebState"]

#: alerts kept
MAX_ALERTS = 30
#: rows of the mission queue's table shown (the newest)
MAX_MISSIONS = 50
STATES = ("inactive", "active", "working", "done", "skipped")


class WebState:
    """Everything the team page shows, as JSON-ready data (``snapshot``)."""

    def __init__(self, team: str, *, clock: Callable[[], float] = time.monotonic):
        self.monitor = MonitorState(team, clock=clock)
        self.version = 0  #: bumped on every change the page shows
        self.drawn = DrawnTree()  # the mission tree and who works or finished its nodes
        self.since: dict[str, int] = {}  # agent -> ms of its last presence change
        self._presence_state: dict[str, str] = {}
        self.factsheets: dict[str, dict[str, Any]] = {}
        self.history = MissionHistory()  # each mission's timeline, from its start
        self.plans = TeamPlans(self.history, self._mission_key)  # LTL plans and schedules
        self.floor = FloorMap()  # the map: table, LTL graph or kitting table
        self.alerts: deque[dict[str, Any]] = deque(maxlen=MAX_ALERTS)
        self.humans = HumanWork()
        self.kitting = KittingExpectations()  # what a cobot expects of its person (seed 001)
        self.world: dict[str, Any] = {}
        self.t0: int | None = None
        self.missions: dict[str, Any] | None = None  # the mission queue's table
        self._ended_said: set[str] = set()  # missions whose end is among the alerts

    # -- feeding -------------------------------------------------------------------

    def feed_sys(self, topic: str, payload: bytes) -> None:
        """A ``$SYS/broker/...`` figure."""
        self.monitor.feed_sys(topic, payload)

    def feed(self, env: Envelope, topic: Topic, *, retained: bool = False) -> None:
        """One validated message of the team; never raises on a bad body."""
        self.monitor.feed(env, topic, retained=retained)
        self.interpret(env, topic)

    def interpret(self, env: Envelope, topic: Topic) -> None:
        """What ``feed`` adds to the monitor's view (for a caller whose observer feeds
        ``self.monitor`` itself)."""
        self.version += 1
        body = env.body if isinstance(env.body, dict) else {}
        kind = env.kind
        self._people(self.humans.feed(kind, env.sender, env.body, env.ts), body)
        self.kitting.feed(kind, env.sender, env.body, env.ts)
        sheet = topic.agent is not None and topic.channel == "factsheet"
        self.floor.feed("factsheet" if sheet else kind, env.sender, body, self._kind_of(env.sender))
        if topic.agent is not None and topic.channel == "connection":
            self._presence(env, body)
        elif topic.agent is not None and topic.channel == "factsheet" and body:
            self.factsheets[env.sender] = body
        elif kind == STATUS_KIND:
            self._status_alert(env.ts)
        elif kind == "mission.tree":
            self._mission(body, env.ts)
        elif kind == "mission.table" and isinstance(body.get("missions"), list):
            self._missions_table(env, body["missions"])
        elif kind == "node.transition":
            self._transition(env, body)
        elif kind == "node.claim_decided" and (lost := lost_claim(body)) is not None:
            self._alert(env.ts, "claim", f"{env.sender} lost the claim on {self._label(lost.node)}")
        elif kind == "world.state":
            self._world_state(env.ts, body)
        elif kind == "world.violation":
            self._alert(env.ts, "violation", f"world: {body.get('kind') or 'violation'} {body}")
        elif kind == "ltl.plan" and isinstance(body.get("plan"), dict):
            robot = topic.recipient or env.sender
            if self.plans.ltl_plan(robot, body, env.ts):
                self._stamp(env.ts)
        elif kind in ("ltl.step", "ltl.done"):
            self.plans.ltl_progress(env.sender, kind, body, env.ts)
        elif kind in ("kitting.robot_action", "kitting.human_action"):
            self._kitting_span(env, body)
        elif kind == "behaviour.failed":
            self._failed(env, body)
        elif isinstance(body.get("schedule"), dict):
            self.plans.allocation(env, body)
        elif kind == "dialog.resolved":
            answer = body.get("answer")
            who = body.get("human")
            self._event(
                env.ts,
                f"{env.sender} asked {who} about {body.get('label')}: {answer} ({body.get('how')})",
            )

    def _stamp(self, ts: int) -> None:
        if self.t0 is None or ts < self.t0:
            self.t0 = ts

    def _label(self, node: str | None) -> str:
        return self.monitor.label(node)

    def _kind_of(self, agent: str) -> str | None:
        row = self.monitor.agents.get(agent)
        kind = (row.kind if row is not None else None) or self.factsheets.get(agent, {}).get("kind")
        return kind if isinstance(kind, str) else None

    def _mission_key(self, body: dict[str, Any], node: str | None = None) -> str:
        """The mission a piece of work belongs to: the drawn tree's for its nodes, else
        the one the body is stamped with, else the one the team reports running."""
        drawn = self.drawn
        if drawn.mission and drawn.tree is not None and node in drawn.tree.nodes:
            return drawn.mission
        return mission_of(body) or self.monitor.board.current() or UNNAMED

    def _alert(self, ts: int, kind: str, text: str) -> None:
        self.alerts.append({"ts": ts, "kind": kind, "text": text[:200]})

    def _event(self, ts: int, text: str) -> None:
        self._alert(ts, "info", text)

    def _presence(self, env: Envelope, body: dict[str, Any]) -> None:
        state = body.get("state")
        row = self.monitor.agents.get(env.sender)
        if row is None or not isinstance(state, str):
            return
        if self._presence_state.get(env.sender) != state:
            self.since[env.sender] = env.ts
            self._presence_state[env.sender] = state
            if state == "CONNECTION_BROKEN":
                self._alert(env.ts, "presence", f"{env.sender} broke its connection")

    def _mission(self, body: dict[str, Any], ts: int) -> None:
        raw = body.get("tree")
        with contextlib.suppress(MissionWireError):  # a malformed one is not shown
            tree = tree_from_body(body)
            mission = body.get("mission") if isinstance(body.get("mission"), str) else None
            if self.drawn.replace(tree, raw, mission):
                for old in self.history.missions:  # the last mission's work is over
                    if old != mission:
                        self.history.close_all(old, None, ts, "inactive")
            if mission is not None:
                self.history.begin(mission, ts)

    def _status_alert(self, ts: int) -> None:
        """A mission that ended without success goes under Alerts, once, with why."""
        board = self.monitor.board
        for mission, view in board.views().items():
            if view["state"] == "running" and mission not in self.history.missions:
                self.history.begin(mission, board.started.get(mission, ts))
            if view["ended"]:  # the board's word on its end, which a later one may outrank
                at = view.get("updated_ms") or ts
                self.history.ended(mission, view["state"], str(view.get("reason") or ""), at)
            if view["ended"] and mission not in self._ended_said:
                self._ended_said.add(mission)
                if view["state"] != "succeeded":
                    kind = "failure" if view["state"] != "cancelled" else "cancelled"
                    self._alert(ts, kind, f"mission {mission} ({view['kind']}): {view['headline']}")

    def _open_span(self, agent: str, node: str, body: dict[str, Any], ts: int) -> None:
        self._stamp(ts)
        mission = self._mission_key(body, node)
        self.history.open(mission, agent, node, self._label(node) or node, ts)

    def _close_span(
        self, agent: str, node: str, body: dict[str, Any], ts: int, how: str = "inactive"
    ) -> None:
        self.history.close(self._mission_key(body, node), agent, node, ts, how)

    def _failed(self, env: Envelope, body: dict[str, Any]) -> None:
        """A driver's behaviour failed: the robot's span on the node ends failed, why."""
        node, robot = body.get("node"), body.get("robot")
        if not isinstance(node, str) or not isinstance(robot, str):
            return
        reason = str(body.get("reason") or "failed")
        self._stamp(env.ts)
        mission = self._mission_key(body, node)
        self.history.mark(mission, robot, node, self._label(node) or node, env.ts, "failed", reason)

    def _kitting_span(self, env: Envelope, body: dict[str, Any]) -> None:
        """A kitting action (seed 001): a span from its start to its end or abort."""
        task, action, phase = body.get("task"), body.get("action"), body.get("phase")
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < 1000:
            return
        node = f"kit/{task}/{str(action)[:4]}"  # a row per spot and action (R2, then R3)
        if phase == "start" and isinstance(action, str):
            self._stamp(env.ts)
            mission = self._mission_key(body)
            label = f"{action[:4]} {spot_label(task)}"
            self.history.open(mission, env.sender, node, label, env.ts)
        elif phase in ("end", "abort"):
            how = "done" if phase == "end" else "inactive"
            self.history.close(self._mission_key(body), env.sender, node, env.ts, how)

    def _transition(self, env: Envelope, body: dict[str, Any]) -> None:
        node, status = body.get("node"), body.get("status")
        if not isinstance(node, str) or status not in STATES:
            return
        agent = env.sender
        if status == "working":
            self.drawn.start(node, agent)
            self._open_span(agent, node, body, env.ts)
        elif status in ("done", "skipped"):
            self.drawn.finish(node, agent, skipped=status == "skipped")
            self._close_span(agent, node, body, env.ts, "done")
        elif status == "inactive":
            self.drawn.stop(node, agent)
            self._close_span(agent, node, body, env.ts)

    def _world_state(self, ts: int, body: dict[str, Any]) -> None:
        try:
            world = decode_world_state(body)
        except ObservationWireError:  # a malformed one is not shown
            return
        self.world = {
            "t": world.t,
            "violations": world.violations,
            "objects": {
                name: {"at_goal": o.at_goal, "held_by": o.held_by}
                for name, o in world.objects.items()
            },
        }

    def _missions_table(self, env: Envelope, rows: list[Any]) -> None:
        """The mission queue's retained table (the dispatch protocol): every mission
        it knows of, queued to ended, newest last."""
        keep = ("id", "kind", "state", "submitted_ms", "started_ms", "ended_ms", "reason")
        table = [
            {k: row.get(k) for k in keep} | {"summary": str(row.get("summary") or "")[:300]}
            for row in rows[-MAX_MISSIONS:]
            if isinstance(row, dict) and isinstance(row.get("id"), str)
        ]
        self.missions = {"queue": env.sender, "ts": env.ts, "rows": table}

    def mission_queues(self) -> list[str]:
        """The team's mission queues that are ONLINE (by factsheet kind)."""
        return sorted(
            agent
            for agent, row in self.monitor.agents.items()
            if row.presence == "ONLINE"
            and (row.kind or self.factsheets.get(agent, {}).get("kind")) == "mission_queue"
        )

    def _people(self, events: list[WorkEvent], body: dict[str, Any]) -> None:
        """Apply the people's work (``HumanWork``) to the tree and the timeline."""
        for event in events:
            person, node = event.person, event.node
            if event.started:
                self.drawn.start(node, person)
                self._open_span(person, node, body, event.ts)
                continue
            if event.done:
                self.drawn.finish(node, person)
            else:
                self.drawn.stop(node, person)
            self._close_span(person, node, body, event.ts, "done" if event.done else "inactive")

    # -- reading -------------------------------------------------------------------

    def _tree_stopped(self) -> bool:
        """Whether the drawn tree's mission ended without success (then nothing of it
        is worked on, whatever the last transitions said)."""
        if self.drawn.mission is None:
            return False
        view = self.monitor.board.view(self.drawn.mission)
        return bool(view and view["ended"] and view["state"] != "succeeded")

    def node_states(self) -> dict[str, dict[str, Any]]:
        """Every node of the mission tree (``DrawnTree.states``), stopped where its
        mission failed, timed out or was cancelled."""
        return self.drawn.states(self._tree_stopped(), self._label)

    def _timelines(
        self, now: int, complete: bool
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The current mission's timeline (the one the team reports, else the drawn
        tree's, else the latest heard of) and the other kept missions' by id, each
        from its start. ``missions`` lists the kept ones, oldest first, with their
        state, for the page to pick from."""
        board = self.monitor.board
        ids = self.history.ids()
        shown = next((m for m in (board.current(), self.drawn.mission) if m in ids), None)
        shown = shown or (ids[-1] if ids else None)
        views = {m: v for m in ids if (v := self.history.view(m or None, now)) is not None}
        current = views.pop(shown, None) if shown is not None else None
        if current is None:
            current = {"mission": None, "t0": self.t0 or now, "now": now, "end": None, "spans": []}
        elif complete and current["end"] is None:  # the picture's clock stops with the tree
            ends = [s["end"] for s in current["spans"] if s["end"] is not None]
            current["now"] = max(ends, default=current["now"])
        current["missions"] = []
        for m in ids:
            view = board.view(m) or {}
            row = {"id": m, "state": view.get("state"), "kind": view.get("kind")}
            current["missions"].append(row)
        return current, views

    def snapshot(self, now_ms: int | None = None) -> dict[str, Any]:
        """The whole page as JSON-ready data."""
        snap = self.monitor.snapshot()
        now = snap["time_ms"] if now_ms is None else now_ms
        ended = bool(snap["status"] and snap["status"]["ended"])
        for agent_id, row in snap["agents"].items():
            row["since_ms"] = self.since.get(agent_id)
            row["factsheet"] = self.factsheets.get(agent_id, {})
            node = self.humans.current.get(agent_id)
            if node is not None and row.get("node") is None:
                row["node"], row["node_label"] = node, self._label(node)
                row["status"] = now_words([self._label(node)], row["presence"], ended, "")
            if (row.get("kind") or row["factsheet"].get("kind")) == "human":
                row["done"] = sorted(n for n, a in self.drawn.done_by.items() if a == agent_id)
        nodes = self.node_states()
        if self._tree_stopped():  # nobody works on a mission that ended
            for row in snap["agents"].values():
                if row.get("node") in nodes:
                    label = row.get("node_label") or row["node"]
                    row["node"], row["node_label"] = None, None
                    row["status"] = f"stopped ({label}: the mission ended)"
        tree = self.drawn.tree
        root = tree.root.id if tree is not None else None
        leaves = tree.leaves if tree is not None else []
        snap["mission"]["done"] = len(
            [n for n in leaves if nodes[n]["state"] in ("done", "skipped")]
        )
        snap["mission"]["leaves"] = len(leaves)
        at_least_tree_done(snap["status"], self.drawn.mission, len(leaves), snap["mission"]["done"])
        snap["mission"]["complete"] = bool(root and nodes[root]["state"] == "done")
        snap["mission"]["done_by"] = {n: a for n, a in self.drawn.done_by.items() if n in leaves}
        snap["tree"] = {"root": root, "nodes": nodes}
        snap["timeline"], snap["timelines"] = self._timelines(now, snap["mission"]["complete"])
        snap["timeline"]["labels"] = {n: self._label(n) for n in leaves}
        snap["map"] = self.floor.view()
        snap["alerts"] = list(self.alerts)
        snap["people"] = {
            person: {"node": node, "holding": self.humans.holding.get(person)}
            for person, node in self.humans.current.items()
        }
        snap["world"] = self.world
        snap["plans"] = self.plans.ltl
        snap["schedule"] = self.plans.schedule
        snap["first_schedule"] = self.plans.first_schedule
        snap["missions"] = self.missions
        snap["mission_queues"] = self.mission_queues()
        snap["mission"]["id"] = self.drawn.mission
        snap["version"] = self.version
        snap.pop("dialogs", None)
        snap["dialogs"] = [
            {"sender": d["sender"], "kind": d["kind"], "ts": d["ts"],
             "label": d["body"].get("label"), "answer": d["body"].get("answer")}
            for d in self.monitor.dialogs
        ]  # fmt: skip
        return snap
