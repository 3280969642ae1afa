"""The multitask robot: one robot runs a seed 004 task tree with its own resource
allocator, executing behaviours in simulated time and publishing every transition.

Wire (see docs/multitask.md):

- ``_/mission``        ``mission.tree``          retained: ``{kind: "multitask", tree, text, ...}``
- ``<me>/state``       ``node.transition``       ``{node, agent, status: working|done|skipped,
                                                 stamp, potential, step, sim_s, ...}``
- ``<me>/resources``   ``multitask.resources``   retained: resource rows and the body's world
- ``<me>/snapshot``    ``node.snapshot``         retained: done, skipped and working leaves
- ``<me>/events``      ``multitask.summary``     the run's figures next to one-at-a-time

The body is simulated inside the agent (the world service only knows PLACE): a
behaviour takes the planner's ``Durations`` in simulated seconds, slept for
``time_factor`` wall seconds each. One step = the behaviours granted together; the
next round starts when the step's last behaviour is done, as in ``simulate``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from teamtree.agents.agent import Agent
from teamtree.agents.config import AgentSpec, TeamConfig, spec_reader
from teamtree.broker import ConfigError, PlanningError, SpecificationError
from teamtree.planners.multitask import (
    Mode,
    MultitaskAllocator,
    MultitaskProblem,
    MultitaskState,
    Request,
    RunResult,
    Step,
    check_state,
    distance,
    exhaustive_plan,
    lookahead_plan,
    plan_policy,
    problem_from_mission,
    round_duration,
    simulate,
)

MISSION = "mission"
STATE = "state"
RESOURCES = "resources"
SNAPSHOT = "snapshot"
EVENTS = "events"
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


class MultitaskRobot(Agent):
    """A robot that multitasks by dynamic resource allocation (seed 004).

    Parameters: ``planner`` ("greedy" = the paper's method, "lookahead", "optimal",
    or "sequential" = one behaviour at a time), ``time_factor`` (wall seconds per
    simulated second; 0 runs as fast as the broker allows), ``start_timeout_s``
    (how long to wait for the config's services, e.g. a recorder, before starting),
    ``max_expansions`` (the lookahead's search budget). ``planner`` and
    ``time_factor`` are overridable with ``--set``.
    """

    kind = "multitask_robot"
    overridable: ClassVar[frozenset[str]] = frozenset({"planner", "time_factor"})

    def __init__(
        self,
        *args: Any,
        problem: MultitaskProblem,
        planner: str = "greedy",
        time_factor: float = 0.1,
        expect_services: Sequence[str] = (),
        start_timeout_s: float = 10.0,
        max_expansions: int = 200_000,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        if planner not in PLANNERS:
            raise ValueError(f"planner {planner!r}; expected one of {', '.join(PLANNERS)}")
        self.problem = problem
        self.planner = planner
        self.time_factor = time_factor
        self.expect_services = sorted(set(expect_services) - {self.id})
        self.start_timeout_s = start_timeout_s
        self.max_expansions = max_expansions
        mode = Mode.SEQUENTIAL if planner == "sequential" else Mode.MULTITASK
        self.allocator = MultitaskAllocator(problem, mode=mode)
        self.task_state = self.allocator.initial_state()
        self.result: RunResult | None = None
        """The run as executed (steps, skips, simulated time), once the tree is done."""

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the keys and read the mission's problem. Raises ConfigError."""
        reader = spec_reader(spec, config)
        planner = reader.take("planner", str, "greedy", "'greedy' or 'lookahead'")
        if planner not in PLANNERS:
            raise reader.error("planner", f"is {planner!r}; expected one of {', '.join(PLANNERS)}")
        time_factor = reader.take(
            "time_factor", (int, float), 0.1, "wall seconds per simulated second (>= 0)"
        )
        if time_factor < 0:
            raise reader.error("time_factor", f"is {time_factor}; expected 0 or more")
        start_timeout = reader.positive("start_timeout_s", 10.0, "a positive number of seconds")
        budget = reader.take("max_expansions", int, 200_000, "a whole number of search nodes")
        if budget < 1:
            raise reader.error("max_expansions", f"is {budget}; expected 1 or more")
        reader.no_extras()
        return {
            "problem": multitask_problem(config),
            "planner": planner,
            "time_factor": float(time_factor),
            "expect_services": [s.id for s in config.services],
            "start_timeout_s": start_timeout,
            "max_expansions": budget,
        }

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "profile": self.problem.profile.kind,
            "resources": self.problem.profile.initial_state().to_rows(),
            "planner": self.planner,
            "time_factor": self.time_factor,
        }

    # -- publishing --------------------------------------------------------------

    def _stamp(self) -> list[Any]:
        s = self.clock.now()
        return [s.wall_ms, s.logical, s.node]

    async def _transition(self, node: str, status: str, **extra: Any) -> None:
        body = {"node": node, "agent": self.id, "status": status, "stamp": self._stamp()}
        await self.publish(STATE, "node.transition", body | extra)

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
        body = {
            "agent": self.id,
            "stamp": self._stamp(),
            "done": sorted(self.task_state.done),
            "skipped": sorted(self.task_state.skipped),
            "working": sorted(self.task_state.working),
        }
        await self.publish(SNAPSHOT, "node.snapshot", body, retain=True)

    # -- the mission ---------------------------------------------------------------

    def _policy(self) -> Policy:
        """The round policy of ``planner``; search planners plan here (blocks the loop
        for the search's duration: tens to hundreds of ms for four objects)."""
        if self.planner in ("greedy", "sequential"):
            return lambda alloc, state: alloc.allocate(state).granted
        if self.planner == "lookahead":
            plan = lookahead_plan(self.allocator, max_expansions=self.max_expansions)
        else:
            plan = exhaustive_plan(self.allocator)
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

    async def _wait_services(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout_s
        await asyncio.sleep(0.2)  # retained presence arrives first
        while not set(self.expect_services) <= self.team_view.online() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        missing = sorted(set(self.expect_services) - self.team_view.online())
        if missing:
            self.log.warning("team.incomplete", missing=missing)

    async def main(self) -> None:
        """Execute the tree to its end; raises PlanningError when it gets stuck."""
        await self.wait_connected()
        tree = self.problem.tree
        await self.publish(
            MISSION,
            "mission.tree",
            {
                "kind": "multitask",
                "tree": tree.to_dict(),
                "text": tree.to_string(),
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
        await self._wait_services()
        policy = self._policy()
        self.log.info(
            "mission.started",
            planner=self.planner,
            time_factor=self.time_factor,
            leaves=len(tree.leaves),
        )
        await self._publish_snapshot()
        await self._publish_state(0, 0.0)
        loop = asyncio.get_running_loop()
        wall0 = loop.time()
        self.result = await self._execute(policy, wall0)
        wall_s = loop.time() - wall0
        await self._publish_snapshot()
        await self._summarise(self.result, wall_s)

    async def _execute(self, policy: Policy, wall0: float) -> RunResult:
        """Run rounds until the tree is done (see ``simulate.run_policy``, of which this
        is the timed, published twin). Raises PlanningError when nothing can run."""
        alloc = self.allocator
        loop = asyncio.get_running_loop()
        steps: list[Step] = []
        clock = 0.0
        travelled = 0.0
        limit = 4 * len(alloc.tree.leaves) + 8
        while not alloc.is_complete(self.task_state):
            if len(steps) >= limit:
                raise PlanningError(f"the tree is not done after {limit} steps")
            granted = tuple(policy(alloc, self.task_state))
            if not granted:
                trailing = alloc.allocate(self.task_state).trailing
                if not trailing:
                    raise PlanningError("nothing can run and the tree is not done")
                for leaf in trailing:
                    await self._transition(leaf, "skipped", step=len(steps), sim_s=round(clock, 3))
                self.task_state = alloc.start(self.task_state, (), trailing)
                continue
            leaves = tuple(r.leaf for r in granted)
            finished = set(leaves) & self.task_state.finished
            if finished:
                raise PlanningError(f"granted leaves already finished: {sorted(finished)}")
            skips = tuple(dict.fromkeys(s for r in granted for s in r.skips))
            took = {leaf: round_duration(alloc, self.task_state, [leaf]) for leaf in leaves}
            start_pos = self.task_state.world.robot
            index = len(steps)
            for leaf in skips:
                await self._transition(leaf, "skipped", step=index, sim_s=round(clock, 3))
            self.task_state = alloc.start(self.task_state, granted, skips)
            self._check(index, "start")
            for r in granted:
                owned = [x.name for x in self.task_state.resources if r.leaf in x.owners]
                await self._transition(
                    r.leaf,
                    "working",
                    potential=r.potential,
                    grasp=None,
                    step=index,
                    sim_s=round(clock, 3),
                    duration_s=round(took[r.leaf], 3),
                    resources=owned,
                    together=[x for x in leaves if x != r.leaf],
                )
            self.log.info(
                "step.started",
                step=index,
                behaviours=list(leaves),
                skipped=list(skips),
                sim_s=round(clock, 1),
            )
            await self._publish_state(index, clock)
            for leaf in sorted(leaves, key=lambda x: (took[x], leaves.index(x))):
                end = clock + took[leaf]
                await asyncio.sleep(max(0.0, wall0 + end * self.time_factor - loop.time()))
                self.task_state = alloc.finish(self.task_state, leaf)
                await self._transition(leaf, "done", step=index, sim_s=round(end, 3))
            self._check(index, "finish")
            dt = max(took.values())
            travelled += distance(start_pos, self.task_state.world.robot)
            steps.append(Step(index, leaves, skips, clock, dt))
            clock += dt
            await self._publish_state(index, clock)
        return RunResult(
            planner=self.planner,
            steps=tuple(steps),
            completed=True,
            time_s=clock,
            distance_m=travelled,
            final=self.task_state,
        )

    def _check(self, step: int, when: str) -> None:
        broken = check_state(self.allocator, self.task_state)
        if broken:
            raise PlanningError(f"step {step} {when}: {'; '.join(broken)}")

    async def _summarise(self, run: RunResult, wall_s: float) -> None:
        """One log event per figure, the one-at-a-time comparison, and one event message."""
        base = simulate(self.problem, "sequential", check=False)
        skipped = sorted(run.final.skipped)
        groups = [sorted(g) for g in run.together()]
        self.log.info("summary.steps", planner=self.planner, steps=run.n_steps)
        self.log.info("summary.skipped", count=len(skipped), nodes=skipped)
        self.log.info("summary.parallel", count=run.parallel, groups=groups)
        self.log.info(
            "summary.time",
            sim_s=round(run.time_s, 1),
            wall_s=round(wall_s, 2),
            distance_m=round(run.distance_m, 2),
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
            },
        )
