"""The LTL planner service (kind ``ltl_planner``, seed 003): holds the Mission, computes
the offline allocation, publishes each robot's plan, answers replan requests (R2-R4)
with local (Alg. 1, 2) or global (Defs. 4-5) reallocation, and at the end checks the
executed joint trace against the formula. Wire: docs/ltl.md.

Also home of what the ``ltl_robot`` kind and ``teamtree disturb`` share: the
``[mission] kind = "ltl"`` settings; the channel names are ``channels`` and the plan
codec is ``plan_wire`` (both re-exported here). Replan requests are answered by
``reallocation``, which keeps the blocked corridors (``corridors``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from teamtree.agents.ltl.channels import (
    DISTURB,
    EVENT,
    MAP,
    MISSION,
    PLAN,
    REPLAN,
    STATUS,
    SYNC,
    TRACE,
    VERDICT,
)
from teamtree.agents.ltl.ltl_wire import (
    DoneWire,
    LtlWireError,
    PlanMessageWire,
    PlanReceivedWire,
    StepWire,
    decode,
    to_wire,
)
from teamtree.agents.ltl.params import LtlPlannerParams
from teamtree.agents.ltl.plan_wire import (
    plan_digest,
    plan_from_wire,
    plan_to_wire,
    states_from_wire,
)
from teamtree.agents.ltl.reallocation import Reallocation
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.broker import ConfigError, PlanningError, SpecificationError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.ltl import (
    FORMULAS,
    HOSPITAL_MAP,
    ROBOT_TYPES,
    LTLSyntaxError,
    Mission,
    RobotModel,
    RobotPlan,
    TeamPlan,
    TSState,
    check_trace,
    hospital_robot,
    parse,
)

__all__ = [
    "DISTURB",
    "DISTURBANCES",
    "EVENT",
    "MAP",
    "MISSION",
    "PLAN",
    "REPLAN",
    "STATUS",
    "SYNC",
    "TRACE",
    "VERDICT",
    "LtlMissionSpec",
    "LtlPlannerAgent",
    "LtlRobotSpec",
    "ltl_mission",
    "plan_digest",
    "plan_from_wire",
    "plan_to_wire",
]

DISTURBANCES = ("fall", "critical", "state_change", "blocked_edge")
OBJECTIVE_NAMES = ("sum", "makespan")


@dataclass(frozen=True)
class LtlRobotSpec:
    """One ``ltl_robot`` entry of the config: id, hospital robot type, start state."""

    id: str
    type: str
    start: TSState

    @property
    def legged(self) -> bool:
        return ROBOT_TYPES[self.type][0] == "quadruped"

    def model(self) -> RobotModel:
        return hospital_robot(self.type, self.id, self.start)


@dataclass(frozen=True)
class LtlMissionSpec:
    """The ``[mission] kind = "ltl"`` table plus the team's planner and robots."""

    formula: str
    scenario: str | None
    objective: str
    time_factor: float
    planner: str
    robots: tuple[LtlRobotSpec, ...]

    def mission(self) -> Mission:
        """A fresh Mission over the configured robots (team order = config order)."""
        return Mission(self.formula, [r.model() for r in self.robots], objective=self.objective)

    def robot(self, robot_id: str) -> LtlRobotSpec:
        for r in self.robots:
            if r.id == robot_id:
                return r
        raise KeyError(robot_id)


def _mission_error(config: TeamConfig, key: str, message: str) -> ConfigError:
    return ConfigError(message, path=str(config.path), key=f"mission.{key}")


