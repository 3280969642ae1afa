"""A task-tree robot's human teammates (seed 000 §2.3, Figs. 4-6; docs/humans.md):
a simulated controller per human, and the dialogs on a conflict.

For each human teammate the robot keeps a ``HumanModel`` updated only from the hand
tracks in its driver's observations. In the robot's ``TaskController`` a human is a
peer whose claim replies the robot answers itself, from the model ("peer checks
against the model"): a leaf active in the model is reported ``working`` by the human,
so a robot checking it concedes (Fig. 5 step 2). A leaf that becomes active in the
model while this robot works on it is a conflict: the robot pauses and asks the human
over the dialog channel (Fig. 5 step 5). "continue" (or no answer by the deadline): the
robot cancels, lowers the leaf's activation and picks another (Fig. 5 steps 6-8).
"concede": the robot resumes (Fig. 6) and the model no longer activates that leaf for
the human.

Wire: ``_/dialog`` ``dialog.ask`` (a request to one human, answered ``dialog.answer``),
``<me>/dialog`` ``dialog.resolved``, ``<me>/belief/<human>`` ``tom.belief`` (retained).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import msgspec

from teamtree.agents.runtime.observation_wire import ObservationBody
from teamtree.agents.tasktree.robot_host import RobotHost
from teamtree.agents.treeprotocol.dialog_wire import (
    AnswerWire,
    AskWire,
    BeliefWire,
    DialogWireError,
    ResolvedWire,
)
from teamtree.agents.treeprotocol.dialog_wire import decode as decode_dialog
from teamtree.agents.treeprotocol.dialog_wire import to_wire as dialog_to_wire
from teamtree.broker import TeamtreeError
from teamtree.planners.tasktree import (
    BehaviourFinished,
    Claim,
    ClaimReply,
    HandSample,
    HumanModel,
    Interest,
    InterestAck,
    ModelUpdate,
    NodeReport,
    NodeStatus,
    PeerState,
    Transition,
)

__all__ = ["ANSWERS", "BELIEF", "DIALOG", "HumanTeammates"]

DIALOG = "dialog"
BELIEF = "belief"
ANSWERS = ("continue", "concede")


class HumanTeammates:
    """The models of `humans` (human id -> the hand the world names for them) that
    `host` keeps, and its dialogs with them (`dialog_timeout_s`: how long a question
    waits for its answer; then the robot yields)."""

    def __init__(self, host: RobotHost, humans: dict[str, str], dialog_timeout_s: float):
        self.host = host
        self.humans = dict(humans)
        self.dialog_timeout_s = dialog_timeout_s
        self.models = {h: HumanModel(host.tree, h, hand) for h, hand in self.humans.items()}
        self.dialog_log: list[dict[str, Any]] = []
        self.local: list[Any] = []  # replies and acks the models give, for the controller
        self._stamp: dict[str, tuple[int, int, str]] = {}
        self._dialogs: dict[str, asyncio.Task[None]] = {}

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self.humans

    def claimed(self, claim: Claim, to: str | None) -> None:
        """A claim sent to `to` (None: the team): each human it asks answers from
        their model (Fig. 4/5 step 2)."""
        for human in self.humans:
            if to in (None, human):
                self.local.append(self._model_reply(claim, human))

    def declared(self, interest: Interest, to: str | None) -> None:
        """A declaration of interest sent to `to`: each human it asks acknowledges it,
        with an interest in every leaf (a person may take any leaf: the model says so)."""
        for human in self.humans:
            if to in (None, human):
                own = Interest(human, interest.stamp, tuple(self.host.tree.leaves))
                self.local.append(InterestAck(human, self.host.id, interest.stamp, own))

    def observe(self, obs: ObservationBody) -> list[tuple[str, ModelUpdate]]:
        """Feed each human model the hand track in one observation."""
        if not self.humans:
            return []
        out = []
        c = self.host.controller
        done = c.done if c is not None else set()
        views = {name: msgspec.structs.asdict(o) for name, o in obs.objects.items()}
        for human, hand in self.humans.items():
            view = obs.hands.get(hand)
            if view is None:
                continue
            samples = [HandSample(r[0], (r[1], r[2], r[3])) for r in view.track]
            if not samples:
                samples = [HandSample(obs.t, view.position)]
            model = self.models[human]
            before = model.belief()
            update = model.observe(obs.t, samples, views, view.holding, done)
            if update or model.belief()["intent_object"] != before["intent_object"]:
                out.append((human, update))
        return out

    def _model_reply(self, claim: Claim, human: str) -> ClaimReply:
        """The simulated human controller's answer to our claim (Fig. 4/5 step 2)."""
        model = self.models[human]
        c = self.host.controller
        assert c is not None
        reports = []
        others = sorted(c.conflicts(claim.node) - {claim.node})
        for node in [claim.node, *others]:
            if node in model.done:
                reports.append(NodeReport(node, PeerState.DONE))
            elif node == model.active:
                stamp = self._stamp.get(human) or self.host._now()
                reports.append(NodeReport(node, PeerState.WORKING, agent=human, stamp=stamp))
            elif node == claim.node:
                reports.append(NodeReport(node, PeerState.NONE))
        return ClaimReply(
            claim.claim_id, claim.node, claim.claimant, human, tuple(reports), claim.round
        )

    async def apply(self, human: str, update: ModelUpdate) -> None:
        """Log and publish the belief; carry the model's changes into the controller."""
        host = self.host
        belief = self.models[human].belief()
        host.log.info("tom.belief", reason=update.reason or None, **belief)
        body = dialog_to_wire(BeliefWire(**belief))  # type: ignore[arg-type]
        await host.publish(BELIEF, "tom.belief", body, recipient=human, retain=True)
        if host.controller is None:
            return
        for node in update.done:
            await host.feed(Transition(node, human, NodeStatus.DONE, host._now()))
        await self.reconcile(human)

    async def reconcile(self, human: str) -> None:
        """Make the controller's view of `human` match the model: release leaves the
        human left, mark the active one worked on, or open a dialog on a conflict."""
        host = self.host
        c = host.controller
        if c is None:
            return
        active = self.models[human].active
        for node, (agent, _stamp) in list(c.working.items()):
            if agent == human and node != active:
                await host.feed(Transition(node, human, NodeStatus.INACTIVE, host._now()))
        if active is None or active in c.done:
            return
        if active == c.my_working:
            if active not in self._dialogs:
                self._dialogs[active] = host.spawn(self._dialog(human, active), "dialog")
            return
        if active in self._dialogs or c.working.get(active, ("",))[0] == human:
            return
        stamp = host._now()
        self._stamp[human] = stamp
        if c.pending_claim is not None and c.pending_claim.node == active:
            host.log.info("human.conflict_conceded", human=human, node=active)
        await host.feed(Transition(active, human, NodeStatus.WORKING, stamp))

    async def _ask(self, human: str, body: dict[str, Any]) -> tuple[str, str]:
        """Ask `human` (the ``dialog.ask`` `body`): (answer, how it came)."""
        host = self.host
        try:
            reply = await host.request(
                DIALOG, "dialog.ask", body, to=human, timeout=self.dialog_timeout_s
            )
        except TeamtreeError:
            return "continue", "timeout"
        try:
            answer = decode_dialog(reply.body, AnswerWire).answer
        except DialogWireError as exc:
            host._drop("malformed", DIALOG, reply.sender, str(exc))
            answer = ""
        return (answer, "answered") if answer in ANSWERS else ("continue", "invalid")

    async def _dialog(self, human: str, node: str) -> None:
        """Ask `human` whether they continue with `node` (Figs. 5, 6): the robot pauses
        meanwhile; "continue" or no answer → the robot yields, "concede" → it resumes."""
        host = self.host
        leaf = host.tree[node]
        obj = leaf.param_dict.get("object")
        dialog_id = f"{host.id}-{uuid.uuid4().hex[:10]}"
        ask = AskWire(
            dialog_id,
            host.id,
            human,
            node,
            leaf.label,
            obj,
            f"We both went for {leaf.label}. Do you want to continue with it?",
            list(ANSWERS),
            self.dialog_timeout_s,
        )
        try:
            await host._command("behaviour.pause", node)
            host.log.info("dialog.asked", human=human, node=node, label=leaf.label, id=dialog_id)
            start = time.monotonic()
            answer, how = await self._ask(human, dialog_to_wire(ask))
            rtt_ms = round((time.monotonic() - start) * 1000, 1)
            robot_continues = answer == "concede"
            resolved = dialog_to_wire(
                ResolvedWire(
                    dialog_id, host.id, human, node, leaf.label, answer, how, rtt_ms,
                    robot_continues,
                )
            )  # fmt: skip
            self.dialog_log.append(resolved)
            host.log.info("dialog.resolved", **{k: v for k, v in resolved.items() if k != "robot"})
            await host.publish(DIALOG, "dialog.resolved", resolved)
            c = host.controller
            if c is None or c.my_working != node:
                return  # finished or taken meanwhile
            if robot_continues:
                self.models[human].concede(node)
                await host._command("behaviour.resume", node)
                await self.reconcile(human)
            else:
                await host._command("behaviour.cancel", node)
                await host.feed(BehaviourFinished(node, False))  # lowers its activation
                stamp = host._now()
                self._stamp[human] = stamp
                await host.feed(Transition(node, human, NodeStatus.WORKING, stamp))
                await self.reconcile(human)
        finally:
            self._dialogs.pop(node, None)
