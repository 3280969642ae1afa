"""The LTL robot (kind ``ltl_robot``, seed 003 §V): executes the plan the planner sends
with a small behaviour tree, and reacts to disturbances with strategies R1-R4.

The world is the robot's own simulated body on the hospital's topological map: its
transition system (``hospital_robot``) says which moves and actions exist, and an
action of weight ``w`` takes ``w / time_factor`` wall seconds (weights are seconds of
simulated time). An interrupted action is not done: the robot is still in the state
it was leaving. Wire: docs/ltl.md.

Behaviour tree (py_trees; our leaves in ``behaviours``, built by ``robot_tree``; the
strategies are ``strategies``), ticked at ``bt_hz``::

    Repeat (until the planner's verdict)
    └── Sequence (memory)
        ├── ? has plan                      (LTL precondition: once per step)
        └── Sequence (no memory)            (every tick)
            ├── Recovery  ? upright @20 Hz          → R1 recovery stand  (legged only)
            ├── Recovery  ? operational @10 Hz      → R2 request global reallocation
            ├── Recovery  ? on planned state @10 Hz → R3 request local (else global)
            ├── Recovery  ? environment known @5 Hz → R4 request local (else global)
            └── Sequence (memory)
                ├── ? not held, ? teammates I wait for are done
                └── ! execute next plan action (or report the plan done)

Disturbances (how they are checked and what they set) are in ``disturbances``.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from py_trees.common import Status

from teamtree.agents.ltl.behaviours import forget_checks, render_tree
from teamtree.agents.ltl.disturbances import DisturbanceHandling
from teamtree.agents.ltl.ltl_wire import (
    DisturbWire,
    DoneWire,
    LtlWireError,
    MapWire,
    PlanMessageWire,
    PlanReceivedWire,
    StepWire,
    SyncReplyWire,
    SyncWire,
    VerdictWire,
    decode,
    to_wire,
)
from teamtree.agents.ltl.params import LtlRobotParams
from teamtree.agents.ltl.plan_wire import PlanWireError
from teamtree.agents.ltl.planner import (
    DISTURB,
    MAP,
    PLAN,
    STATUS,
    SYNC,
    TRACE,
    VERDICT,
    LtlRobotSpec,
    ltl_mission,
    plan_digest,
    plan_from_wire,
)
from teamtree.agents.ltl.robot_tree import build_tree
from teamtree.agents.ltl.strategies import Strategies
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.params import decode_params
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.ltl import ROBOT_TYPES, RobotPlan, TSState

__all__ = ["LtlRobotAgent"]

# -- the agent ------------------------------------------------------------------------


class LtlRobotAgent(DisturbanceHandling, Agent):
    """One robot of an LTL mission. ``main`` ticks the behaviour tree until the planner's
    verdict; exit 0 when the mission is satisfied, 1 when it is not or is impossible."""

    kind = "ltl_robot"

    def __init__(
        self,
        *args: Any,
        robot: LtlRobotSpec,
        planner: str,
        time_factor: float = 20.0,
        bt_hz: float = 50.0,
        recovery_s: float = 5.0,
        replan_timeout_s: float = 10.0,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.spec = robot
        self.ts = robot.model().ts
        self.planner = planner
        self.time_factor = time_factor
        self.bt_hz = bt_hz
        self.recovery_s = recovery_s
        self.replan_timeout_s = replan_timeout_s
        self.run: str | None = None
        self.plan: RobotPlan | None = None
        self.version: tuple[int, int] = (-1, -1)
        self.step = 0
        self.current: TSState = robot.start
        self.segments: dict[int, list[TSState]] = {}
        self.plan_trace: list[TSState] = []
        self.fallen = False
        self.failed = False
        self.failure_acked = False
        self.blocked: set[tuple[str, str]] = set()
        self.unreported: set[tuple[str, str]] = set()
        self.private_edges: set[tuple[str, str]] = set()
        """Edges blocked for this robot only (``scope = "robot"``): not on the team map."""
        self.hold_epoch: int | None = None
        self.peer_done: dict[str, tuple[int, int]] = {}
        self.reported: tuple[int, int] | None = None
        self.verdict: VerdictWire | None = None
        self.deferred: list[DisturbWire] = []
        self._offered: PlanMessageWire | None = None  # newest plan body not yet accepted
        self.strategies = Strategies(self)
        self.bt, self._work = build_tree(self)

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``type``, ``start``, ``bt_hz``, ``recovery_s``, ``replan_timeout_s`` and
        the mission. Raises ConfigError naming the key."""
        mission = ltl_mission(config)
        params = decode_params(spec, config, LtlRobotParams)
        return {
            "robot": mission.robot(spec.id),
            "planner": mission.planner,
            "time_factor": mission.time_factor,
            "bt_hz": params.bt_hz,
            "recovery_s": params.recovery_s,
            "replan_timeout_s": params.replan_timeout_s,
        }

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "type": self.spec.type,
            "legged": self.spec.legged,
            "modes": list(ROBOT_TYPES[self.spec.type][1]),
            "start": list(self.spec.start),
        }

    # -- the tree ----------------------------------------------------------------------

    def _interrupt(self) -> None:
        """Cut off the running plan action and force every check to be made afresh;
        running strategies (R1-R4) go on."""
        self._work.stop(Status.INVALID)
        forget_checks(self.bt)

    @property
    def plan_finished(self) -> bool:
        return self.plan is not None and self.step >= len(self.plan.actions)

    # -- wiring ------------------------------------------------------------------------

    async def setup(self) -> None:
        self.on_agents(PLAN, self._on_plan, kind="ltl.plan", addressed=True)
        self.on_agents(VERDICT, self._on_verdict, kind="ltl.verdict")
        self.on_agents(STATUS, self._on_peer_status, kind="ltl.done")
        self.on_team(SYNC, self._on_sync, kind="ltl.sync")
        self.on_team(DISTURB, self._on_disturb, kind="ltl.disturb")
        self.on_team(MAP, self._on_map, kind="ltl.map")
        self.log.debug("ltl.robot_tree", type=self.spec.type, tree="\n" + render_tree(self.bt))

    async def main(self) -> None:
        period = 1.0 / self.bt_hz
        while self.verdict is None:
            self.bt.tick_once()
            await asyncio.sleep(period)
        self.bt.stop(Status.INVALID)
        ok = self.verdict.satisfied
        self.log.info(
            "ltl.robot_finished",
            satisfied=ok,
            impossible=self.verdict.impossible,
            reason=self.verdict.reason,
            strategies=dict(self.strategies.counts),
            failed=self.failed,
            state=list(self.current),
        )
        self.exit_code = 0 if ok else 1

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if agent_id == self.planner and new is Presence.ONLINE and self._offered is not None:
            await self._accept(self._offered)

    # -- plans ---------------------------------------------------------------------

    def _planner_session(self) -> str | None:
        member = self.team_view.get(self.planner)
        return None if member is None or not member.online else member.session

    async def _on_plan(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.planner:
            return
        try:
            msg = decode(env.body, PlanMessageWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        await self._accept(msg)

    async def _accept(self, msg: PlanMessageWire) -> None:
        """Take a plan from the live planner session if it is newer than ours; plans
        from an old session (retained from an earlier run) wait for its presence."""
        run = msg.run
        if run != self._planner_session():
            self._offered = msg
            return
        self._offered = None
        version = (msg.epoch, msg.seq)
        try:
            plan = plan_from_wire(msg.plan)
        except PlanWireError as exc:  # names the field
            self._drop("malformed", PLAN, self.planner, f"ltl.plan: {exc}")
            return
        if run == self.run and version <= self.version:
            return
        if plan.robot != self.id:
            self.log.warning("ltl.plan_not_mine", robot=plan.robot)
            return
        if run != self.run:
            self.run, self.segments, self.version = run, {}, (-1, -1)
        self._interrupt()
        if version[0] > self.version[0]:
            self.segments[version[0]] = [self.current]
        if plan.states[0] != self.current:
            self.log.warning(
                "ltl.plan_start_mismatch", plan_start=list(plan.states[0]), at=list(self.current)
            )
        self.plan, self.version, self.step = plan, version, 0
        self.plan_trace = [self.current]
        if self.hold_epoch is not None and version[0] > self.hold_epoch:
            self.hold_epoch = None
        self.failure_acked = self.id in msg.dropped
        digest = plan_digest(plan)
        self.log.info(
            "ltl.plan_received",
            epoch=version[0],
            seq=version[1],
            strategy=msg.strategy,
            digest=digest,
            waits_for=list(plan.waits_for),
            actions=" ".join(plan.actions) or "(idle)",
        )
        sent = msg.plan.get("digest")
        received = PlanReceivedWire(run, version[0], version[1], digest, sent, msg.plan)
        await self.publish(STATUS, "ltl.plan_received", to_wire(received))
        if self.hold_epoch is None:
            for disturbance in self.deferred:
                await self._apply_disturbance(disturbance)
            self.deferred.clear()

    async def _on_map(self, env: Envelope, topic: Topic) -> None:
        """Corridors another robot found blocked: block them here too and, if the rest
        of this robot's plan crosses one, ask for R4 now rather than at the corridor."""
        if env.sender != self.planner:
            return
        try:
            msg = decode(env.body, MapWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if msg.run != self._planner_session():
            return
        edges = msg.blocked
        ahead = set(self._moves_ahead())
        for a, b in edges:
            if (a, b) in self.blocked:
                continue
            self.blocked |= {(a, b), (b, a)}
            crossing = [e for e in ((a, b), (b, a)) if e in ahead]
            self.log.info("ltl.map_blocked", edge=[a, b], on_my_plan=bool(crossing))
            self.unreported |= set(crossing)

    def _moves_ahead(self) -> list[tuple[str, str]]:
        """Region changes left on the current plan, in order."""
        if self.plan is None:
            return []
        states = self.plan.states[self.step :]
        return [(s.region, t.region) for s, t in itertools.pairwise(states) if s.region != t.region]

    async def _on_verdict(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.planner:
            return
        try:
            verdict = decode(env.body, VerdictWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if verdict.run in (self.run, self._planner_session()):
            self.verdict = verdict  # never a stale retained one from an earlier run

    async def _on_peer_status(self, env: Envelope, topic: Topic) -> None:
        try:
            done = decode(env.body, DoneWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if done.run == self.run:
            self.peer_done[env.sender] = (done.epoch, done.seq)

    async def _on_sync(self, env: Envelope, topic: Topic) -> None:
        """Global reallocation: stop where we are and report this epoch's trace."""
        if env.sender != self.planner:
            return
        try:
            sync = decode(env.body, SyncWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if sync.run != self.run:
            return
        epoch = sync.epoch
        self.hold_epoch = epoch if self.hold_epoch is None else max(epoch, self.hold_epoch)
        self._interrupt()
        segment = self.segments.get(epoch, [self.current])
        self.log.info("ltl.sync", epoch=epoch, at=list(self.current), steps=len(segment) - 1)
        reply = SyncReplyWire(list(segment), self.current, self.failed)
        await self.reply(env, "ltl.sync_reply", to_wire(reply))

    # -- actions ---------------------------------------------------------------------

    async def _record(self, state: TSState, action: str) -> None:
        self.current = state
        self.plan_trace.append(state)
        self.segments.setdefault(self.version[0], [state]).append(state)
        assert self.run is not None
        index = len(self.segments[self.version[0]]) - 1
        step = StepWire(self.run, self.version[0], self.version[1], index, action, state)
        await self.publish(TRACE, "ltl.step", to_wire(step))

    async def execute_step(self) -> bool:
        """One plan action in simulated time, or report the plan done."""
        plan = self.plan
        if plan is None:
            return False
        if self.plan_finished:
            if self.reported != self.version:
                self.reported = self.version
                self.log.info("ltl.plan_done", epoch=self.version[0], seq=self.version[1])
                assert self.run is not None
                segments = {str(e): list(seg) for e, seg in self.segments.items()}
                done = DoneWire(self.run, *self.version, self.current, segments)
                await self.publish(STATUS, "ltl.done", to_wire(done))
            await asyncio.sleep(0.05)
            return True
        action, target = plan.actions[self.step], plan.states[self.step + 1]
        edge = (self.current.region, target.region)
        if edge in self.blocked:
            self.log.warning("ltl.edge_blocked", edge=list(edge), action=action)
            self.unreported.add(edge)
            return False
        if self.ts.transition(self.current, target) is None:
            self.log.warning("ltl.no_transition", at=list(self.current), to=list(target))
            await asyncio.sleep(0.1)
            return False
        version = self.version
        await asyncio.sleep(plan.weights[self.step] / self.time_factor)
        if self.version != version or self.plan is not plan:
            return False
        self.step += 1
        await self._record(target, action)
        return True