def ltl_mission(config: TeamConfig) -> LtlMissionSpec:
    """Read and validate an LTL mission config. Raises ConfigError naming the key."""
    if config.mission.kind != "ltl":
        raise ConfigError(
            f'is {config.mission.kind!r}; LTL agents need [mission] kind = "ltl"',
            path=str(config.path),
            key="mission.kind",
        )
    params = dict(config.mission.params)
    known = {"scenario", "formula", "objective", "time_factor"}
    extra = sorted(set(params) - known)
    if extra:
        raise _mission_error(
            config, extra[0], f"unknown key(s) {', '.join(extra)}; expected {sorted(known)}"
        )
    scenario = params.get("scenario")
    if scenario is not None and scenario not in FORMULAS:
        raise _mission_error(
            config, "scenario", f"is {scenario!r}; expected one of {sorted(FORMULAS)}"
        )
    formula = params.get("formula", FORMULAS.get(scenario) if scenario else None)
    if not isinstance(formula, str) or not formula.strip():
        raise _mission_error(
            config, "formula", "is missing; give an LTL formula or a scenario (study1, ...)"
        )
    objective = params.get("objective", "sum")
    if objective not in OBJECTIVE_NAMES:
        raise _mission_error(config, "objective", f"is {objective!r}; expected 'sum' or 'makespan'")
    factor = params.get("time_factor", 20.0)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or factor <= 0:
        raise _mission_error(
            config, "time_factor", f"is {factor!r}; expected simulated seconds per wall second > 0"
        )
    planners = [a.id for a in config.agents if a.kind == "ltl_planner"]
    if len(planners) != 1:
        raise ConfigError(
            f"an LTL mission needs exactly one agent of kind 'ltl_planner', found {planners}",
            path=str(config.path),
            key="agents",
        )
    robots = []
    for spec in config.agents:
        if spec.kind != "ltl_robot":
            continue
        index = config.agents.index(spec)
        rtype = spec.params.get("type")
        if rtype not in ROBOT_TYPES:
            raise ConfigError(
                f"is {rtype!r}; expected a robot type, one of {sorted(ROBOT_TYPES)}",
                path=str(config.path),
                key=f"agents[{index}].type",
            )
        start = spec.params.get("start", list(ROBOT_TYPES[rtype][3]))
        modes = ROBOT_TYPES[rtype][1]
        if (
            not isinstance(start, list | tuple)
            or len(start) != 2
            or start[0] not in HOSPITAL_MAP.regions
            or start[1] not in modes
        ):
            raise ConfigError(
                f"is {start!r}; expected [region, mode] with a hospital region and one of "
                f"{list(modes)}",
                path=str(config.path),
                key=f"agents[{index}].start",
            )
        robots.append(LtlRobotSpec(spec.id, rtype, TSState(start[0], start[1])))
    if not robots:
        raise ConfigError(
            "an LTL mission needs at least one agent of kind 'ltl_robot'",
            path=str(config.path),
            key="agents",
        )
    try:
        parse(formula)
    except (LTLSyntaxError, SpecificationError) as exc:
        raise _mission_error(config, "formula", f"does not parse: {exc}") from None
    return LtlMissionSpec(formula, scenario, objective, float(factor), planners[0], tuple(robots))


# -- plan codec ------------------------------------------------------------------------


def _summary(plan: RobotPlan) -> str:
    return " ".join(plan.actions) or "(idle)"


# -- the agent -------------------------------------------------------------------------


