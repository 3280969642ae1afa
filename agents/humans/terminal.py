"""A real person at a terminal in a human's place (seed 000 §2.3, §3.2.1).

The person types which subtask they start and finish, and answers the robots'
questions; like the simulated human this agent (kind ``human``) never publishes
task-tree state. When the team has a simulated world, ``start`` moves the person's hand
in it to the object and grasps it, and ``finish`` carries it to its goal, so the robots
see the hand and infer the intent exactly as they do for a simulated human. In a live
demo with real robots the cameras track the real hand and the world is absent; the
commands then only print (the dialog works either way).

Commands (one per line)::

    start OBJECT        begin a subtask (e.g. ``start cup``; a leaf id works too)
    finish              place the object in hand at its goal
    yes | continue [ROBOT]  answer the open question: I keep my subtask
    no | concede [ROBOT]    answer the open question: the robot takes it
                        (name the robot when more than one question is open)
    status              what is done, what the hand holds, open questions
    help | quit

Output lines (stdout) start with a tag so scripts can follow them: ``ready``,
``question <robot> <node> <label>: <text>``, ``answered``, ``robot <robot> ...``,
``started``, ``holding``, ``placed``, ``refused``, ``done``, ``error``.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Callable
from typing import Any

from teamtree.agents.humans.human import DIALOG, done_leaves, find_world, leaf_objects
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.treeprotocol.dialog_wire import (
    AnswerWire,
    AskWire,
    DialogWireError,
    ResolvedWire,
    decode,
    to_wire,
)
from teamtree.agents.treeprotocol.mission_wire import MissionWireError, tree_from_body
from teamtree.broker import LifecycleError, RequestTimeoutError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.hardware.sim_client import SimClient
from teamtree.planners.tasktree import TaskTree, spread_activation

__all__ = ["TerminalHuman", "stdin_reader"]

YES = {"y", "yes", "continue", "c"}
NO = {"n", "no", "concede"}


async def stdin_reader() -> asyncio.StreamReader:
    """An asyncio reader over this process's stdin (a terminal or a pipe)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    await loop.connect_read_pipe(lambda: protocol, sys.stdin)
    return reader


