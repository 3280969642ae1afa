"""The simulated human (kind ``human``): a person working on the team's task tree
(seed 000 §2.3, §3.2.1).

A person has no controller to publish, so this agent never publishes task-tree state.
It acts in the world through its hand (the world's ``hand_*`` ops over ZeroMQ, like a
driver): it picks a subtask by policy, reaches for the object, grasps it and places it
at its goal; robots infer all of that from the tracked hand. It answers the robots'
dialog questions (``_/dialog`` ``dialog.ask`` → ``dialog.answer``, docs/humans.md).

Config (``[[agents]]`` with ``kind = "human"``)::

    hand = "alice"               # its hand in the world (default: the agent id)
    policy = "nearest"           # nearest | random | scripted | preferences
    script = ["cup", "tea_pot"]  # scripted: objects in order (waits until allowed)
    preferences = ["burger"]     # preferences: these first, in order; then nearest
    answer = "always_continue"   # always_continue | always_concede | probability |
                                 # scripted
    p_continue = 0.5             # probability: chance of "continue"
    answers = ["concede"]        # scripted: answers in turn (then "continue")
    answer_delay_s = 0.3         # wall seconds to think and speak
    start_delay_s = 0.0          # wall seconds before the first reach
    wait_for_robots = false      # start only once some robot moves
    think_s = 0.2                # wall seconds between subtasks
    seed = 0

Readings where the paper is silent: the human respects the tree's constraints (they
know the task, §2.3); objects a teammate holds are never chosen, nor (except by the
scripted policy, a person who has made up their mind) objects a robot's arm is seen
moving to; a human asked about
an object already in their hand always continues; a human asked stops their hand
while answering (the robot stopped too), then reaches on or, having conceded, picks
another subtask (Fig. 6 step 8), never returning to the conceded one.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from typing import Any

import numpy as np

from teamtree.agents.humans.params import HumanParams
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.treeprotocol.dialog_wire import (
    AnswerWire,
    AskWire,
    DialogWireError,
    decode,
    to_wire,
)
from teamtree.broker import LifecycleError, RequestTimeoutError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.hardware.sim_client import SimClient
from teamtree.planners.tasktree import TaskTree, spread_activation

__all__ = [
    "ANSWER_POLICIES",
    "PICK_POLICIES",
    "HumanAgent",
    "enabled_leaves",
    "find_world",
    "leaf_objects",
]

PICK_POLICIES = ("nearest", "random", "scripted", "preferences")
ANSWER_POLICIES = ("always_continue", "always_concede", "probability", "scripted")
DIALOG = "dialog"


def leaf_objects(tree: TaskTree) -> dict[str, str]:
    """Leaf id → the object its PLACE moves."""
    out = {}
    for leaf in tree.leaves:
        obj = tree[leaf].param_dict.get("object")
        if isinstance(obj, str):
            out[leaf] = obj
    return out


def enabled_leaves(tree: TaskTree, done: set[str]) -> list[str]:
    """Leaves the tree's constraints allow now that are not done (§2.2)."""
    acts = spread_activation(tree, done, (), default_potential=1.0)
    return [leaf for leaf in tree.leaves if leaf not in done and acts[leaf].level > 0]


def done_leaves(tree: TaskTree, objects: dict[str, Any]) -> set[str]:
    """Leaves whose object is at its goal."""
    return {
        leaf
        for leaf, obj in leaf_objects(tree).items()
        if isinstance(objects.get(obj), dict) and objects[obj].get("at_goal")
    }


async def find_world(agent: Agent, world_id: str | None = None, timeout: float = 30.0) -> str:
    """The ZeroMQ address in the factsheet of the team's (or `world_id`'s) world agent.
    Raises TimeoutError when none is online within `timeout` seconds."""
    async with asyncio.timeout(timeout):
        while True:
            for member_id in sorted(agent.team_view.online(kind="world")):
                if world_id is not None and member_id != world_id:
                    continue
                member = agent.team_view.get(member_id)
                address = member.factsheet.get("zmq") if member is not None else None
                if isinstance(address, str) and address:
                    return address
            await asyncio.sleep(0.05)