class LtlPlannerAgent(Agent):
    """Offline allocation, replans on request, and the final trace verdict.

    ``main`` returns (exit 0) once every robot has reported its current plan done and
    the joint trace satisfies the formula; exit 1 with a report when reallocation finds
    the mission impossible (e.g. two critical failures) or the trace check fails.
    """

    kind = "ltl_planner"

    def __init__(
        self, *args: Any, mission: LtlMissionSpec, sync_timeout_s: float = 3.0, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.spec = mission
        self.sync_timeout_s = sync_timeout_s
        self.mission: Mission | None = None
        self.team_plan: TeamPlan | None = None
        self.epoch = 0
        self.plans: dict[str, tuple[int, RobotPlan]] = {}  # robot -> (seq, plan)
        self.done: dict[str, tuple[int, int]] = {}  # robot -> (epoch, seq) reported done
        self.segments: dict[str, dict[int, list[TSState]]] = {}  # from ltl.done
        self.stream: dict[str, dict[int, list[TSState]]] = {}  # from ltl.step
        self.failed: set[str] = set()
        self.starts: dict[tuple[str, int], TSState] = {}  # (robot, epoch) -> start state
        self.replans: list[dict[str, Any]] = []
        self._finished: asyncio.Future[int] | None = None
        self._status = StatusReporter(self, "ltl", "plan steps")
        self.reallocation = Reallocation(self)

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``sync_timeout_s`` and the mission. Raises ConfigError."""
        params = decode_params(spec, config, LtlPlannerParams)
        return {"mission": ltl_mission(config), **params_dict(params)}

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "formula": self.spec.formula,
            "robots": [r.id for r in self.spec.robots],
        }

    @property
    def robot_ids(self) -> list[str]:
        return [r.id for r in self.spec.robots]

    @property
    def running(self) -> bool:
        """``main`` has begun and the mission has no verdict yet."""
        return self._finished is not None and not self._finished.done()

    async def setup(self) -> None:
        self.on_team(REPLAN, self.reallocation.on_replan, kind="ltl.replan")
        self.on_agents(TRACE, self._on_step, kind="ltl.step")
        self.on_agents(STATUS, self._on_status)

    # -- offline -------------------------------------------------------------------

    async def main(self) -> None:
        self._finished = asyncio.get_running_loop().create_future()
        t0 = time.perf_counter()
        try:
            self.mission = self.spec.mission()
            built = time.perf_counter()
            self.team_plan = self.mission.allocate()
        except PlanningError as exc:
            await self.impossible(f"offline allocation failed: {exc}", strategy="offline")
            self.exit_code = await self._finished
            return
        took = time.perf_counter() - t0
        self.log.info(
            "ltl.allocated",
            strategy="offline",
            robots=len(self.spec.robots),
            automaton_states=self.mission.automaton.n_states,
            build_ms=round((built - t0) * 1000, 2),
            took_ms=round(took * 1000, 2),
            cost=round(self.team_plan.cost, 2),
        )
        self.plans = {n: (0, self.team_plan[n]) for n in self.team_plan.plans}
        self.starts = {(n, 0): p.states[0] for n, p in self.team_plan.plans.items()}
        await self.publish(
            MISSION,
            "ltl.mission",
            {
                "run": self.session,
                "formula": self.spec.formula,
                "scenario": self.spec.scenario,
                "objective": self.spec.objective,
                "time_factor": self.spec.time_factor,
                "order": self.robot_ids,
                "robots": {
                    r.id: {"type": r.type, "start": list(r.start)} for r in self.spec.robots
                },
            },
            retain=True,
        )
        await self.publish_plans(self.robot_ids, "offline")
        await self._report()
        self.exit_code = await self._finished

    async def publish_plans(self, robots: Sequence[str], strategy: str) -> None:
        """Publish the current plans of ``robots`` (retained, one to each robot)."""
        dropped = sorted(self.failed)
        for name in robots:
            seq, plan = self.plans[name]
            wire = plan_to_wire(plan)
            body = to_wire(PlanMessageWire(self.session, self.epoch, seq, strategy, dropped, wire))
            self.log.info(
                "ltl.plan",
                robot=name,
                epoch=self.epoch,
                seq=seq,
                strategy=strategy,
                cost=round(plan.cost, 2),
                waits_for=list(plan.waits_for),
                actions=_summary(plan),
            )
            await self.publish(PLAN, "ltl.plan", body, recipient=name, retain=True)

    # -- traces and status -------------------------------------------------------------

    async def _on_step(self, env: Envelope, topic: Topic) -> None:
        try:
            step = decode(env.body, StepWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if step.run != self.session:
            return
        state = TSState(*step.state)
        self.stream.setdefault(env.sender, {}).setdefault(step.epoch, []).append(state)
        await self._report()

    async def _on_status(self, env: Envelope, topic: Topic) -> None:
        if env.kind not in ("ltl.plan_received", "ltl.done"):
            return
        try:
            if env.kind == "ltl.plan_received":
                got = decode(env.body, PlanReceivedWire)
            else:
                done = decode(env.body, DoneWire)
        except LtlWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if env.kind == "ltl.plan_received":
            seq_plan = self.plans.get(env.sender)
            if got.run != self.session or got.epoch != self.epoch or not seq_plan:
                return
            if got.seq == seq_plan[0]:
                match = got.digest == plan_digest(seq_plan[1])
                (self.log.debug if match else self.log.warning)(
                    "ltl.plan_acknowledged", robot=env.sender, digest_match=match
                )
            return
        if done.run != self.session:
            return
        segs = {int(e): states_from_wire(s) for e, s in done.segments.items()}
        version = (done.epoch, done.seq)
        self.segments[env.sender] = segs
        self.done[env.sender] = version
        self.log.info("ltl.robot_done", robot=env.sender, epoch=version[0], seq=version[1])
        await self._report()
        await self.maybe_finish()

    async def maybe_finish(self) -> None:
        """Check the joint trace once every robot reports its current plan done and no
        reallocation is under way."""
        if self.reallocation.busy or self._finished is None or self._finished.done():
            return
        for name in self.robot_ids:
            seq = self.plans[name][0] if name in self.plans else -1
            if self.done.get(name) != (self.epoch, seq):
                return
        await self._verdict()

    async def _report(self, state: str = "running", reason: str = "") -> None:
        """The mission's status: plan steps taken of those planned (earlier epochs' as
        taken, the current plans' in full) and how many robots finished their plan."""
        done = total = 0
        for name in self.robot_ids:
            epochs = self.stream.get(name, {})
            taken = sum(len(steps) for steps in epochs.values())
            current = len(epochs.get(self.epoch, ()))
            planned = len(self.plans[name][1].actions) if name in self.plans else 0
            done += taken
            total += taken - current + max(planned, current)
        finished = sum(
            1
            for n in self.robot_ids
            if n in self.plans and self.done.get(n) == (self.epoch, self.plans[n][0])
        )
        detail = f"formula: {finished} of {len(self.robot_ids)} robots through their plan"
        if self.epoch:
            detail += f", {self.epoch} re-plan(s)"
        await self._status.report(state, done=done, total=total, reason=reason, detail=detail)

    def joint_segments(self) -> dict[str, list[list[TSState]]]:
        """Each robot's trace segments, one per epoch (a robot without a report for an
        epoch contributes a one-state segment: it read no labels)."""
        out: dict[str, list[list[TSState]]] = {}
        for name in self.robot_ids:
            segs = self.segments.get(name) or {}
            last = self.plans[name][1].states[0] if name in self.plans else None
            row = []
            for e in range(self.epoch + 1):
                seg = segs.get(e) or self.stream_segment(name, e)
                if not seg:
                    seg = [last] if last is not None else []
                row.append(seg)
                if seg:
                    last = seg[-1]
            out[name] = row
        return out

    def stream_segment(self, name: str, epoch: int) -> list[TSState]:
        """A robot's segment of `epoch` rebuilt from its published steps (when it did
        not report one): the epoch's start state, then every step."""
        start = self.starts.get((name, epoch))
        steps = self.stream.get(name, {}).get(epoch, [])
        return ([start] if start is not None else []) + steps

    async def _verdict(self) -> None:
        assert self.mission is not None and self._finished is not None
        segments = self.joint_segments()
        systems = {n: r.ts for n, r in self.mission.robots.items()}
        verdict = check_trace(self.mission.automaton, segments, systems=systems)
        body = {
            "run": self.session,
            "satisfied": verdict.satisfied,
            "impossible": False,
            "reason": verdict.reason,
            "arrangement": [list(x) for x in verdict.arrangement],
            "remaining": verdict.remaining,
            "epochs": self.epoch + 1,
            "replans": self.replans,
            "segments": {n: [[list(s) for s in seg] for seg in row] for n, row in segments.items()},
        }
        await self.publish(VERDICT, "ltl.verdict", body, retain=True)
        strategies = [r["strategy"] for r in self.replans]
        if verdict.satisfied:
            self.log.info(
                "ltl.verdict",
                satisfied=True,
                reason=verdict.reason,
                replans=strategies,
                epochs=self.epoch + 1,
            )
            print(
                f"VERDICT: mission satisfied ({verdict.reason}); strategies run: "
                f"{', '.join(strategies) or 'none'}",
                flush=True,
            )
            await self._report("succeeded", f"formula satisfied: {verdict.reason}")
            self._finished.set_result(0)
        else:
            await self._report("failed", f"formula NOT satisfied: {verdict.reason}")
            self.log.error("ltl.verdict", satisfied=False, reason=verdict.reason)
            print(f"VERDICT: mission NOT satisfied: {verdict.reason}", flush=True)
            self._finished.set_result(1)

    async def impossible(self, reason: str, *, strategy: str, robot: str | None = None) -> None:
        """Report the mission impossible (verdict, status, exit 1) saying why."""
        failed = sorted(self.failed)
        corridors = self.reallocation.corridors.describe()
        if corridors:  # the verdict (and so the run's summary) says what stood in the way
            reason = f"{reason} (blocked corridors: {corridors})"
        self.log.error(
            "ltl.mission_impossible", strategy=strategy, robot=robot, failed=failed, reason=reason
        )
        print(
            "MISSION IMPOSSIBLE: "
            f"{reason} (strategy {strategy}; failed robots: {', '.join(failed) or 'none'})",
            flush=True,
        )
        await self.publish(
            VERDICT,
            "ltl.verdict",
            {
                "run": self.session,
                "satisfied": False,
                "impossible": True,
                "reason": reason,
                "failed": failed,
                "replans": self.replans,
            },
            retain=True,
        )
        await self._report("failed", f"impossible: {reason}")
        if self._finished is not None and not self._finished.done():
            self._finished.set_result(1)
