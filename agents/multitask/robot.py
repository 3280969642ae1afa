"""The multitask robot: a robot runs a seed 004 task tree with its own resource
allocator, executing behaviours in simulated time and publishing every transition.

Teams: each robot allocates its own resources, and peers coordinate
*units* of the tree (``planners.multitask.units``: the THEN chains one body must run)
with the seed 000 peer rule, a ``TaskController`` over the unit tree that may hold
several units at once. A robot claims a unit when its allocator first grants a leaf
of it; units that peers hold or finished are ``blocked`` for its allocator; a unit a
peer finished is adopted (its leaves done, its objects placed). Alone, every claim
is won at once and the run is exactly ``simulate(problem, planner)``.

Wire (see docs/multitask.md):

- ``_/mission``        ``mission.tree``          retained: ``{kind: "multitask", tree, text, ...}``
- ``<me>/state``       ``node.transition``       leaves: ``{node, agent, status:
                                                 working|done|skipped, stamp, step, sim_s, ...}``
- ``<me>/resources``   ``multitask.resources``   retained: resource rows and the body's world
- ``<me>/snapshot``    ``node.snapshot``         retained: done, skipped and working leaves
- ``<me>/events``      ``multitask.summary``     the run's figures next to one-at-a-time
- ``_/claims``         ``unit.claim``            the peer rule over units, bodies as seed
- ``<me>/claim_reply/<claimant>`` ``unit.claim_reply``  000's ``node.claim``/``claim_reply``
- ``<me>/units``       ``unit.transition``       units: working / done / inactive, + leaves
- ``<me>/unit_snapshot`` ``unit.snapshot``       retained: units done and worked (a list)

The body is simulated inside the agent (the world service only knows PLACE): a
behaviour takes the planner's ``Durations`` in simulated seconds, slept for
``time_factor`` wall seconds each. One step = the behaviours granted together; the
next round starts when the step's last behaviour is done: the agent drives the
planner's ``RoundStepper``, the same loop ``simulate`` runs. There
is no shared world: a unit released by a robot that died is redone from its first
leaf, with its object where the mission put it.

A unit whose holder's Last Will arrived is taken over only ``takeover_s`` (default
4 s, the seed 000 robots' lease plus margin) later, never on presence alone: a robot
whose network dropped may still be moving (docs/protocol.md, "Leases").

With peers, ``lookahead`` and ``optimal`` fall back to greedy rounds (their plans
assume the robot does every unit); alone they replay their plan.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import msgspec

from teamtree.agents.multitask.params import MultitaskParams
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.runtime.params import decode_params
from teamtree.agents.treeprotocol.mission_wire import mission_tree_body
from teamtree.agents.treeprotocol.peer_member import PeerRuleMember
from teamtree.agents.treeprotocol.peer_wire import (
    LeafSnapshotWire,
    LeafTransitionWire,
    UnitTransitionWire,
    claim_to_wire,
    reply_to_wire,
    snapshot_to_wire,
)
from teamtree.broker import ConfigError, PlanningError, SpecificationError
from teamtree.planners.multitask import (
    Mode,
    MultitaskAllocator,
    MultitaskProblem,
    MultitaskState,
    Request,
    RoundStepper,
    RunResult,
    adopt_peer_unit,
    co_located_units,
    exhaustive_plan,
    lookahead_plan,
    plan_policy,
    problem_from_mission,
    simulate,
    unit_of,
    unit_tree,
)
from teamtree.planners.tasktree import (
    AbortBehaviour,
    BehaviourFinished,
    ClaimDecided,
    NodeStatus,
    PauseBehaviour,
    PresenceChanged,
    PublishClaim,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    StartBehaviour,
    TaskController,
    Tick,
    Want,
)

MISSION = "mission"
STATE = "state"
RESOURCES = "resources"
SNAPSHOT = "snapshot"
EVENTS = "events"
CLAIMS = "claims"
CLAIM_REPLY = "claim_reply"
UNITS = "units"
UNIT_SNAPSHOT = "unit_snapshot"
LOST_CLAIM_HOLD_S = 1.0
"""Wall seconds a unit whose claim was lost stays out of this robot's rounds (the
winner's ``working`` transition is on its way)."""
PLANNERS = ("greedy", "lookahead", "optimal", "sequential")

