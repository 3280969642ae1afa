"""A person in the team through their browser (seed 000 §2.3): the ``/human/<id>``
page's agent, kept by the web server.

``WebHuman`` is ``TerminalHuman`` (the same wire: kind ``human``, no task-tree state,
the hand moved in the simulated world, dialog answers) driven by taps instead of
typed lines, plus what a screen can show and a terminal could not: the subtasks open
to the person and their state, who works on the others (from the robots' node
transitions), and each open question with its deadline. The agent lives in the
server, not in the page, so a reload or a lost connection loses nothing; it stays
in the team until the person taps "leave" or the server stops.

The view offers only the taps the world accepts now (``taps``: read from the world's
own reply for the person's hand, again right after each tap) and says everything in
plain words (``plain``); each tap's number comes back in the view once carried out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

from teamtree.agents.humans.human import find_world, leaf_objects
from teamtree.agents.humans.terminal import TerminalHuman
from teamtree.agents.observers.mission_labels import object_words, plain_label
from teamtree.agents.observers.web.plain import say_line
from teamtree.agents.observers.web.taps import hand_state, may_reach
from teamtree.agents.runtime.config import RuntimeSettings
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker.endpoint import Endpoint
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic, validate_id
from teamtree.hardware.sim_client import SimClient
from teamtree.planners.tasktree import spread_activation

__all__ = ["HumanSessions", "WebHuman"]

#: lines of the person's log kept for the page
LOG_LINES = 40
#: seconds a new person's page waits for their agent to join the team
CONNECT_WAIT_S = 10.0


class WebHuman(TerminalHuman):
    """A person's agent driven from a web page (module docstring)."""

    def __init__(self, *args: Any, on_change: Callable[[], None] | None = None, **kwargs: Any):
        self.lines: deque[dict[str, Any]] = deque(maxlen=LOG_LINES)
        self.seen: dict[str, Any] | None = None  # the world's last hand_observe reply
        self.tap = 0  # the last of the page's taps carried out (the page waits for it)
        self._line_no = 0
        self._on_change = on_change or (lambda: None)
        super().__init__(
            *args, reader=asyncio.StreamReader(), write=self._line, exit_when_done=False, **kwargs
        )
        self.workers: dict[str, str] = {}  # leaf -> robot working on it now
        self.finished_by: dict[str, str] = {}  # leaf -> robot that reported it done
        self.mine: list[str] = []  # leaves this person placed
        self.target: str | None = None
        self.resolved: deque[dict[str, Any]] = deque(maxlen=10)
        self.version = 0

    def factsheet(self) -> dict[str, Any]:
        return {**super().factsheet(), "interface": "web"}

    async def setup(self) -> None:
        await super().setup()
        self.on_agents("state", self._on_transition, kind="node.transition")

    def _line(self, text: str) -> None:
        tag = text.split(" ", 1)[0]
        if tag == "placed" and self.target is not None:
            self.mine.append(self.target)
            self.target = None
        self._line_no += 1
        self.lines.append(
            {
                "n": self._line_no,
                "ts": wall_ms(),
                "tag": tag,
                "text": text,
                "say": say_line(text, self._words),
            }
        )
        self.changed()

    def _words(self, key: str, *, doing: bool = False) -> str | None:
        """Leaf `key` (its id or its label, ``PLACE(cup)``) in plain words."""
        tree = self.tree
        if tree is None:
            return None
        if key not in tree.nodes:
            key = next((leaf for leaf in tree.leaves if tree[leaf].label == key), "")
        if not key or not tree[key].is_leaf:
            return None
        return plain_label(tree[key].behavior, tree[key].param_dict, doing=doing)

    async def _call(self, op: str, **fields: Any) -> dict[str, Any] | None:
        reply = await super()._call(op, **fields)
        if op == "hand_observe" and reply is not None and reply.get("ok"):
            before, self.seen = self._seen_key(), reply
            if self._seen_key() != before:
                self.changed()  # the taps the world accepts may have changed
        return reply

    def _seen_key(self) -> Any:
        """What of the world's reply decides the page's taps and rows."""
        seen = self.seen or {}
        hand = seen.get("hand") if isinstance(seen.get("hand"), dict) else {}
        objects = seen.get("objects") if isinstance(seen.get("objects"), dict) else {}
        robots = seen.get("robots") if isinstance(seen.get("robots"), dict) else {}
        return (
            (hand.get("holding"), hand.get("busy"), hand.get("target")),
            sorted(
                (k, v.get("held_by"), v.get("at_goal"))
                for k, v in objects.items()
                if isinstance(v, dict)
            ),
            sorted((k, v.get("node")) for k, v in robots.items() if isinstance(v, dict)),
        )

    def _working(self) -> dict[str, str]:
        """Leaf -> the robot working on it: the robots' node transitions, and the
        robots' jobs in the world (a page opened mid-mission missed the transitions)."""
        robots = (self.seen or {}).get("robots") if self.client is not None else None
        out = {
            v["node"]: name
            for name, v in (robots.items() if isinstance(robots, dict) else ())
            if isinstance(v, dict) and isinstance(v.get("node"), str)
        }
        return {**out, **self.workers}

    async def _look(self) -> None:
        """Read the world again right after a command, so the next push shows its
        effect (never the state from before the tap, which would offer it again)."""
        if self.client is not None:
            await self._call("hand_observe", since=self._since)

    def acknowledge(self, tap: Any) -> None:
        """The page's tap number `tap` is carried out (the page keeps its controls
        disabled until a view says so, so a tap is never sent twice)."""
        if isinstance(tap, int) and not isinstance(tap, bool):
            self.tap = max(self.tap, tap)
        self.changed()

    def hand_now(self) -> tuple[str, str | None]:
        """What the person's hand does, as the world last showed it: ``empty``,
        ``reaching`` (for an object), ``holding`` (still, ready to place) or ``placing``
        (carrying it to its goal), and the object. These decide the taps the world
        accepts: a reach only from an empty hand and never for an object another hand
        holds, a place only from a hand holding still. Without a world the person's
        own taps are the record."""
        if self.client is None or self.seen is None:
            obj = leaf_objects(self.tree).get(self.target) if self.tree and self.target else None
            return ("holding", obj) if self.target is not None else ("empty", None)
        return hand_state(self.seen.get("hand"))

    def changed(self) -> None:
        """Something the page shows changed: bump the version and tell the server."""
        self.version += 1
        self._on_change()

    async def _on_transition(self, env: Envelope, topic: Topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        node, status = body.get("node"), body.get("status")
        if not isinstance(node, str):
            return
        if status == "working":
            self.workers[node] = env.sender
        elif status in ("done", "skipped"):
            self.workers.pop(node, None)
            self.finished_by.setdefault(node, env.sender)
        elif status == "inactive" and self.workers.get(node) == env.sender:
            del self.workers[node]
        self.changed()

    async def _on_resolved(self, env: Envelope, topic: Topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        if body.get("human") == self.id:
            self.resolved.append(
                {
                    "robot": env.sender,
                    "label": body.get("label"),
                    "answer": body.get("answer"),
                    "how": body.get("how"),
                    "robot_continues": bool(body.get("robot_continues")),
                }
            )
        await super()._on_resolved(env, topic)

    async def main(self) -> None:
        """Find the team's simulated world (waiting for it as long as it takes: the page
        may be opened before the team starts), then serve taps until stopped."""
        await self.wait_connected()
        self.write(f"ready {self.id} team={self.team}")
        try:
            waiting = False
            while self.use_world and self.client is None:
                try:
                    address = await find_world(self, self.world_id, timeout=5.0)
                except TimeoutError:
                    if not waiting:
                        self.write("waiting for the team's simulated world (taps only tell)")
                        waiting = True
                    continue
                client = SimClient(address, timeout=1.0)
                client.connect()
                self.client = client
                if (await self._call("hand_observe", since=0) or {}).get("ok"):
                    self.spawn(self._watch_world(), "world", optional=True)
                    self.write(f"world found: your hand {self.hand} moves in it")
                else:
                    self.write(f"error the world has no hand {self.hand!r}")
                    self.client = None
                    await client.close()
                    break
            await self.wait_stop_requested()
        finally:
            if self.client is not None:
                client, self.client = self.client, None
                await client.close()

    # -- taps ----------------------------------------------------------------------

    async def start(self, leaf: str) -> None:
        """The person starts the subtask `leaf` (the hand reaches for its object)."""
        await self.handle(f"start {leaf}")
        if self.lines and self.lines[-1]["tag"] == "started":
            self.target = self._leaf(leaf)
        await self._look()
        self.changed()

    async def finish(self) -> None:
        """The person places what they hold at its goal."""
        await self.handle("finish")
        await self._look()
        self.changed()

    async def answer(self, dialog_id: str, keep: bool) -> None:
        """Answer the question `dialog_id`: keep the subtask ("continue") or let the
        robot take it ("concede"). Unknown or closed questions say so in the log."""
        match = [q for q in self.questions if q[1].dialog_id == dialog_id]
        if not match:
            self._line(f"error the question {dialog_id} is closed")
            return
        env = match[0][0]
        self.questions.remove(match[0])
        self.questions.insert(0, match[0])  # the first of its robot's, if it asked two
        # named: with two robots asking at once a bare answer is refused (terminal.py)
        await self.handle(f"{'yes' if keep else 'no'} {env.sender}")
        if not keep and self.target == match[0][1].node and not self.holding:
            self.target = None
        await self._look()
        self.changed()

    # -- what the page shows -------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """The page's state as JSON-ready data: each subtask and the hand in plain
        words, with the taps the world would accept now (``can_start``,
        ``can_finish``) derived from the same state the world answers from."""
        tree = self.tree
        hand_doing, hand_object = self.hand_now()
        objects = (self.seen or {}).get("objects") if self.client is not None else None
        subtasks = []
        now_doing: list[str] = []
        mine_now: str | None = None
        workers = self._working()
        if tree is not None:
            done = set(self._done)
            acts = spread_activation(tree, done, (), default_potential=1.0)
            leaf_object = leaf_objects(tree)
            for leaf in tree.leaves:
                obj = leaf_object.get(leaf)
                doing = self._words(leaf, doing=True) or "working on it"
                if leaf in done:
                    by = "you" if leaf in self.mine else self.finished_by.get(leaf, "someone")
                    state, say = "done", f"{by} did it: {self._words(leaf)}"
                elif hand_doing != "empty" and obj is not None and obj == hand_object:
                    state, by = hand_doing, "you"
                    say = {
                        "reaching": f"you are reaching for {object_words(obj)}",
                        "holding": f"you hold {object_words(obj)}: tap Finish to place it",
                        "placing": f"you are {doing}",
                    }[hand_doing]
                    mine_now = leaf
                elif leaf in workers:
                    state, by = "robot", workers[leaf]
                    say = f"{by} is {doing}"
                    now_doing.append(say)
                elif acts[leaf].level > 0:
                    state, by, say = "open", None, "free: nobody is on it"
                else:
                    state, by, say = "waiting", None, "not yet: it waits for other subtasks"
                subtasks.append(
                    {
                        "node": leaf,
                        "label": tree[leaf].label,
                        "object": obj,
                        "name": str(obj).replace("_", " ") if obj else self._words(leaf),
                        "say": say,
                        "state": state,
                        "by": by,
                        "enabled": leaf not in done and acts[leaf].level > 0,
                        "can_start": state in ("open", "robot")
                        and hand_doing == "empty"
                        and (objects is None or may_reach(objects, obj, self.hand)),
                    }
                )
        now = wall_ms()
        questions = [
            {
                "dialog_id": ask.dialog_id,
                "robot": env.sender,
                "node": ask.node,
                "label": ask.label,
                "object": ask.object,
                "question": ask.question,
                "say": f"{env.sender} asks: you both went for "
                f"{object_words(ask.object) if ask.object else 'the same subtask'}. "
                "Do you go on with it?",
                "deadline_ms": env.deadline,
                "timeout_s": ask.timeout_s,
            }
            for env, ask in self.questions
            if env.deadline is None or env.deadline > now - 1000
        ]
        hand = {
            "state": hand_doing,
            "object": hand_object,
            "node": mine_now,
            "say": _say_hand(hand_doing, hand_object),
            "can_finish": hand_doing == "holding",
        }
        if mine_now is not None:
            now_doing.insert(0, next(t["say"] for t in subtasks if t["node"] == mine_now))
        return {
            "id": self.id,
            "team": self.team,
            "hand": self.hand,
            "world": self.client is not None,
            "connected": self.connection.connected.is_set(),
            "holding": hand_object if hand_doing == "holding" else None,
            "target": self.target,
            "in_hand": hand,
            "now": now_doing,
            "subtasks": subtasks,
            "questions": questions,
            "resolved": list(self.resolved),
            "log": list(self.lines),
            "complete": self.task_done(),
            "tap": self.tap,
            "server_ms": now,
            "version": self.version,
        }


def _say_hand(state: str, obj: str | None) -> str:
    what = object_words(obj) if obj else "it"
    return {
        "empty": "your hand is free",
        "reaching": f"you are reaching for {what}",
        "holding": f"you hold {what}",
        "placing": f"you are placing {what}",
    }[state]


class HumanSessions:
    """The people's agents hosted by one web server, one per id, started on first use."""

    def __init__(
        self,
        endpoint: Endpoint,
        team: str,
        *,
        runtime: RuntimeSettings | None = None,
        tls_context: Any = None,
        credentials: Callable[[str], dict[str, str]] = agent_credentials,
        is_taken: Callable[[str], bool] = lambda agent_id: False,
    ):
        self.endpoint = endpoint
        self.team = team
        self.runtime = runtime or RuntimeSettings(heartbeat_s=1.0, keepalive_s=2)
        self.tls_context = tls_context
        self.credentials = credentials
        self.is_taken = is_taken
        self.agents: dict[str, WebHuman] = {}
        self.changed = asyncio.Event()
        self._lock = asyncio.Lock()

    async def get(self, agent_id: str) -> WebHuman:
        """The running agent for `agent_id`, started (and connected) if needed.
        Raises ValueError when the id is invalid or already online as another
        process (joining would take over its session)."""
        agent_id = validate_id(agent_id, "human id")
        async with self._lock:
            agent = self.agents.get(agent_id)
            if agent is not None:
                return agent
            if self.is_taken(agent_id):
                raise ValueError(
                    f"{agent_id!r} is already online in team {self.team!r} (another process "
                    "is this person); stop it first, or open /human/<another id>"
                )
            agent = WebHuman(
                agent_id,
                team=self.team,
                endpoint=self.endpoint,
                runtime=self.runtime,
                tls_context=self.tls_context,
                on_change=self.changed.set,
                **self.credentials(agent_id),
            )
            await agent.__aenter__()
            agent.spawn(agent.run_until_stopped(), "main")
            self.agents[agent_id] = agent
        # the page shows the person once they are in the team; and an Agent stopped
        # before its first connect waits a long time for its goodbye (see ``leave``)
        with contextlib.suppress(TimeoutError):
            await agent.wait_connected(CONNECT_WAIT_S)
        return agent

    async def leave(self, agent_id: str) -> None:
        """Stop `agent_id`'s agent (it leaves the team, OFFLINE)."""
        agent = self.agents.pop(agent_id, None)
        if agent is not None:
            with contextlib.suppress(TimeoutError):
                await agent.wait_connected(CONNECT_WAIT_S)
            await agent.stop()

    async def close(self) -> None:
        """Stop every person's agent."""
        for agent_id in list(self.agents):
            with contextlib.suppress(Exception):
                await self.leave(agent_id)