class HumanAgent(Agent):
    """A simulated person (module docstring)."""

    kind = "human"

    def __init__(
        self,
        *args: Any,
        tree: TaskTree,
        hand: str | None = None,
        world: str | None = None,
        policy: str = "nearest",
        script: list[str] | None = None,
        preferences: list[str] | None = None,
        answer: str = "always_continue",
        p_continue: float = 0.5,
        answers: list[str] | None = None,
        answer_delay_s: float = 0.3,
        start_delay_s: float = 0.0,
        wait_for_robots: bool = False,
        think_s: float = 0.2,
        seed: int = 0,
        poll_hz: float = 20.0,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.tree = tree
        self.hand = hand or self.id
        self.world_id = world
        self.policy = policy
        self.script = list(script or [])
        self.preferences = list(preferences or [])
        self.answer_policy = answer
        self.p_continue = p_continue
        self.answers = list(answers or [])
        self.answer_delay_s = answer_delay_s
        self.start_delay_s = start_delay_s
        self.wait_for_robots = wait_for_robots
        self.think_s = think_s
        self.poll_period = 1.0 / poll_hz
        self.rng = np.random.default_rng(seed)
        self.objects = leaf_objects(tree)
        self.client: SimClient | None = None
        self.view: dict[str, Any] | None = None
        self.target: str | None = None  #: the leaf being worked on
        self.command: str | None = None
        self.conceded: set[str] = set()
        self.placed: list[str] = []
        self.answered: list[dict[str, Any]] = []
        self._commands = itertools.count(1)
        self._answers = iter(self.answers)
        self._since = 0
        self._next_pick_at = 0.0
        self._questions = 0

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the policies and their keys; read the mission tree. Raises
        ConfigError naming the key."""
        from teamtree.agents.treeprotocol.mission_config import mission_tree

        params = decode_params(spec, config, HumanParams, hand=spec.id)
        reader = spec_reader(spec, config)
        tree = mission_tree(config)
        known = set(leaf_objects(tree).values())
        for key in ("script", "preferences"):
            unknown = [x for x in getattr(params, key) if x not in known]
            if unknown:
                raise reader.error(key, f"names {unknown[0]!r}, not an object of the task tree")
        return {"tree": tree, **params_dict(params)}

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "hand": self.hand,
            "policy": self.policy,
            "answer": self.answer_policy,
        }

    async def setup(self) -> None:
        self.on_team(DIALOG, self._on_question, kind="dialog.ask")

    # -- dialogs (seed 000 Figs. 5, 6) ----------------------------------------------

    def decide(self, node: str) -> str:
        """This human's answer to a question about `node`: "continue" or "concede"."""
        obj = self.objects.get(node)
        holding = (self.view or {}).get("hand", {}).get("holding")
        if holding is not None and holding == obj:
            return "continue"  # it is in my hand already
        match self.answer_policy:
            case "always_concede":
                return "concede"
            case "probability":
                return "continue" if self.rng.random() < self.p_continue else "concede"
            case "scripted":
                return next(self._answers, "continue")
        return "continue"

    async def _on_question(self, env: Envelope, topic: Topic) -> None:
        if env.to != self.id:
            return
        try:
            ask = decode(env.body, AskWire)
        except DialogWireError as exc:  # unanswered: the robot's timeout answers for us
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        self.spawn(self._answer(env, ask), "answer", optional=True)

    async def _answer(self, env: Envelope, ask: AskWire) -> None:
        """Stop the hand (the robot stopped too), think, answer; then go on or give up."""
        node = ask.node
        holding = (self.view or {}).get("hand", {}).get("holding")
        stopped = self.target == node and holding is None
        self._questions += 1
        try:
            if stopped:
                self.command = None  # its "cancelled" event is not a failed reach
                await self._call("hand_cancel")
            await asyncio.sleep(self.answer_delay_s)
            answer = self.decide(node)
            self.log.info(
                "human.answered",
                robot=env.sender,
                node=node,
                label=ask.label,
                answer=answer,
            )
            self.answered.append({"robot": env.sender, "node": node, "answer": answer})
            if answer == "concede":
                self.conceded.add(node)
                if self.target == node:
                    self.target, self.command = None, None
            await self.reply(env, "dialog.answer", to_wire(AnswerWire(ask.dialog_id, answer)))
            if answer == "continue" and stopped and self.target == node:
                await self._reach(node)
        finally:
            self._questions -= 1

    # -- acting ------------------------------------------------------------------------

    async def _call(self, op: str, **fields: Any) -> dict[str, Any] | None:
        if self.client is None:
            return None
        try:
            return await self.client.request(op, hand=self.hand, **fields)
        except (RequestTimeoutError, LifecycleError) as exc:
            self.log.warning("human.world_silent", op=op, error=str(exc))
            return None

    def choose(self, view: dict[str, Any], done: set[str]) -> str | None:
        """The next leaf by this human's policy, or None (nothing allowed now)."""
        objects = view["objects"]
        me = self.hand
        seen_busy = {r.get("object") for r in view.get("robots", {}).values()}

        def free(leaf: str) -> bool:
            name = self.objects.get(leaf, "")
            obj = objects.get(name, {})
            if self.policy != "scripted" and name in seen_busy:
                return False  # a robot's arm is visibly on its way to it
            return obj.get("held_by") in (None, me) and leaf not in self.conceded

        allowed = [leaf for leaf in enabled_leaves(self.tree, done) if free(leaf)]
        if not allowed:
            return None
        hand = view["hand"]["position"]

        def distance(leaf: str) -> float:
            return math.dist(hand, objects[self.objects[leaf]]["position"])

        match self.policy:
            case "random":
                return str(self.rng.choice(sorted(allowed)))
            case "scripted":
                for obj in self.script:
                    leaf = next((n for n, o in self.objects.items() if o == obj), None)
                    if leaf is None or leaf in done or leaf in self.conceded:
                        continue
                    return leaf if leaf in allowed else None  # wait until it is allowed
                return min(allowed, key=distance)
            case "preferences":
                for obj in self.preferences:
                    for leaf in allowed:
                        if self.objects[leaf] == obj:
                            return leaf
        return min(allowed, key=distance)

    async def _step(self, loop_time: float) -> bool:
        """One look at the world and at most one action; True when the task is done."""
        view = await self._call("hand_observe", since=self._since)
        if view is None or not view.get("ok"):
            return False
        self.view = view
        for event in view.get("events", []):
            self._since = max(self._since, int(event["seq"]))
            if event.get("command_id") != self.command:
                continue
            if event["kind"] == "finished" and self.target is not None:
                self.log.info("human.placed", node=self.target, label=self.tree[self.target].label)
                self.placed.append(self.target)
                self.target, self.command = None, None
                self._next_pick_at = loop_time + self.think_s
            elif event["kind"] == "failed":
                self.log.info("human.reach_failed", node=self.target, reason=event.get("reason"))
                self.target, self.command = None, None
        done = done_leaves(self.tree, view["objects"])
        if self.tree.root.id in self._satisfied(done):
            return True
        if self.target is not None and self.command is not None:
            obj = view["objects"][self.objects[self.target]]
            mine = view["hand"].get("holding") == self.objects[self.target]
            if not mine and (obj.get("at_goal") or obj.get("held_by") not in (None, self.hand)):
                self.log.info("human.gave_up", node=self.target, reason="taken by a teammate")
                await self._call("hand_cancel")
                self.target, self.command = None, None
            return False
        if loop_time < self._next_pick_at:
            return False
        if self._questions:
            return False  # talking with a robot
        leaf = self.choose(view, done)
        if leaf is None:
            return False
        if not await self._reach(leaf):
            self._next_pick_at = loop_time + self.think_s
        return False

    async def _reach(self, leaf: str) -> bool:
        """Reach for `leaf`'s object and place it; False when the world refuses."""
        command = f"{self.hand}-{self.session}-{next(self._commands)}"
        reply = await self._call("hand_reach", command_id=command, object=self.objects[leaf])
        if reply is None or not reply.get("ok"):
            return False
        self.target, self.command = leaf, command
        self.log.info("human.started", node=leaf, label=self.tree[leaf].label)
        return True

    def _satisfied(self, done: set[str]) -> set[str]:
        acts = spread_activation(self.tree, done, (), default_potential=1.0)
        return {n for n, a in acts.items() if a.satisfied}

    async def main(self) -> None:
        await self.wait_connected()
        address = await find_world(self, self.world_id, timeout=60.0)
        loop = asyncio.get_running_loop()
        async with SimClient(address, timeout=1.0) as client:
            self.client = client
            reply = await self._call("hand_observe", since=0)
            if reply is None or not reply.get("ok"):
                raise LifecycleError(f"the world at {address} has no hand {self.hand!r}")
            self._since = int(reply.get("seq", 0))
            self.log.info("human.ready", hand=self.hand, world=address, policy=self.policy)
            await asyncio.sleep(self.start_delay_s)
            while self.wait_for_robots:
                view = await self._call("hand_observe", since=self._since)
                robots = (view or {}).get("robots", {})
                if any(r.get("busy") for r in robots.values()):
                    break
                await asyncio.sleep(self.poll_period)
            while not await self._step(loop.time()):
                await asyncio.sleep(self.poll_period)
            self.log.info("mission.done", placed=[self.tree[n].label for n in self.placed])
            self.client = None