Policy = Callable[[MultitaskAllocator, MultitaskState], Sequence[Request]]


def multitask_problem(config: TeamConfig) -> MultitaskProblem:
    """The problem of a ``[mission] kind = "multitask"`` config. Raises ConfigError."""
    if config.mission.kind != "multitask":
        raise ConfigError(
            f'is {config.mission.kind!r}; a multitask_robot needs kind = "multitask"',
            path=str(config.path),
            key="mission.kind",
        )
    try:
        return problem_from_mission(config.mission.params, where="mission")
    except SpecificationError as exc:
        text = str(exc)
        head, sep, rest = text.partition(": ")
        key = head.split()[0] if sep and head.startswith("mission") else "mission"
        message = rest if key != "mission" else text
        raise ConfigError(message, path=str(config.path), key=key) from None


class MultitaskRobot(PeerRuleMember):
    """A robot that multitasks by dynamic resource allocation (seed 004), alone or in a
    team that shares the tree's units by the peer rule (see the module docstring).

    Parameters: ``planner`` ("greedy" = the paper's method, "lookahead", "optimal",
    or "sequential" = one behaviour at a time), ``time_factor`` (wall seconds per
    simulated second; 0 runs as fast as the broker allows), ``start`` (this robot's
    start, default the mission's), ``rule`` (the peer rule's claim order, "earliest"
    or "potential"), ``bundle`` (in a team, also claim free units whose next move goes
    to the same spot, as many as there are grippers for them: ``co_located_units``),
    ``start_timeout_s`` (how long to wait for the config's services
    and other multitask robots before starting), ``max_expansions`` (the lookahead's
    search budget). ``planner`` and ``time_factor`` are overridable with ``--set``.
    """

    kind = "multitask_robot"
    overridable: ClassVar[frozenset[str]] = frozenset({"planner", "time_factor", "bundle"})

    def __init__(
        self,
        *args: Any,
        problem: MultitaskProblem,
        planner: str = "greedy",
        time_factor: float = 0.1,
        expect_services: Sequence[str] = (),
        expect_peers: Sequence[str] = (),
        rule: str = "earliest",
        bundle: bool = True,
        start_timeout_s: float = 10.0,
        max_expansions: int = 200_000,
        takeover_s: float = 4.0,
        roster: list[str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        if roster is not None:
            self.roster = frozenset(roster) | {self.id}
        self.takeover_s = takeover_s
        if planner not in PLANNERS:
            raise ValueError(f"planner {planner!r}; expected one of {', '.join(PLANNERS)}")
        self.problem = problem
        self.planner = planner
        self.time_factor = time_factor
        self.expect_services = sorted(set(expect_services) - {self.id})
        self.expect_peers = sorted(set(expect_peers) - {self.id})
        self.rule = rule
        self.bundle = bundle
        self.start_timeout_s = start_timeout_s
        self.max_expansions = max_expansions
        mode = Mode.SEQUENTIAL if planner == "sequential" else Mode.MULTITASK
        self.allocator = MultitaskAllocator(problem, mode=mode)
        self.stepper = RoundStepper(self.allocator, strict=True)
        """The planner's round loop; this agent drives it in wall time."""
        self.units = unit_of(problem.tree)
        """Each leaf's unit (the node peers claim)."""
        self.unit_tree = unit_tree(problem.tree)
        self.controller: TaskController | None = None
        self.result: RunResult | None = None
        """The run as executed (steps, skips, simulated time), once the tree is done."""
        self.units_done: dict[str, str] = {}
        """Unit -> the robot that finished it (this one or a peer), as this robot saw it."""
        self.claims = {"won": 0, "lost": 0}
        self._backlog: list[Any] = []
        self._decisions: dict[str, asyncio.Future[tuple[bool, str]]] = {}
        self._lost_until: dict[str, float] = {}
        self._paused_units: set[str] = set()
        self._adopted: set[str] = set()
        self._changed = asyncio.Event()
        self._follow_plan = planner in ("lookahead", "optimal")
        self._status = StatusReporter(self, "multitask", "units")

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the keys and read the mission's problem. Raises ConfigError."""
        params = decode_params(spec, config, MultitaskParams)
        problem = multitask_problem(config)
        if params.start is not None:
            problem = dataclasses.replace(problem, start=params.start)
        return {
            "problem": problem,
            "planner": params.planner,
            "time_factor": params.time_factor,
            "expect_services": [s.id for s in config.services],
            "expect_peers": [m.id for m in config.members if m.kind == cls.kind],
            "rule": params.rule,
            "bundle": params.bundle,
            "takeover_s": params.takeover_s,
            "roster": [m.id for m in config.members],
            "start_timeout_s": params.start_timeout_s,
            "max_expansions": params.max_expansions,
        }

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "profile": self.problem.profile.kind,
            "resources": self.problem.profile.initial_state().to_rows(),
            "planner": self.planner,
            "time_factor": self.time_factor,
            "start": list(self.problem.start),
        }

    # -- the peer rule over units -------------------------------------------------

    async def setup(self) -> None:
        self.subscribe_peer_rule(
            claims=CLAIMS,
            replies=CLAIM_REPLY,
            transitions=UNITS,
            snapshots=UNIT_SNAPSHOT,
            kinds="unit",
        )

    def _now(self) -> tuple[int, int, str]:
        s = self.clock.now()
        return (s.wall_ms, s.logical, s.node)

    async def feed(self, event: Any) -> None:
        """Hand one event to the unit controller and carry out its actions."""
        if self.controller is None:
            self._backlog.append(event)
            return
        for action in self.controller.handle(event, self._now()):
            await self._act(action)
        if not isinstance(event, Tick):
            self._changed.set()

    async def _act(self, action: Any) -> None:
        match action:
            case PublishClaim(claim=claim, to=to):
                if to is None:
                    await self.publish(CLAIMS, "unit.claim", claim_to_wire(claim), team=True)
                else:  # only the peer that must answer receives it
                    body = claim_to_wire(claim)
                    await self.publish(CLAIMS, "unit.claim", body, recipient=to, to=to)
            case PublishReply(reply=reply):
                await self.publish(
                    CLAIM_REPLY, "unit.claim_reply", reply_to_wire(reply), recipient=reply.claimant
                )
            case PublishTransition(transition=t):
                leaves = list(self.problem.tree.leaf_ids(t.node))
                unit = UnitTransitionWire(t.node, t.agent, t.status, list(t.stamp), leaves=leaves)
                await self.publish(UNITS, "unit.transition", msgspec.to_builtins(unit))
            case PublishSnapshot(snapshot=snap):
                await self.publish(
                    UNIT_SNAPSHOT, "unit.snapshot", snapshot_to_wire(snap), retain=True
                )
            case StartBehaviour():
                pass  # a won claim: the executor is waiting for it (ClaimDecided)
            case PauseBehaviour(node=unit):
                self._paused_units.add(unit)
                self.log.warning("unit.paused", unit=unit, reason="broker lost")
            case ResumeBehaviour(node=unit):
                self._paused_units.discard(unit)
                self.log.info("unit.resumed", unit=unit)
            case AbortBehaviour(node=unit, reason=reason):
                self._paused_units.discard(unit)
                self.log.warning("unit.aborted", unit=unit, reason=reason)
            case ClaimDecided(claim=claim, won=won, reason=reason):
                self.claims["won" if won else "lost"] += 1
                if claim.claim_id:  # a claim that went out (not refused before it started)
                    self.log.info(
                        "unit.claim_won" if won else "unit.claim_lost",
                        unit=claim.node,
                        latency_ms=self._now()[0] - claim.stamp[0],
                        reason=reason,
                    )
                fut = self._decisions.pop(claim.node, None)
                if fut is not None and not fut.done():
                    fut.set_result((won, reason))

    async def publish_controller_snapshot(self) -> None:
        if self.controller is not None:
            await self._act(PublishSnapshot(self.controller.snapshot(self._now())))

    async def on_tick(self) -> None:
        if self.controller is not None:
            await self.feed(Tick())

    async def _claim(self, unit: str, potential: float) -> bool:
        """Claim ``unit`` by the peer rule; True when this robot may work on it."""
        assert self.controller is not None
        fut: asyncio.Future[tuple[bool, str]] = asyncio.get_running_loop().create_future()
        self._decisions[unit] = fut
        await self.feed(Want(unit, potential))
        won, _reason = await fut
        if not won:
            self._lost_until[unit] = asyncio.get_running_loop().time() + LOST_CLAIM_HOLD_S
        return won

    async def _claim_units(
        self, units: Iterable[str], potential: Mapping[str, float] | None = None
    ) -> bool:
        """Claim each of ``units`` this robot does not hold yet, in order; False at the
        first claim lost (the units won so far stay this robot's)."""
        assert self.controller is not None
        for unit in dict.fromkeys(units):
            if unit not in self.controller.mine:
                p = (potential or {}).get(unit, 0.0)
                if not await self._claim(unit, p):
                    return False
        return True

    def _free_units(self) -> list[str]:
        """Units nobody holds or finished that this robot may claim now, in tree order."""
        assert self.controller is not None
        c = self.controller
        now = asyncio.get_running_loop().time()
        return [
            u
            for u in self.unit_tree.leaves
            if u not in c.mine
            and u not in c.done
            and c.allowed(u)
            and self._lost_until.get(u, 0.0) <= now
        ]

    def _blocked(self) -> set[str]:
        """Leaves of units this robot may not work on now (peers hold them, an OR
        alternative is committed elsewhere, a claim on them was just lost, or paused)."""
        assert self.controller is not None
        c = self.controller
        now = asyncio.get_running_loop().time()
        out: set[str] = set()
        for unit in self.unit_tree.leaves:
            if unit in c.mine and unit not in self._paused_units:
                continue
            if (
                unit in c.mine
                or self._lost_until.get(unit, 0.0) > now
                or (unit not in c.done and not c.allowed(unit))
            ):
                out.update(self.problem.tree.leaf_ids(unit))
        return out

    def _adopt_done_units(self) -> None:
        """Units a peer finished become done in this robot's copy of the tree."""
        assert self.controller is not None
        for unit in sorted(self.controller.done - self._adopted):
            self._adopted.add(unit)
            if unit in self.units_done:
                continue  # this robot's own
            leaves = self.problem.tree.leaf_ids(unit)
            self.stepper.set_state(adopt_peer_unit(self.allocator, self.task_state, leaves))
            self.units_done[unit] = "peer"
            self.log.info("unit.done_by_peer", unit=unit)

    async def _units_finished(self) -> None:
        """Report every unit of this robot whose leaves are now all done or skipped."""
        assert self.controller is not None
        for unit in list(self.controller.mine):
            if self.allocator.satisfied(self.task_state, unit):
                self.units_done[unit] = self.id
                await self.feed(BehaviourFinished(unit))
                await self._report_units()

    @property
    def task_state(self) -> MultitaskState:
        """The tree's state now (the stepper's)."""
        return self.stepper.state

    # -- publishing --------------------------------------------------------------

    def _stamp(self) -> list[Any]:
        return list(self._now())

    async def _transition(self, node: str, status: str, **extra: Any) -> None:
        """Publish leaf `node`'s transition to `status` with ``LeafTransitionWire``'s
        other fields (`extra`)."""
        body = LeafTransitionWire(node, self.id, NodeStatus(status), self._stamp(), **extra)
        await self.publish(STATE, "node.transition", msgspec.to_builtins(body))

    async def _publish_state(self, step: int, sim_s: float) -> None:
        world = self.task_state.world
        body = {
            "step": step,
            "sim_s": round(sim_s, 3),
            "resources": self.task_state.resources.to_rows(),
            "robot": list(world.robot),
            "held": sorted([list(p) for p in world.held]),
            "placed": sorted(world.placed),
        }
        await self.publish(RESOURCES, "multitask.resources", body, retain=True)

    async def _publish_snapshot(self) -> None:
        state = self.task_state
        body = LeafSnapshotWire(
            self.id, self._stamp(), sorted(state.done), sorted(state.skipped), sorted(state.working)
        )
        await self.publish(SNAPSHOT, "node.snapshot", msgspec.to_builtins(body), retain=True)
        await self._report_units()

    async def _report_units(self) -> None:
        """The mission's status: units done (by this robot or a peer) of the tree's."""
        leaves = self.problem.tree.leaves
        finished = len(set(self.task_state.done) | set(self.task_state.skipped))
        await self._status.report(
            "running" if self.result is None else "succeeded",
            reason="" if self.result is None else "every unit of the tree is done",
            done=len(self.units_done),
            total=len(self.unit_tree.leaves),
            detail=f"{finished} of {len(leaves)} leaves done",
        )

    # -- the mission ---------------------------------------------------------------

    async def _policy(self) -> Policy:
        """The round policy of ``planner``; search planners plan here, in a worker
        thread so presence, heartbeats and claim replies keep flowing."""
        if self.planner in ("greedy", "sequential"):
            return self._policy_greedy()
        if self.planner == "lookahead":
            plan = await asyncio.to_thread(
                lookahead_plan, self.allocator, max_expansions=self.max_expansions
            )
        else:
            plan = await asyncio.to_thread(exhaustive_plan, self.allocator)
        if not plan.completed:
            raise PlanningError(f"the {self.planner} planner found no ordering that ends the tree")
        self.log.info(
            "plan.ready",
            method=plan.method,
            steps=plan.steps,
            sim_s=round(plan.time_s, 1),
            optimal=plan.optimal,
            expansions=plan.expansions,
        )
        return plan_policy(plan)

    async def _wait_team(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout_s
        await asyncio.sleep(0.2)  # retained presence arrives first
        expected = set(self.expect_services) | set(self.expect_peers)
        while not expected <= self.team_view.online() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        missing = sorted(expected - self.team_view.online())
        if missing:
            self.log.warning("team.incomplete", missing=missing)

    async def _start_controller(self) -> None:
        peers = self.peer_rule_peers()
        self.controller = TaskController(
            self.unit_tree,
            self.id,
            online_peers=peers,
            await_snapshots=bool(peers),
            rule=self.rule,
            capacity=max(1, len(self.unit_tree.leaves)),
            auto_select=False,
            takeover_ms=round(self.takeover_s * 1000),
        )
        await self._act(PublishSnapshot(self.controller.snapshot(self._now())))
        backlog, self._backlog = self._backlog, []
        for event in backlog:
            await self.feed(event)
        for member in peers:
            await self.feed(PresenceChanged(member, True))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout_s
        while not self.controller.synced and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if self.controller.synced is False:
            raise PlanningError("the peers' unit snapshots did not arrive; cannot claim safely")
        if peers and self._follow_plan:
            self._follow_plan = False
            self.log.warning(
                "planner.team_greedy",
                planner=self.planner,
                peers=sorted(peers),
                reason="a plan assumes one robot does every unit; rounds are greedy",
            )

    async def main(self) -> None:
        """Execute the tree to its end; raises PlanningError when it gets stuck."""
        await self.wait_connected()
        tree = self.problem.tree
        await self.publish(
            MISSION,
            "mission.tree",
            {
                **mission_tree_body(tree, "multitask"),
                "robot": self.id,
                "start": list(self.problem.start),
                "objects": {
                    o.name: {"position": list(o.position), "destination": list(o.destination)}
                    for o in self.problem.objects.values()
                },
            },
            team=True,
            retain=True,
        )
        await self._wait_team()
        await self._start_controller()
        policy = await self._policy() if self._follow_plan else self._policy_greedy()
        self.log.info(
            "mission.started",
            planner=self.planner,
            time_factor=self.time_factor,
            leaves=len(tree.leaves),
            units=len(self.unit_tree.leaves),
            peers=sorted(self.peer_rule_peers()),
        )
        await self._publish_snapshot()
        await self._publish_state(0, 0.0)
        loop = asyncio.get_running_loop()
        wall0 = loop.time()
        self.result = await self._execute(policy, wall0)
        wall_s = loop.time() - wall0
        await self._publish_snapshot()
        await self._summarise(self.result, wall_s)

    def _policy_greedy(self) -> Policy:
        return lambda alloc, state: alloc.allocate(state).granted

    async def _next_round(self, policy: Policy) -> tuple[Request, ...]:
        """The next round's requests, with their units claimed; () when nothing of the
        tree is left for this robot now (peers hold the rest). Raises PlanningError
        when the tree is stuck."""
        assert self.controller is not None
        alloc = self.allocator
        while True:
            self._adopt_done_units()
            if alloc.is_complete(self.task_state):
                return ()
            if self._follow_plan:
                granted = tuple(policy(alloc, self.task_state))
            else:
                blocked = self._blocked()
                granted = tuple(alloc.allocate(self.task_state, blocked).granted)
            if not granted:
                return ()
            potential: dict[str, float] = {}
            for r in granted:
                unit = self.units[r.leaf]
                potential[unit] = max(potential.get(unit, r.potential), r.potential)
            if await self._claim_units(potential, potential):
                if self.bundle and self.peer_rule_peers():
                    for r in granted:
                        extra = co_located_units(alloc, self.task_state, r, self._free_units())
                        if extra:
                            self.log.info("unit.bundle", move=r.leaf, units=extra)
                            await self._claim_units(extra)  # a lost one is simply not ours
                return granted
            if self._follow_plan:
                self._follow_plan = False
                self.log.warning("planner.team_greedy", reason="a unit of the plan went to a peer")

    async def _wait_for_team(self, clock: float, wall0: float) -> float:
        """Nothing to do: wait for a peer to finish or release a unit. Returns the
        simulated clock advanced by the wait."""
        loop = asyncio.get_running_loop()
        self._changed.clear()
        held_elsewhere = (
            self.controller_has_peer_work()
            or self._paused_units
            or any(t > loop.time() for t in self._lost_until.values())
        )
        if not held_elsewhere:
            alone = self.allocator.allocate(self.task_state)
            if not alone.granted and not alone.trailing:
                raise PlanningError("nothing can run and the tree is not done")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout=LOST_CLAIM_HOLD_S / 2)
        if self.time_factor > 0:
            clock = max(clock, (loop.time() - wall0) / self.time_factor)
        return clock

    def controller_has_peer_work(self) -> bool:
        """True when a peer holds a unit (this robot waits for it to finish or be freed)."""
        c = self.controller
        return c is not None and any(agent != self.id for agent, _ in c.working.values())

    async def _execute(self, policy: Policy, wall0: float) -> RunResult:
        """Run rounds until the tree is done, driving the planner's ``RoundStepper`` (the
        loop ``policy.run_policy`` drives too) in wall time: each behaviour ends at its
        simulated end time, and every transition is published. Raises PlanningError when
        nothing can run or an invariant breaks."""
        alloc = self.allocator
        stepper = self.stepper
        loop = asyncio.get_running_loop()
        while True:
            granted = await self._next_round(policy)
            if stepper.complete:
                break
            if stepper.exhausted:
                raise PlanningError(f"the tree is not done after {stepper.max_steps} steps")
            clock = stepper.clock
            if not granted:
                trailing = alloc.allocate(self.task_state, self._blocked()).trailing
                if trailing and await self._claim_units(self.units[leaf] for leaf in trailing):
                    for leaf in trailing:
                        await self._transition(
                            leaf, "skipped", step=len(stepper.rounds), sim_s=round(clock, 3)
                        )
                    stepper.skip_trailing(trailing)
                    await self._units_finished()
                    continue
                stepper.idle_until(await self._wait_for_team(clock, wall0))
                continue
            opened = stepper.start_round(granted)
            index, leaves = opened.index, opened.behaviours
            for leaf in opened.skipped:
                await self._transition(leaf, "skipped", step=index, sim_s=round(clock, 3))
            for r in granted:
                owned = [x.name for x in self.task_state.resources if r.leaf in x.owners]
                await self._transition(
                    r.leaf,
                    "working",
                    potential=r.potential,
                    grasp=None,
                    step=index,
                    sim_s=round(clock, 3),
                    duration_s=round(opened.durations[r.leaf], 3),
                    resources=owned,
                    together=[x for x in leaves if x != r.leaf],
                    unit=self.units[r.leaf],
                )
            self.log.info(
                "step.started",
                step=index,
                behaviours=list(leaves),
                skipped=list(opened.skipped),
                sim_s=round(clock, 1),
            )
            await self._publish_state(index, clock)
            for leaf in opened.finish_order:
                end = opened.end_s(leaf)
                await asyncio.sleep(max(0.0, wall0 + end * self.time_factor - loop.time()))
                stepper.finish(leaf)
                await self._transition(leaf, "done", step=index, sim_s=round(end, 3))
            await self._units_finished()
            await self._publish_state(index, stepper.clock)
        return stepper.result(self.planner)

    async def _summarise(self, run: RunResult, wall_s: float) -> None:
        """One log event per figure, the one-at-a-time comparison, and one event message."""
        base = simulate(self.problem, "sequential", check=False)
        skipped = sorted(run.final.skipped)
        groups = [sorted(g) for g in run.together()]
        mine = sorted(u for u, who in self.units_done.items() if who == self.id)
        by_peers = sorted(u for u, who in self.units_done.items() if who != self.id)
        self.log.info("summary.steps", planner=self.planner, steps=run.n_steps)
        self.log.info("summary.skipped", count=len(skipped), nodes=skipped)
        self.log.info("summary.parallel", count=run.parallel, groups=groups)
        self.log.info(
            "summary.time",
            sim_s=round(run.time_s, 1),
            wall_s=round(wall_s, 2),
            distance_m=round(run.distance_m, 2),
        )
        team = bool(by_peers or self.expect_peers or self.peer_rule_peers())
        if team:
            alone = "sequential" if self.planner == "sequential" else "greedy"
            solo = simulate(self.problem, alone)
            self.log.info(
                "summary.team",
                units_mine=mine,
                units_by_peers=by_peers,
                claims_won=self.claims["won"],
                claims_lost=self.claims["lost"],
            )
            self.log.info(
                "summary.alone",
                planner=solo.planner,
                steps=solo.n_steps,
                sim_s=round(solo.time_s, 1),
                saved_s=round(solo.time_s - run.time_s, 1),
            )
        self.log.info(
            "summary.one_at_a_time",
            steps=base.n_steps,
            sim_s=round(base.time_s, 1),
            skipped=len(base.final.skipped),
            parallel=base.parallel,
            saved_steps=base.n_steps - run.n_steps,
            saved_s=round(base.time_s - run.time_s, 1),
        )
        await self.publish(
            EVENTS,
            "multitask.summary",
            {
                "planner": self.planner,
                "steps": run.n_steps,
                "skipped": skipped,
                "parallel": run.parallel,
                "together": groups,
                "sim_s": round(run.time_s, 3),
                "wall_s": round(wall_s, 3),
                "one_at_a_time": {"steps": base.n_steps, "sim_s": round(base.time_s, 3)},
                "rounds": [list(s.behaviours) for s in run.steps],
                "units_mine": mine,
                "units_by_peers": by_peers,
                "claims": dict(self.claims),
            },
        )
