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
from collections.abc import Sequence
from typing import Any, ClassVar

from teamtree.agents.multitask.channels import (
    CLAIM_REPLY,
    CLAIMS,
    MISSION,
    UNIT_SNAPSHOT,
    UNITS,
)
from teamtree.agents.multitask.params import MultitaskParams
from teamtree.agents.multitask.planning import greedy_policy, planned_policy
from teamtree.agents.multitask.progress import ProgressReports
from teamtree.agents.multitask.run_summary import summarise
from teamtree.agents.multitask.unit_claims import LOST_CLAIM_HOLD_S, UnitClaims
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.params import decode_params
from teamtree.agents.treeprotocol.mission_wire import mission_tree_body
from teamtree.agents.treeprotocol.peer_member import PeerRuleMember
from teamtree.broker import ConfigError, PlanningError, SpecificationError
from teamtree.planners.multitask import (
    Mode,
    MultitaskAllocator,
    MultitaskProblem,
    MultitaskState,
    Request,
    RoundPolicy,
    RoundStepper,
    RunResult,
    adopt_peer_unit,
    co_located_units,
    problem_from_mission,
    unit_of,
    unit_tree,
)
from teamtree.planners.tasktree import (
    BehaviourFinished,
    PresenceChanged,
    PublishSnapshot,
    TaskController,
    Tick,
)

PLANNERS = ("greedy", "lookahead", "optimal", "sequential")


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

    Its parts: ``unit_claims`` (the unit controller's actions and this robot's claims),
    ``reports`` (its leaf transitions, state, snapshot and status), ``planning`` (the
    round policy) and ``run_summary`` (the account of the finished run).
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
        self._adopted: set[str] = set()
        self._changed = asyncio.Event()
        self._follow_plan = planner in ("lookahead", "optimal")
        self.unit_claims = UnitClaims(self)
        """This robot's claims on units: the controller's actions, what is free or blocked."""
        self.reports = ProgressReports(self)
        """Leaf transitions, resources, snapshot and mission status on the wire."""

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

    def stamp(self) -> tuple[int, int, str]:
        """The clock's stamp now (wall ms, logical, node), as the unit controller takes it."""
        s = self.clock.now()
        return (s.wall_ms, s.logical, s.node)

    async def feed(self, event: Any) -> None:
        """Hand one event to the unit controller and carry out its actions."""
        if self.controller is None:
            self._backlog.append(event)
            return
        for action in self.controller.handle(event, self.stamp()):
            await self.unit_claims.act(action)
        if not isinstance(event, Tick):
            self._changed.set()

    async def publish_controller_snapshot(self) -> None:
        if self.controller is not None:
            await self.unit_claims.act(PublishSnapshot(self.controller.snapshot(self.stamp())))

    async def on_tick(self) -> None:
        if self.controller is not None:
            await self.feed(Tick())

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
                await self.reports.units()

    @property
    def task_state(self) -> MultitaskState:
        """The tree's state now (the stepper's)."""
        return self.stepper.state

    # -- the mission ---------------------------------------------------------------

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
        await self.unit_claims.act(PublishSnapshot(self.controller.snapshot(self.stamp())))
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
        policy = (
            await planned_policy(self.planner, self.allocator, self.max_expansions, self.log)
            if self._follow_plan
            else greedy_policy()
        )
        self.log.info(
            "mission.started",
            planner=self.planner,
            time_factor=self.time_factor,
            leaves=len(tree.leaves),
            units=len(self.unit_tree.leaves),
            peers=sorted(self.peer_rule_peers()),
        )
        await self.reports.snapshot()
        await self.reports.state(0, 0.0)
        loop = asyncio.get_running_loop()
        wall0 = loop.time()
        self.result = await self._execute(policy, wall0)
        wall_s = loop.time() - wall0
        await self.reports.snapshot()
        await summarise(self, self.result, wall_s)

    async def _next_round(self, policy: RoundPolicy) -> tuple[Request, ...]:
        """The next round's requests, with their units claimed; () when nothing of the
        tree is left for this robot now (peers hold the rest). Raises PlanningError
        when the tree is stuck."""
        assert self.controller is not None
        alloc = self.allocator
        claims = self.unit_claims
        while True:
            self._adopt_done_units()
            if alloc.is_complete(self.task_state):
                return ()
            if self._follow_plan:
                granted = tuple(policy(alloc, self.task_state))
            else:
                blocked = claims.blocked()
                granted = tuple(alloc.allocate(self.task_state, blocked).granted)
            if not granted:
                return ()
            potential: dict[str, float] = {}
            for r in granted:
                unit = self.units[r.leaf]
                potential[unit] = max(potential.get(unit, r.potential), r.potential)
            if await claims.claim_units(potential, potential):
                if self.bundle and self.peer_rule_peers():
                    for r in granted:
                        extra = co_located_units(alloc, self.task_state, r, claims.free_units())
                        if extra:
                            self.log.info("unit.bundle", move=r.leaf, units=extra)
                            await claims.claim_units(extra)  # a lost one is simply not ours
                return granted
            if self._follow_plan:
                self._follow_plan = False
                self.log.warning("planner.team_greedy", reason="a unit of the plan went to a peer")

    async def _wait_for_team(self, clock: float, wall0: float) -> float:
        """Nothing to do: wait for a peer to finish or release a unit. Returns the
        simulated clock advanced by the wait."""
        loop = asyncio.get_running_loop()
        self._changed.clear()
        if not self.unit_claims.held_elsewhere():
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

    async def _execute(self, policy: RoundPolicy, wall0: float) -> RunResult:
        """Run rounds until the tree is done, driving the planner's ``RoundStepper`` (the
        loop ``policy.run_policy`` drives too) in wall time: each behaviour ends at its
        simulated end time, and every transition is published. Raises PlanningError when
        nothing can run or an invariant breaks."""
        alloc = self.allocator
        stepper = self.stepper
        claims = self.unit_claims
        loop = asyncio.get_running_loop()
        while True:
            granted = await self._next_round(policy)
            if stepper.complete:
                break
            if stepper.exhausted:
                raise PlanningError(f"the tree is not done after {stepper.max_steps} steps")
            clock = stepper.clock
            if not granted:
                trailing = alloc.allocate(self.task_state, claims.blocked()).trailing
                if trailing and await claims.claim_units(self.units[leaf] for leaf in trailing):
                    for leaf in trailing:
                        await self.reports.transition(
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
                await self.reports.transition(leaf, "skipped", step=index, sim_s=round(clock, 3))
            for r in granted:
                owned = [x.name for x in self.task_state.resources if r.leaf in x.owners]
                await self.reports.transition(
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
            await self.reports.state(index, clock)
            for leaf in opened.finish_order:
                end = opened.end_s(leaf)
                await asyncio.sleep(max(0.0, wall0 + end * self.time_factor - loop.time()))
                stepper.finish(leaf)
                await self.reports.transition(leaf, "done", step=index, sim_s=round(end, 3))
            await self._units_finished()
            await self.reports.state(index, stepper.clock)
        return stepper.result(self.planner)