class TerminalHuman(Agent):
    """A person driving a human's place from text commands (module docstring)."""

    kind = "human"

    def __init__(
        self,
        *args: Any,
        reader: asyncio.StreamReader,
        write: Callable[[str], None] | None = None,
        hand: str | None = None,
        world: str | None = None,
        use_world: bool = True,
        exit_when_done: bool = True,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.reader = reader
        self.write = write or (lambda line: print(line, flush=True))
        self.hand = hand or self.id
        self.world_id = world
        self.use_world = use_world
        self.exit_when_done = exit_when_done
        self.tree: TaskTree | None = None
        self.client: SimClient | None = None
        self.questions: list[tuple[Envelope, AskWire]] = []
        self.holding: str | None = None
        self._commands = itertools.count(1)
        self._command: str | None = None
        self._since = 0
        self._done: set[str] = set()

    def factsheet(self) -> dict[str, Any]:
        return {**super().factsheet(), "hand": self.hand, "interface": "terminal"}

    async def setup(self) -> None:
        self.on_team(DIALOG, self._on_question, kind="dialog.ask")
        self.on_team("mission", self._on_mission, kind="mission.tree")
        self.on_agents(DIALOG, self._on_resolved, kind="dialog.resolved")

    # -- inbound -----------------------------------------------------------------------

    async def _on_mission(self, env: Envelope, topic: Topic) -> None:
        if self.tree is None:
            try:
                self.tree = tree_from_body(env.body)
            except MissionWireError as exc:
                self._drop("malformed", str(topic), env.sender, str(exc))

    async def _on_question(self, env: Envelope, topic: Topic) -> None:
        if env.to != self.id:
            return
        try:
            b = decode(env.body, AskWire)
        except DialogWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        self.questions.append((env, b))
        self.write(
            f"question {env.sender} {b.node} {b.label}: {b.question} "
            f"[yes = I continue / no = you take it; {b.timeout_s} s]"
        )

    async def _on_resolved(self, env: Envelope, topic: Topic) -> None:
        try:
            b = decode(env.body, ResolvedWire)
        except DialogWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if b.human != self.id:
            return
        self.questions = [q for q in self.questions if q[1].dialog_id != b.dialog_id]
        verb = "continues with" if b.robot_continues else "leaves you"
        self.write(f"robot {env.sender} {verb} {b.label} (answer {b.how})")

    # -- commands ----------------------------------------------------------------------

    def _leaf(self, name: str) -> str | None:
        if self.tree is None:
            return None
        if name in self.tree.nodes and self.tree[name].is_leaf:
            return name
        return next((leaf for leaf, obj in leaf_objects(self.tree).items() if obj == name), None)

    async def _call(self, op: str, **fields: Any) -> dict[str, Any] | None:
        if self.client is None:
            return None
        try:
            return await self.client.request(op, hand=self.hand, **fields)
        except (RequestTimeoutError, LifecycleError) as exc:
            self.write(f"error the world does not answer: {exc}")
            return None

    def _question(self, rest: list[str]) -> tuple[Envelope, AskWire] | None:
        """The open question an answer is for (taken off the list): the one asked by
        the robot named, or the only one open. With several open and none named the
        person is asked to say which: answering a question they did not mean would
        hand the wrong subtask over."""
        if not self.questions:
            self.write("error no open question")
            return None
        if rest:
            for i, (env, _ask) in enumerate(self.questions):
                if env.sender == rest[0]:
                    return self.questions.pop(i)
            asking = ", ".join(env.sender for env, _ in self.questions)
            self.write(f"error {rest[0]} asked no open question; open: {asking}")
            return None
        if len(self.questions) > 1:
            asking = ", ".join(env.sender for env, _ in self.questions)
            self.write(
                f"error {len(self.questions)} open questions ({asking}): name the robot, "
                f"e.g. 'no {self.questions[0][0].sender}'"
            )
            return None
        return self.questions.pop(0)

    async def handle(self, line: str) -> bool:
        """Carry out one command line; False on ``quit``."""
        words = line.strip().split()
        if not words:
            return True
        cmd, rest = words[0].lower(), words[1:]
        if cmd in ("quit", "exit"):
            return False
        if cmd in YES or cmd in NO:
            picked = self._question(rest)
            if picked is None:
                return True
            env, ask = picked
            answer = "continue" if cmd in YES else "concede"
            await self.reply(env, "dialog.answer", to_wire(AnswerWire(ask.dialog_id, answer)))
            self.log.info("human.answered", robot=env.sender, answer=answer)
            self.write(f"answered {env.sender} {answer}")
            if answer == "concede" and self._command is not None and not self.holding:
                await self._call("hand_cancel")
                self._command = None
            return True
        if cmd == "start" and rest:
            leaf = self._leaf(rest[0])
            if leaf is None or self.tree is None:
                self.write(f"error {rest[0]!r} is not a subtask of the task (yet)")
                return True
            obj = leaf_objects(self.tree)[leaf]
            self.log.info("human.started", node=leaf, label=self.tree[leaf].label)
            if self.client is None:
                self.write(f"started {leaf} {self.tree[leaf].label}")
                return True
            command = f"{self.hand}-{self.session}-{next(self._commands)}"
            reply = await self._call("hand_reach", command_id=command, object=obj, then="hold")
            if reply is not None and reply.get("ok"):
                self._command = command
                self.write(f"started {leaf} {self.tree[leaf].label}")
            else:
                self.write(f"refused start {obj}: {(reply or {}).get('reason')}")
            return True
        if cmd == "finish":
            if self.client is None:
                self.write("placed (no world to move)")
                return True
            command = f"{self.hand}-{self.session}-{next(self._commands)}"
            reply = await self._call("hand_place", command_id=command)
            if reply is not None and reply.get("ok"):
                self._command = command
                self.write(f"finishing {self.holding}")
            else:
                self.write(f"refused finish: {(reply or {}).get('reason')}")
            return True
        if cmd == "status":
            labels = sorted(self.tree[n].label for n in self._done) if self.tree else []
            self.write(
                f"status done={labels} holding={self.holding} questions={len(self.questions)}"
            )
            return True
        self.write("help: start OBJECT | finish | yes | no | status | quit")
        return True

    # -- loops -------------------------------------------------------------------------

    async def _watch_world(self) -> None:
        """Follow the hand's events and the task's progress in the world."""
        while self.client is not None:
            view = await self._call("hand_observe", since=self._since)
            if view is not None and view.get("ok"):
                for event in view.get("events", []):
                    self._since = max(self._since, int(event["seq"]))
                    if event.get("command_id") != self._command:
                        continue
                    if event["kind"] == "finished" and event.get("command_id"):
                        held = view["hand"].get("holding")
                        if held is not None:
                            self.write(f"holding {held}")
                        else:
                            self.write(f"placed {self.holding}")
                    elif event["kind"] == "failed":
                        self.write(f"refused {event.get('reason')}")
                self.holding = view["hand"].get("holding")
                if self.tree is not None:
                    self._done = done_leaves(self.tree, view["objects"])
            await asyncio.sleep(0.1)

    def task_done(self) -> bool:
        if self.tree is None or not self._done:
            return False
        acts = spread_activation(self.tree, self._done, (), default_potential=1.0)
        return acts[self.tree.root.id].satisfied

    async def main(self) -> None:
        await self.wait_connected()
        if self.use_world:
            try:
                address = await find_world(self, self.world_id, timeout=10.0)
            except TimeoutError:
                self.write("error no simulated world in the team; commands only print")
            else:
                self.client = SimClient(address, timeout=1.0)
                self.client.connect()
                if (await self._call("hand_observe", since=0) or {}).get("ok"):
                    self.spawn(self._watch_world(), "world", optional=True)
                else:
                    self.write(f"error the world has no hand {self.hand!r}")
                    await self.client.close()
                    self.client = None
        self.write(f"ready {self.id} team={self.team} world={self.client is not None}")
        try:
            while True:
                read = asyncio.ensure_future(self.reader.readline())
                while not read.done():
                    await asyncio.wait({read}, timeout=0.2)
                    if self.exit_when_done and self.task_done():
                        read.cancel()
                        self.write("done the task is complete")
                        return
                line = read.result()
                if not line:  # end of input
                    return
                if not await self.handle(line.decode(errors="replace")):
                    return
        finally:
            if self.client is not None:
                client, self.client = self.client, None
                await client.close()
