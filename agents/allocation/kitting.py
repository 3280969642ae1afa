"""Seed 001's kitting over the broker: the cobot (Algorithm 1) and a simulated human.

Neither agent reads the other's memory. What happens on the table is published as
actions, the way a camera would see them:

- ``<human>/actions``  ``kitting.human_action``  ``{action: H1|H2|H4, task, colour, phase}``
  (``phase`` is ``start`` when the hand reaches for the block, ``end`` when it is placed).
  The human never publishes task state or whether it erred: the cobot judges each
  action against the pattern (wrong colour, or a spot filled before the one before it).
- ``<cobot>/actions``  ``kitting.robot_action``  ``{action: R1|R2|R3|R4, task, phase,
  cancels, colour}``; ``phase`` is ``start``, ``end`` or ``abort``; ``cancels`` is
  ``R5``/``R6`` when the action first takes back an assignment (R5+R1, R6+R2);
  ``colour`` is the pattern's colour for the spot (what the person's screen shows).
- ``<cobot>/status``   ``kitting.start`` (the episode begins) and ``kitting.done``
  (every spot is filled correctly; the body is the run's summary).
- ``<cobot>/plans``    ``kitting.plan`` each plan the allocation service returned.

Both keep a replica of the board (:class:`Board`) from these messages. The human has
priority on the table: if the cobot sees the human start on the subtask it is working
on, it aborts its action and re-plans. Durations are the scenario's seconds divided by
``[mission] time_factor``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from teamtree.agents.allocation.allocator import SOLVE, AllocationRefused, schedule_from_body
from teamtree.agents.allocation.allocator import request_allocation as ask_service
from teamtree.agents.allocation.kitting_wire import (
    DONE,
    HUMAN_ACTION,
    PLAN,
    ROBOT_ACTION,
    START,
    DoneBody,
    HumanActionBody,
    KittingWireError,
    PlanBody,
    RobotActionBody,
    StartBody,
    decode_kitting,
    to_wire,
)
from teamtree.agents.allocation.params import CobotParams, KittingHumanParams
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.runtime.outcome import RESULT_CHANNEL, RESULT_KIND, result_body
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import (
    ConfigError,
    ConnectionLostError,
    PlanningError,
    RequestError,
    RequestTimeoutError,
)
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.allocation import (
    DEFAULT_PATTERN,
    BeliefConfig,
    Colour,
    ErrorEvidence,
    FixedBeliefs,
    FollowEvidence,
    HumanAction,
    HumanBeliefs,
    KittingScenario,
    RobotAction,
    Schedule,
    SimulatedHuman,
    SubtaskState,
    decide_human,
    needs_correction,
    preds_done,
    robot_fallback,
    robot_pick,
)

ACTIONS = "actions"
STATUS = "status"
PLANS = "plans"
LATE_PAUSE_S = 0.2
"""The cobot's pause before asking again when its request reached the allocation service
too late to be solved (a ``deadline`` refusal)."""
__all__ = [
    "DONE",
    "HUMAN_ACTION",
    "PLAN",
    "ROBOT_ACTION",
    "START",
    "Board",
    "CobotAgent",
    "KittingHumanAgent",
    "kitting_result",
    "mission_settings",
]

_S = SubtaskState


def mission_settings(config: TeamConfig) -> tuple[float, tuple[Colour, ...]]:
    """``[mission] time_factor`` (default 10) and ``pattern`` (20 colour names, default
    the planner's DEFAULT_PATTERN). Raises ConfigError naming the key."""
    params = config.mission.params
    tf = params.get("time_factor", 10.0)
    if isinstance(tf, bool) or not isinstance(tf, int | float) or tf <= 0:
        raise ConfigError(
            f"is {tf!r}; expected a positive speed-up (scenario seconds per wall second)",
            path=str(config.path),
            key="mission.time_factor",
        )
    raw = params.get("pattern")
    if raw is None:
        return float(tf), DEFAULT_PATTERN
    names = ", ".join(c.value for c in Colour)
    if not isinstance(raw, list) or len(raw) != len(DEFAULT_PATTERN):
        raise ConfigError(
            f"expected a list of {len(DEFAULT_PATTERN)} colours ({names})",
            path=str(config.path),
            key="mission.pattern",
        )
    try:
        return float(tf), tuple(Colour(c) for c in raw)
    except ValueError:
        raise ConfigError(
            f"has an unknown colour; use {names}", path=str(config.path), key="mission.pattern"
        ) from None


class Board:
    """A replica of the table built from published actions: the Fig. 6 state of every
    subtask, what the robot is doing and what the human is doing."""

    def __init__(self, scenario: KittingScenario):
        self.scenario = scenario
        self.states: list[SubtaskState] = [_S.INITIAL] * scenario.n
        self.robot_busy: dict[int, RobotAction] = {}
        self.human_busy: tuple[int, HumanAction] | None = None

    def all_placed(self) -> bool:
        return all(s is _S.PLACED_CORRECTLY for s in self.states)

    def human_end(self, task: int, action: HumanAction, correct: bool) -> None:
        """The human put a block down (H1 on the spot, H2 on the robot's tray, H4)."""
        if action is HumanAction.H2:
            self.states[task] = (
                _S.ASSIGNED_TO_ROBOT_CORRECTLY if correct else _S.ASSIGNED_TO_ROBOT_INCORRECTLY
            )
        else:
            self.states[task] = _S.PLACED_CORRECTLY if correct else _S.MISPLACED
        self.human_busy = None

    def robot_end(self, task: int, action: RobotAction) -> None:
        """The robot finished: R2 puts a block on the human's tray, R3 clears an error,
        R1 and R4 fill the spot."""
        self.robot_busy.pop(task, None)
        if action is RobotAction.R2:
            self.states[task] = _S.ASSIGNED_TO_HUMAN
        elif action is RobotAction.R3:
            self.states[task] = _S.INITIAL
        else:
            self.states[task] = _S.PLACED_CORRECTLY

    def pattern_text(self) -> str:
        """One character per spot, workspace by workspace (``#`` done, ``x`` wrong,
        ``h``/``r`` on a tray, ``.`` empty)."""
        sym = {
            _S.INITIAL: ".",
            _S.ASSIGNED_TO_HUMAN: "h",
            _S.ASSIGNED_TO_ROBOT_CORRECTLY: "r",
            _S.ASSIGNED_TO_ROBOT_INCORRECTLY: "x",
            _S.MISPLACED: "x",
            _S.PLACED_CORRECTLY: "#",
        }
        k = self.scenario.spots_per_workspace
        chars = "".join(sym[s] for s in self.states)
        return " ".join(chars[i : i + k] for i in range(0, len(chars), k))


def _task(kind: str, task: int, n: int) -> int:
    """A decoded body's ``task``, checked against the scenario's n subtasks."""
    if task >= n:
        raise KittingWireError(
            f"bad {kind} body: task must be 0..{n - 1}, got {task} - at `$.task`"
        )
    return task


# -- the simulated human ----------------------------------------------------------------


class KittingHumanAgent(Agent):
    """A simulated human who follows with P_follow and errs with P_error (§VI).

    It waits for the cobot's ``kitting.start`` and walks to the table (the scenario's
    ``human_min_start``), then repeatedly picks an action with the study's policy
    (``decide_human``) from its own view of the table, publishes its start, takes the
    action's time, and publishes its end. It stops at ``kitting.done``. A cobot that
    goes away before the pattern is done and is not back within ``service_timeout_s``
    ends the human's run with ``mission.failed`` naming it (exit code 2), never a
    silent wait.
    """

    kind = "kitting_human"
    overridable = frozenset({"p_follow", "p_error", "seed"})

    def __init__(
        self,
        *args: Any,
        p_follow: float = 0.6,
        p_error: float = 0.1,
        seed: int = 0,
        cobot: str = "cobot",
        time_factor: float = 10.0,
        pattern: tuple[Colour, ...] = DEFAULT_PATTERN,
        service_timeout_s: float = 30.0,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.service_timeout_s = service_timeout_s
        self._cobot_watch: asyncio.Task[None] | None = None
        self.human = SimulatedHuman(p_follow, p_error)
        self.rng = random.Random(seed)
        self.cobot = cobot
        self.time_factor = time_factor
        self.scenario = KittingScenario.default(pattern)
        self.board = Board(self.scenario)
        self._started = asyncio.Event()
        self._finished = asyncio.Event()
        self._changed = asyncio.Event()
        self.actions = 0
        self.wrong = 0

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``p_follow``, ``p_error`` (probabilities), ``seed``, ``cobot`` (id)."""
        params = params_dict(decode_params(spec, config, KittingHumanParams))
        tf, pattern = mission_settings(config)
        return {**params, "time_factor": tf, "pattern": pattern}

    def factsheet(self) -> dict[str, Any]:
        return {**super().factsheet(), "role": "human", "cobot": self.cobot}

    async def setup(self) -> None:
        self.on_agents(ACTIONS, self._on_robot_action, kind=ROBOT_ACTION)
        self.on_agents(STATUS, self._on_status)

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if agent_id != self.cobot:
            return
        gone = new is not Presence.ONLINE
        if gone and self._started.is_set() and self.board.all_placed():
            self._finished.set()
        elif gone and self._cobot_watch is None:
            self._cobot_watch = self.spawn(self._cobot_gone(new), "cobot_watch", optional=True)
        elif not gone and self._cobot_watch is not None:
            self._cobot_watch.cancel()
            self._cobot_watch = None

    async def _cobot_gone(self, state: Presence) -> None:
        """The cobot is gone; unless it is back within ``service_timeout_s``, fail."""
        await asyncio.sleep(self.service_timeout_s)
        if self._finished.is_set():
            return
        self.log.error(
            "mission.failed",
            reason=f"the cobot {self.cobot!r} has been {state.value} for "
            f"{self.service_timeout_s:g} s and the pattern is not done",
            fix="restart the cobot (and the allocation service it needs); "
            "service_timeout_s sets how long the human waits for it",
        )
        self.request_stop(2)

    async def _on_status(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.cobot or env.kind not in (START, DONE):
            return
        try:
            decode_kitting(env.kind, env.body)
        except KittingWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        if env.kind == START:
            self._started.set()
        elif env.kind == DONE:
            self._finished.set()
        self._changed.set()

    async def _on_robot_action(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.cobot:
            return
        try:
            body: RobotActionBody = decode_kitting(ROBOT_ACTION, env.body)
            task = _task(ROBOT_ACTION, body.task, self.scenario.n)
        except KittingWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        action, phase = RobotAction[body.action], body.phase
        if phase == "start":
            self.board.robot_busy[task] = action
        elif phase == "end":
            self.board.robot_end(task, action)
        elif phase == "abort":
            self.board.robot_busy.pop(task, None)
        self._changed.set()

    async def main(self) -> None:
        await self._started.wait()
        self.log.info(
            "kitting.human_start", p_follow=self.human.p_follow, p_error=self.human.p_error
        )
        # walk to the table first (the schedule's human_min_start), as the study's human does
        await asyncio.sleep(self.scenario.human_min_start / self.time_factor)
        while not self._finished.is_set():
            self._changed.clear()
            decision = decide_human(
                self.scenario, self.human, self.board.states, set(self.board.robot_busy), self.rng
            )
            if decision is None:
                await self._changed.wait()
                continue
            await self._act(decision.task, decision.action, decision.correct, decision.duration)
        self.log.info("kitting.human_done", actions=self.actions, wrong=self.wrong)

    async def _act(self, task: int, action: HumanAction, correct: bool, duration: float) -> None:
        colour = self.scenario.subtasks[task].colour
        out_of_order = not preds_done(self.scenario, self.board.states, task)
        if not correct and not (action is HumanAction.H1 and out_of_order):
            colour = self.rng.choice([c for c in Colour if c is not colour])
        self.board.human_busy = (task, action)
        await self.publish(ACTIONS, HUMAN_ACTION, _human_action(action, task, colour, "start"))
        await asyncio.sleep(duration / self.time_factor)
        self.board.human_end(task, action, correct)
        self.actions += 1
        self.wrong += not correct
        await self.publish(ACTIONS, HUMAN_ACTION, _human_action(action, task, colour, "end"))
        self.log.debug("kitting.human_action", action=action.name, task=task, correct=correct)


def _human_action(action: HumanAction, task: int, colour: Colour, phase: str) -> dict[str, Any]:
    return to_wire(
        HumanActionBody(action=action.name, task=task, colour=colour.value, phase=phase)  # type: ignore[arg-type]
    )


def _robot_action(
    action: RobotAction, task: int, cancels: str | None, phase: str, colour: Any = UNSET
) -> dict[str, Any]:
    body = RobotActionBody(
        action=action.name,  # type: ignore[arg-type]
        task=task,
        cancels=cancels,  # type: ignore[arg-type]
        colour=colour,
        phase=phase,  # type: ignore[arg-type]
    )
    return to_wire(body)


# -- the cobot ---------------------------------------------------------------------------


def kitting_result(summary: dict[str, Any]) -> dict[str, Any]:
    """The kitting episode's ``mission.result``: ok only when the kit holds the whole
    pattern (every subtask placed right), with the episode's figures in one sentence."""
    ok = bool(summary["pattern_correct"])
    said = (
        f"kit {'complete' if ok else 'NOT complete'} in {summary['makespan']:g} s of "
        f"scenario time; {summary['robot_to_human']} subtask(s) assigned to the human by "
        f"the robot, {summary['human_to_robot']} to the robot by the human, "
        f"{summary['wrong_human_actions']} wrong human action(s) corrected"
    )
    return result_body("kitting", ok, said)


@dataclass
class _HumanSeen:
    """A human action the cobot saw start."""

    task: int
    action: HumanAction
    colour: str
    started: float  # monotonic
    estimate: float  # expected duration, scenario seconds
    in_order: bool  # the spot before was filled when it started
    tray_waiting: bool  # an assigned block was waiting on its tray


@dataclass
class _RobotDoing:
    task: int
    action: RobotAction
    cancels: str | None
    job: asyncio.Task[None]


class CobotAgent(Agent):
    """The cobot of seed 001 running Algorithm 1 over the broker.

    Monitor the human's published actions; detect errors against the pattern; update the
    task and the beliefs (eqs. 24-29); when the task changed, re-plan through the
    allocation service (``allocation.solve`` on ``_/allocation``, kitting form, warm
    started from the previous answer); act on the first robot task of the schedule that
    can start. When the human is idle and the plan has nothing startable, the robot leads.
    """

    kind = "cobot"
    overridable = frozenset({"solver", "adaptive"})

    def __init__(
        self,
        *args: Any,
        human: str = "human",
        adaptive: bool = True,
        fixed_p_follow: float = 1.0,
        fixed_p_error: float = 0.0,
        follow_prior: str = "code",
        solver: str = "auto",
        allocation_time_limit: float = 3.0,
        schedule_time_limit: float = 4.0,
        schedule_gap: float = 0.004,
        request_timeout: float = 10.0,
        attempts: int = 3,
        idle_grace: float = 1.0,
        h2_fraction: float = 0.5,
        start_timeout: float = 30.0,
        service_timeout_s: float = 30.0,
        time_factor: float = 10.0,
        pattern: tuple[Colour, ...] = DEFAULT_PATTERN,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.human = human
        self.adaptive = adaptive
        config = BeliefConfig.paper_text() if follow_prior == "text" else BeliefConfig()
        self.beliefs: HumanBeliefs | FixedBeliefs = (
            HumanBeliefs(config) if adaptive else FixedBeliefs(fixed_p_follow, fixed_p_error)
        )
        self.options = {
            "solver": solver,
            "allocation": {"time_limit": allocation_time_limit},
            "schedule": {"time_limit": schedule_time_limit, "mip_gap": schedule_gap},
        }
        self.request_timeout = request_timeout
        self.attempts = attempts
        self.idle_grace = idle_grace
        self.h2_fraction = h2_fraction
        self.start_timeout = start_timeout
        self.service_timeout_s = service_timeout_s
        self._service_lost_at: float | None = None
        self.time_factor = time_factor
        self.scenario = KittingScenario.default(pattern)
        self.board = Board(self.scenario)
        self.version = 0
        self._changed = asyncio.Event()
        self._human: _HumanSeen | None = None
        self._human_idle_since = time.monotonic()
        self._robot: _RobotDoing | None = None
        self._warm: dict[str, Any] | None = None
        self._t0 = 0.0
        self.wrong = self.robot_to_human = self.human_to_robot = self.aborts = 0
        self.solve_times: list[float] = []
        self.round_trips: list[float] = []
        self._status = StatusReporter(self, "kitting", "kit spots")

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate the cobot's keys (see configs/kitting.toml for each one's meaning)."""
        params = params_dict(decode_params(spec, config, CobotParams))
        tf, pattern = mission_settings(config)
        return {**params, "time_factor": tf, "pattern": pattern}

    def factsheet(self) -> dict[str, Any]:
        # the pattern (colour of each spot, W1..W4 row by row) lets a viewer draw the kit
        pattern = [s.colour.value for s in self.scenario.subtasks]
        return {**super().factsheet(), "role": "robot", "human": self.human, "pattern": pattern,
                "spots": self.scenario.spots_per_workspace}  # fmt: skip

    async def setup(self) -> None:
        self.on_agents(ACTIONS, self._on_human_action, kind=HUMAN_ACTION)

    # -- time ------------------------------------------------------------------------

    def now(self) -> float:
        """Scenario seconds since the episode started."""
        return (time.monotonic() - self._t0) * self.time_factor

    # -- monitoring: the human's actions ------------------------------------------------

    async def _on_human_action(self, env: Envelope, topic: Topic) -> None:
        if env.sender != self.human:
            return
        try:
            body: HumanActionBody = decode_kitting(HUMAN_ACTION, env.body)
            task = _task(HUMAN_ACTION, body.task, self.scenario.n)
        except KittingWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        action, colour, phase = HumanAction[body.action], body.colour, body.phase
        if phase == "start":
            await self._human_started(task, action, colour)
        else:
            await self._human_ended(task, action, colour)
        self._changed.set()

    async def _human_started(self, task: int, action: HumanAction, colour: str) -> None:
        states, sc = self.board.states, self.scenario
        tray = any(
            states[i] is _S.ASSIGNED_TO_HUMAN
            and i not in self.board.robot_busy
            and preds_done(sc, states, i)
            for i in range(sc.n)
        )
        t_h = sc.subtasks[task].t_human
        self._human = _HumanSeen(
            task,
            action,
            colour,
            time.monotonic(),
            t_h * (self.h2_fraction if action is HumanAction.H2 else 1.0),
            preds_done(sc, states, task),
            tray,
        )
        self.board.human_busy = (task, action)
        if self._robot is not None and self._robot.task == task:
            await self._abort_robot("the human took this subtask")

    async def _human_ended(self, task: int, action: HumanAction, colour: str) -> None:
        seen = self._human if self._human and self._human.task == task else None
        right_colour = colour == self.scenario.subtasks[task].colour.value
        in_order = seen.in_order if seen else preds_done(self.scenario, self.board.states, task)
        if action is HumanAction.H4:
            correct = True
        elif action is HumanAction.H2:
            correct = right_colour
        else:
            correct = right_colour and in_order
        self.board.human_end(task, action, correct)
        # update the beliefs (eqs. 24-29): follow evidence, and error evidence for actions
        # the robot did not assign
        if action is HumanAction.H4:
            self.beliefs.observe_follow(FollowEvidence.DID_ASSIGNED)
        else:
            if action is HumanAction.H2:
                self.human_to_robot += 1
                self.beliefs.observe_follow(FollowEvidence.ASSIGNED_TO_ROBOT)
            elif seen is not None and seen.tray_waiting:
                self.beliefs.observe_follow(FollowEvidence.REFRAINED)
            self.beliefs.observe_error(ErrorEvidence.CORRECT if correct else ErrorEvidence.ERROR)
        if not correct:
            self.wrong += 1
            why = "colour" if not right_colour else "order"
            self.log.info("kitting.error_detected", task=task, action=action.name, wrong=why)
        self._human = None
        self._human_idle_since = time.monotonic()
        self.version += 1

    # -- acting -----------------------------------------------------------------------

    def _robot_action(self, tid: str) -> tuple[int, RobotAction, str | None, float]:
        i = int(tid[1:])
        sub, st, sc = self.scenario.subtasks[i], self.board.states[i], self.scenario
        if tid[0] == "e":
            dur = sc.tray_return_time if st is _S.ASSIGNED_TO_ROBOT_INCORRECTLY else sub.t_robot
            return i, RobotAction.R3, None, dur
        if tid[0] == "a":
            cancels = "R6" if st is _S.ASSIGNED_TO_ROBOT_CORRECTLY else None
            return i, RobotAction.R2, cancels, sc.assign_robot_time
        if st is _S.ASSIGNED_TO_HUMAN:
            return i, RobotAction.R1, "R5", sub.t_robot
        if st is _S.ASSIGNED_TO_ROBOT_CORRECTLY:
            return i, RobotAction.R4, None, sub.t_robot
        return i, RobotAction.R1, None, sub.t_robot

    async def _start_robot(self, tid: str) -> None:
        task, action, cancels, duration = self._robot_action(tid)
        self.board.robot_busy[task] = action
        colour = self.scenario.subtasks[task].colour.value  # what a person's screen shows
        await self.publish(
            ACTIONS, ROBOT_ACTION, _robot_action(action, task, cancels, "start", colour)
        )
        job = self.spawn(
            self._perform(task, action, cancels, duration), f"act.{tid}", optional=True
        )
        self._robot = _RobotDoing(task, action, cancels, job)
        self.log.debug("kitting.robot_start", action=action.name, task=task, t=round(self.now(), 2))

    async def _perform(
        self, task: int, action: RobotAction, cancels: str | None, duration: float
    ) -> None:
        await asyncio.sleep(duration / self.time_factor)
        self.board.robot_end(task, action)
        if action is RobotAction.R2:
            self.robot_to_human += 1
        self._robot = None
        self.version += 1
        self._changed.set()
        colour = self.scenario.subtasks[task].colour.value
        await self.publish(
            ACTIONS, ROBOT_ACTION, _robot_action(action, task, cancels, "end", colour)
        )

    async def _abort_robot(self, reason: str) -> None:
        doing, self._robot = self._robot, None
        if doing is None:
            return
        doing.job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await doing.job
        self.board.robot_busy.pop(doing.task, None)
        self.aborts += 1
        self.version += 1
        self.log.info(
            "kitting.robot_abort", task=doing.task, action=doing.action.name, reason=reason
        )
        body = _robot_action(doing.action, doing.task, doing.cancels, "abort")
        await self.publish(ACTIONS, ROBOT_ACTION, body)

    # -- planning ----------------------------------------------------------------------

    async def _plan(self) -> tuple[Schedule, float]:
        """Ask the service for an allocation and schedule of the current task; returns the
        schedule and the monotonic time its facts were taken."""
        taken = time.monotonic()
        in_progress = None
        if self._human is not None:
            h = self._human
            remaining = max(0.0, h.estimate - (taken - h.started) * self.time_factor)
            in_progress = {"task": h.task, "action": h.action.name, "remaining": remaining}
        body: dict[str, Any] = {
            "problem": {
                "form": "kitting",
                "states": [s.value for s in self.board.states],
                "p_follow": self.beliefs.p_follow,
                "p_error": self.beliefs.p_error,
                "in_progress": in_progress,
            },
            "options": self.options,
        }
        if self._warm is not None:
            body["warm_start"] = self._warm
        reply = await ask_service(
            self, SOLVE, body, timeout=self.request_timeout, attempts=self.attempts
        )
        rt = time.monotonic() - taken
        answer = reply.body
        self._warm = answer["warm_start"]
        self.solve_times.append(float(answer["solve_time"]))
        self.round_trips.append(rt)
        schedule = schedule_from_body(answer["schedule"])
        plan = PlanBody(
            version=self.version,
            t=self.now(),
            alpha_f=self.beliefs.p_follow,
            alpha_e=self.beliefs.p_error,
            assignment=answer["allocation"]["assignment"],
            robot=list(schedule.sequence.get("robot", ())),
            makespan=schedule.makespan,
            solver=answer["solver"],
            solve_time=answer["solve_time"],
            round_trip=rt,
            replica=reply.sender,
        )
        await self.publish(PLANS, PLAN, to_wire(plan))
        return schedule, taken

    # -- Algorithm 1 -------------------------------------------------------------------

    async def _wait_for_team(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout
        while not (
            self.human in self.team_view.online("kitting_human")
            and self.team_view.online("allocator")
        ):
            if loop.time() > deadline:
                raise PlanningError(
                    f"no human {self.human!r} and allocation service online after "
                    f"{self.start_timeout:.0f} s"
                )
            await asyncio.sleep(0.02)

    async def main(self) -> None:
        await self._wait_for_team()
        self._t0 = self._human_idle_since = time.monotonic()
        start = StartBody(human=self.human, time_factor=self.time_factor, n=self.scenario.n)
        await self.publish(STATUS, START, to_wire(start))
        self.log.info("kitting.start", human=self.human, adaptive=self.adaptive)
        schedule: Schedule | None = None
        planned_version, planned_at = -1, 0.0
        while True:
            self._changed.clear()
            await self._kit_status()
            if self.board.all_placed() and self._human is None and self._robot is None:
                break
            timeout: float | None = None
            if self._robot is None and not self.board.all_placed():
                if schedule is None or planned_version != self.version:
                    version = self.version
                    try:
                        schedule, planned_at = await self._plan()
                    except ConnectionLostError as exc:  # the broker went, not the service
                        self.log.warning("allocation.connection_lost", error=str(exc))
                        await self.wait_connected()  # it reconnects on its own
                        continue  # plan again
                    except (RequestTimeoutError, AllocationRefused) as exc:
                        if isinstance(exc, AllocationRefused):
                            if exc.code != "deadline":
                                raise
                            # the request reached the service too late to be solved (one
                            # restarting took it from the broker, or it came behind
                            # others): as if unanswered, ask again while the wait allows
                            self.log.warning("allocation.late", replica=exc.replica)
                            await asyncio.sleep(LATE_PAUSE_S)
                        if await self._service_back():
                            continue  # plan again: a restarted service answers
                        self._service_lost(exc)
                        await self._kit_status("failed", f"the allocation service is gone: {exc}")
                        return
                    self._service_lost_at = None
                    planned_version = version
                locked = set(self.board.robot_busy)
                if self._human is not None:
                    locked.add(self._human.task)
                elapsed = (time.monotonic() - planned_at) * self.time_factor
                tid = robot_pick(self.scenario, self.board.states, locked, schedule, elapsed)
                idle = (time.monotonic() - self._human_idle_since) * self.time_factor
                if tid is None and self._human is None and idle >= self.idle_grace:
                    tid = robot_fallback(self.scenario, self.board.states, locked)
                if tid is not None:
                    await self._start_robot(tid)
                    continue
                timeout = 0.02 if self._human is None else 0.05
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
        await self._finish()

    async def _service_back(self) -> bool:
        """After a request nobody answered: wait for an allocation service to be ONLINE,
        at most ``service_timeout_s`` since the service was first found missing. True:
        one is (plan again); False: the service is lost."""
        now = time.monotonic()
        if self._service_lost_at is None:
            self._service_lost_at = now
        deadline = self._service_lost_at + self.service_timeout_s
        while time.monotonic() < deadline:
            if self.team_view.online("allocator"):
                return True
            await asyncio.sleep(0.1)
        return False

    def _service_lost(self, exc: RequestError) -> None:
        """No allocation service answered in time (none at all, or only too late to
        solve) and none did within ``service_timeout_s``: end with an error naming it
        (exit code 2), never a silent wait."""
        self.log.error(
            "mission.failed",
            reason=f"the allocation service is gone: {exc}, and none came back within "
            f"service_timeout_s ({self.service_timeout_s:g} s)",
            fix="start an allocator (kind 'allocator') for the team; service_timeout_s "
            "sets how long the cobot waits for one",
        )
        self.request_stop(2)

    def summary(self) -> dict[str, Any]:
        """The run's metrics (§VI) and service figures."""

        def p50(xs: list[float]) -> float:
            return statistics.median(xs) if xs else 0.0

        return {
            "makespan": round(self.now(), 3),
            "wrong_human_actions": self.wrong,
            "robot_to_human": self.robot_to_human,
            "human_to_robot": self.human_to_robot,
            "alpha_f": round(self.beliefs.p_follow, 4),
            "alpha_e": round(self.beliefs.p_error, 4),
            "pattern_correct": self.board.all_placed(),
            "pattern": self.board.pattern_text(),
            "plans": len(self.solve_times),
            "aborts": self.aborts,
            "solve_s_p50": round(p50(self.solve_times), 4),
            "round_trip_s_p50": round(p50(self.round_trips), 4),
            "adaptive": self.adaptive,
        }

    async def _kit_status(self, state: str = "running", reason: str = "") -> None:
        """The mission's status: kit spots filled right of the pattern's."""
        right = sum(1 for s in self.board.states if s is _S.PLACED_CORRECTLY)
        detail = f"{self.wrong} wrong human action(s) seen" if self.wrong else ""
        await self._status.report(
            state, done=right, total=self.scenario.n, reason=reason, detail=detail
        )

    async def _finish(self) -> None:
        summary = self.summary()
        result = kitting_result(summary)
        await self._kit_status("succeeded" if result["ok"] else "failed", result["summary"])
        await self.publish(STATUS, DONE, to_wire(DoneBody(**summary)))
        self.log.info("kitting.summary", **summary)
        await self.publish(RESULT_CHANNEL, RESULT_KIND, result, team=True, retain=True)
        errors = [i for i, s in enumerate(self.board.states) if needs_correction(s)]
        if errors:  # pragma: no cover - all_placed() excludes this
            raise PlanningError(f"subtasks left wrong: {errors}")
