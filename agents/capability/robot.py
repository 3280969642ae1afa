"""The ``factory_robot`` kind: runs the pure favor machines of
``teamtree.planners.capability`` (a FavorResponder always, a FavorRequester per job) and
maps their actions to the wire (agents/capability/favor_wire.py)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from teamtree.agents.capability.channels import (
    FACTORY_CHANNEL,
    FAVOR_CHANNEL,
    FAVORS_CHANNEL,
    JOB_CHANNEL,
    LED_CHANNEL,
    REPORT_CHANNEL,
)
from teamtree.agents.capability.favor_wire import (
    FROM_HELPER,
    FavorWireError,
    lease_id,
    message_from_wire,
    message_to_wire,
    request_from_wire,
    request_to_wire,
)
from teamtree.agents.capability.job_record import (
    JobRecord,
    done_body,
    failure_body,
    selection_body,
)
from teamtree.agents.capability.job_wire import JobWireError, decode_assign
from teamtree.agents.capability.neighbourhood import PeerProfiles, neighbours
from teamtree.agents.capability.params import FactoryRobotParams
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import ConfigError
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic
from teamtree.hardware import (
    IDLE_BATTERY_THRESHOLD,
    ROBOT_TYPES,
    make_robot,
)
from teamtree.planners.capability import (
    JOBS,
    ActiveMatcher,
    FavorAction,
    FavorGrant,
    FavorRelease,
    FavorRequest,
    FavorRequester,
    FavorResponder,
    HelperLost,
    HelperStatus,
    LeaseState,
    Message,
    Method,
    Offer,
    PassiveMatcher,
    Peer,
    RequesterState,
    Selected,
    SelectionFailed,
    Send,
    WorkingMode,
    feasibility,
    replay,
)

LED_HOLD_S = 0.05
"""How long a robot that got a job may wait to publish its busy LED while its first
request round collects grants (a factsheet goes to the whole team on every LED change,
and in a big team reading it competes with the answers for the CPU). A round that
selects sooner publishes it then; the robot itself is busy from the job's receipt
(it declines requests at once)."""

DIRECT_REQUESTS = 3
"""A request for this many robots or fewer goes to each on its own favor topic; one for
more goes once to the team's ``_/favors`` (every robot reads it, its targets answer)."""

#: factory_robot keys that may also be set once in [mission] for the whole team
TEAM_DEFAULTS: dict[str, tuple[Any, str]] = {
    "method": (1, "1 (passive, §IV) or 2 (active, §V)"),
    "comm_range": (1e9, "a positive communication range (position units)"),
    "ttl": (2, "a hop limit >= 1"),
    "window_s": (1.0, "seconds to collect grants at most (the request's deadline)"),
    "close_early": (
        3,
        "0, 1, 2 or 3 (1: close the window once every capable robot answered; "
        "2: also once the best team they can give has granted; 3: also ask that team "
        "first, the others only if it falls through; 0: never)",
    ),
    "retry_s": (0.3, "seconds before asking again when every robot answered and none fit"),
    "hold_s": (0.2, "seconds a granting helper waits for the acceptance"),
    "status_s": (0.2, "seconds between a helper's favor.status heartbeats"),
    "silence_s": (1.0, "seconds of helper silence before its lease expires"),
    "max_rounds": (5, "fruitless request rounds before a job fails (>= 1)"),
    "drain_per_s": (0.0, "battery fraction drained per second while busy or helping"),
    "favor_loss": (0.0, "fraction in [0, 1) of inbound favor messages to drop (tests)"),
    "loss_seed": (None, "an integer seed for the loss injection"),
}


def _team_default(config: TeamConfig, name: str) -> Any:
    default, what = TEAM_DEFAULTS[name]
    value = config.mission.params.get(name, default)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ConfigError(
            f"is {value!r}; expected {what}", path=str(config.path), key=f"mission.{name}"
        )
    return value


# ----------------------------------------------------------------------------- robot


class FactoryRobot(Agent):
    """A robot of the factory (Tables II, III): answers favors, and works the jobs it gets.

    Its LED (idle, busy, helping) is in its factsheet and on its retained ``led``
    topic. Battery drains by ``drain_per_s`` while busy or helping.
    """

    kind = "factory_robot"
    overridable: ClassVar[frozenset[str]] = frozenset(TEAM_DEFAULTS)

    def __init__(
        self,
        *args: Any,
        robot_type: str,
        position: tuple[float, float] = (0.0, 0.0),
        comm_range: float = 1e9,
        method: int = 1,
        ttl: int = 2,
        window_s: float = 1.0,
        close_early: int = 3,
        retry_s: float = 0.3,
        hold_s: float = 0.2,
        status_s: float = 0.2,
        silence_s: float = 1.0,
        max_rounds: int = 5,
        battery: float = 1.0,
        drain_per_s: float = 0.0,
        favor_loss: float = 0.0,
        loss_seed: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.profile = make_robot(robot_type, self.id, battery=battery)
        self.position = (float(position[0]), float(position[1]))
        self.comm_range = float(comm_range)
        self.method = Method(method)
        self.matchers: dict[Method, PassiveMatcher | ActiveMatcher] = {
            Method.PASSIVE: PassiveMatcher(),
            Method.ACTIVE: ActiveMatcher(),
        }
        self.ttl = ttl
        self.window_s = window_s
        self.close_early = int(close_early)
        self.retry_s = retry_s
        self._peer_profiles = PeerProfiles()
        self.silence_s = silence_s
        self.max_rounds = max_rounds
        self.battery = float(battery)
        self.drain_per_s = drain_per_s
        self.favor_loss = favor_loss
        self.loss_seed = random.randrange(1 << 31) if loss_seed is None else int(loss_seed)
        self._loss_rng = random.Random(f"{self.loss_seed}:{self.id}")
        self.responder = FavorResponder(
            self.profile,
            self.matchers[self.method],
            battery=self.battery,
            hold=hold_s,
            heartbeat=status_s,
        )
        self.requester: FavorRequester | None = None
        self.job: JobRecord | None = None
        self.led = "idle"
        self._available = self._is_available()
        self._last_tick: float | None = None
        self._lock = asyncio.Lock()

    # -- config ----------------------------------------------------------------------

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``type``, ``position``, ``battery`` and the favor settings (each may
        default from ``[mission]``, see TEAM_DEFAULTS). Raises ConfigError naming the key."""
        defaults = {name: _team_default(config, name) for name in TEAM_DEFAULTS}
        params = decode_params(spec, config, FactoryRobotParams, **defaults)
        if params.robot_type not in ROBOT_TYPES:
            raise spec_reader(spec, config).error(
                "type", f"is {params.robot_type!r}; expected one of {sorted(ROBOT_TYPES)}"
            )
        return params_dict(params)

    def factsheet(self) -> dict[str, Any]:
        """Kind, robot type and profile (C^self), position, range, LED and battery."""
        return {
            **super().factsheet(),  # kind, session, since, mission
            "robot_type": self.profile.kind,
            "profile": self.profile.to_dict(),
            "position": list(self.position),
            "comm_range": self.comm_range,
            "method": int(self.method),
            "led": self.led,
            "battery": round(self.battery, 4),
            "available": self._available,
        }

    # -- lifecycle -------------------------------------------------------------------

    async def setup(self) -> None:
        self.on_team(FAVORS_CHANNEL, self._on_request, kind="favor.request")
        self.on_agents(FAVOR_CHANNEL, self._on_favor, addressed=True)
        self.on_agents(JOB_CHANNEL, self._on_assign, kind="job.assign", addressed=True)
        self.on_team(FACTORY_CHANNEL, self._on_factory_done, kind="factory.done")
        self.log.info(
            "factory.robot",
            type=self.profile.kind,
            position=list(self.position),
            method=int(self.method),
            favor_loss=self.favor_loss,
            loss_seed=self.loss_seed,
        )

    async def on_connected(self) -> None:
        await self._publish_led()

    async def on_stop(self) -> None:
        self.log.info(
            "favor.stats",
            dropped=self.stats["favor_dropped"],
            malformed=self.stats["favor_malformed"],
            loss_seed=self.loss_seed,
            battery=round(self.battery, 3),
        )

    async def _on_factory_done(self, env: Envelope, topic: Topic) -> None:
        self.log.info("factory.done", by=env.sender)
        self.request_stop(0)

    # -- neighbours ------------------------------------------------------------------

    def neighbours(self, *, idle_only: bool = False) -> list[str]:
        """Online factory robots within communication range (optionally idle ones)."""
        return neighbours(
            self.team_view, self.kind, self.position, self.comm_range, idle_only=idle_only
        )

    def peers(self) -> dict[str, Peer]:
        """Every online factory robot but this one, as its factsheet describes it."""
        return self._peer_profiles.peers(self.team_view, self.id, self.kind)

    def _expected(
        self,
        req: FavorRequester,
        peers: Mapping[str, Peer],
        answers: dict[str, Offer | None] | None = None,
    ) -> list[str] | None:
        """The capable robots the request reaches (they grant or decline), or None
        when the window should wait for its deadline."""
        if not self.close_early:
            return None
        me = Peer(self.profile, self.position, self.comm_range)
        reach = replay(me, peers, req.query, req.matcher, self.ttl, answers=answers)
        return sorted(reach.answerers)

    # -- inbound ---------------------------------------------------------------------

    def _lost_in_transit(self) -> bool:
        if self.favor_loss > 0 and self._loss_rng.random() < self.favor_loss:
            self.stats["favor_dropped"] += 1
            return True
        return False

    async def _on_request(self, env: Envelope, topic: Topic) -> None:
        body = env.body
        if not isinstance(body, dict) or self.id not in (body.get("targets") or ()):
            return
        if self._lost_in_transit():
            return
        now = time.monotonic()
        try:
            req, _ = request_from_wire(body, now, wall_ms())
        except FavorWireError as exc:
            self.stats["favor_malformed"] += 1
            self.log.warning("favor.malformed", sender=env.sender, error=str(exc))
            return
        async with self._lock:
            self.responder.matcher = self.matchers[req.query.method]
            # only a request that may travel on needs the neighbours (at 100 robots in
            # range, listing them is most of a responder's work per request)
            neighbours = self.neighbours() if req.ttl > 1 else ()
            actions = self.responder.on_request(req, now, neighbours)
            await self._apply(actions, now)

    async def _on_favor(self, env: Envelope, topic: Topic) -> None:
        if env.kind == "favor.request":  # one addressed to this robot alone
            await self._on_request(env, topic)
            return
        if self._lost_in_transit():
            return
        try:
            msg = message_from_wire(env.kind, env.body)
        except FavorWireError as exc:
            self.stats["favor_malformed"] += 1
            self.log.warning("favor.malformed", sender=env.sender, error=str(exc))
            return
        claimed = msg.helper if env.kind in FROM_HELPER else msg.requester
        if claimed != env.sender:
            self.stats["favor_malformed"] += 1
            self.log.warning("favor.impersonation", sender=env.sender, claimed=claimed)
            return
        now = time.monotonic()
        self.log.debug("favor.in", kind=env.kind, sender=env.sender, request=msg.request_id)
        async with self._lock:
            if (
                isinstance(msg, HelperStatus)
                and msg.requester == self.id
                and (
                    self.requester is None
                    or (msg.request_id, msg.helper) not in self.requester.leases
                )
            ):
                # a helper still helping for a job this robot finished: its release was
                # lost, so release it again (idempotent)
                release = FavorRelease(msg.request_id, self.id, msg.helper, "done")
                await self._send(msg.helper, release)
                return
            if self.requester is not None and msg.requester == self.id:
                if isinstance(msg, FavorGrant) and self.job is not None:
                    self.job.grants_ms.append(self.job.since_ms(now))
                actions = self.requester.on_message(msg, now)
            else:
                actions = self.responder.on_message(msg, now)
            await self._apply(actions, now)

    async def _on_assign(self, env: Envelope, topic: Topic) -> None:
        try:
            assign = decode_assign(env.body)
        except JobWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        job_id, name = assign.job_id, assign.job
        now = time.monotonic()
        async with self._lock:
            if self.job is not None and self.job.job_id == job_id:
                await self._report("job.accepted", {"job_id": job_id, "job": name})
                return  # a duplicate assignment
            reason = ""
            if name not in JOBS:
                reason = f"unknown job {name!r}; known: {sorted(JOBS)}"
            elif not self.responder.idle:
                reason = f"not idle (led {self.led}, battery {self.battery:.2f})"
            if reason:
                self.log.info("job.declined", job_id=job_id, job=name, reason=reason)
                body = {"job_id": job_id, "job": name, "reason": reason}
                await self._report("job.declined", body)
                return
            work_s = assign.work_s
            self.job = JobRecord(job_id, JOBS[name], env.sender, work_s, now, wall_ms())
            self.responder.has_job = True
            self.requester = FavorRequester(
                self.profile.with_battery(self.battery),
                JOBS[name],
                self.matchers[self.method],
                request_prefix=f"{self.id}:{job_id}",
                window=self.window_s,
                ttl=self.ttl,
                silence_timeout=self.silence_s,
                max_rounds=self.max_rounds,
                retry_s=self.retry_s,
                decide_early=self.close_early >= 2,
                ask_first=self.close_early >= 3,
            )
            peers = self.peers()
            me = Peer(self.profile, self.position, self.comm_range)
            answers: dict[str, Offer | None] = {}
            matcher = self.matchers[self.method]
            feas = feasibility(me, peers, JOBS[name], matcher, self.ttl, answers)
            self.requester.impossible = feas.reason
            expect = self._expected(self.requester, peers, answers)
            self.log.info(
                "job.received",
                job_id=job_id,
                job=name,
                capable=self.requester.query.agent_capable,
                method=int(self.method),
                expect=None if expect is None else len(expect),
                possible=feas.possible,
            )
            await self._report("job.accepted", {"job_id": job_id, "job": name})
            neighbours = self.neighbours(idle_only=True)
            now = time.monotonic()  # the deadline counts from the request, not the receipt
            predicted = {k: v for k, v in answers.items() if v is not None}
            await self._apply(self.requester.start(now, neighbours, expect, predicted), now)

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if new is Presence.ONLINE or new is Presence.UNKNOWN:
            return
        now = time.monotonic()
        async with self._lock:
            actions: list[FavorAction] = []
            if self.requester is not None:
                actions += self.requester.lose_helper(agent_id, now, f"presence {new.value}")
            actions += self.responder.requester_gone(agent_id, now)
            await self._apply(actions, now)

    # -- time ------------------------------------------------------------------------

    async def on_tick(self) -> None:
        now = time.monotonic()
        dt = 0.0 if self._last_tick is None else now - self._last_tick
        self._last_tick = now
        async with self._lock:
            if self._led_state() != "idle" and self.drain_per_s > 0:
                self.battery = max(0.0, self.battery - self.drain_per_s * dt)
            await self._apply(self.responder.tick(now, self.battery), now)
            if self.requester is not None:
                if self.requester.round_due(now):
                    fresh = self.neighbours(idle_only=True)
                    expect = self._expected(self.requester, self.peers())
                    await self._apply(self.requester.tick(now, fresh, expect), now)
                else:
                    await self._apply(self.requester.tick(now), now)
            job, req = self.job, self.requester
            if job is not None and req is not None and req.state == RequesterState.WORKING:
                rate = 1.0
                if req.selection is not None and req.selection.mode == WorkingMode.PARTNERSHIP:
                    rate = float(len(req.selection.members))  # the workload is split equally
                job.remaining -= rate * dt
                if job.remaining <= 0:
                    await self._apply(req.finish(now), now)
                    await self._job_done(now)
            await self._update_led()

    # -- actions ---------------------------------------------------------------------

    async def _apply(self, actions: list[FavorAction], now: float) -> None:
        """Publish Sends (requests grouped into one broadcast each) and handle outcomes."""
        requests: dict[int, tuple[FavorRequest, list[str]]] = {}
        for act in actions:
            if isinstance(act, Send):
                if isinstance(act.message, FavorRequest):
                    requests.setdefault(id(act.message), (act.message, []))[1].append(act.to)
                else:
                    await self._send(act.to, act.message)
            elif isinstance(act, Selected):
                await self._on_selected(act, now)
            elif isinstance(act, SelectionFailed):
                await self._on_failed(act, now)
            elif isinstance(act, HelperLost):
                self.log.warning("favor.helper_lost", helper=act.helper, reason=act.reason)
                if self.job is not None:
                    at = self.job.since_ms(now)
                    self.job.lost.append({"helper": act.helper, "reason": act.reason, "at_ms": at})
        for req, targets in requests.values():
            deadline_ms = wall_ms() + int((req.deadline - now) * 1000)
            fields = {"reply_to": req.requester, "corr": req.request_id, "deadline": deadline_ms}
            if len(targets) <= DIRECT_REQUESTS:
                # a few robots (the best team asked first): to each of them alone, so the
                # rest of the team is not woken to read a request that is not theirs
                for to in targets:
                    body = request_to_wire(req, [to], deadline_ms)
                    await self.publish(
                        FAVOR_CHANNEL, "favor.request", body, recipient=to, key=req.request_id,
                        **fields,
                    )  # fmt: skip
                continue
            body = request_to_wire(req, targets, deadline_ms)
            await self.publish(
                FAVORS_CHANNEL, "favor.request", body, team=True, key=req.request_id, **fields
            )
        await self._update_led()

    async def _send(self, to: str, msg: Message) -> None:
        kind, body = message_to_wire(msg)
        self.log.debug("favor.out", kind=kind, to=to, request=msg.request_id)
        await self.publish(FAVOR_CHANNEL, kind, body, recipient=to, key=lease_id(msg))

    async def _report(self, kind: str, body: dict[str, Any]) -> None:
        await self.publish(REPORT_CHANNEL, kind, body, key=f"{body.get('job_id')}/{kind}")

    async def _on_selected(self, act: Selected, now: float) -> None:
        job = self.job
        if job is None:
            return
        body = selection_body(job, act, self.id, self.requester, now)
        first = job.selection_s is None
        if first:
            job.selection_s = now - job.received
            job.remaining = job.work_s
        body["selection_ms"] = round(job.selection_s * 1000, 1)
        body["grants_ms"] = list(job.grants_ms)
        job.selections.append(body)
        self.log.info(
            "job.selected",
            job_id=job.job_id,
            job=job.spec.name,
            mode=body["mode"],
            helpers=body["helpers"],
            tower=body["tower"],
            round=act.round,
            selection_ms=body["selection_ms"] if first else body["at_ms"],
        )
        await self._report("job.selected", body)

    async def _on_failed(self, act: SelectionFailed, now: float) -> None:
        job = self.job
        if job is None:
            return
        self.log.info("job.failed", job_id=job.job_id, job=job.spec.name, reason=act.reason)
        rounds = self.requester.round if self.requester is not None else 0
        body = failure_body(job, act, self.id, rounds, now)
        self._clear_job()
        await self._report("job.failed", body)

    async def _job_done(self, now: float) -> None:
        job, req = self.job, self.requester
        assert job is not None and req is not None and req.selection is not None
        body = done_body(job, req.round, self.battery, now)
        self.log.info(
            "job.done",
            job_id=job.job_id,
            job=job.spec.name,
            mode=body["mode"],
            members=body["members"],
            done_ms=body["done_ms"],
        )
        self._clear_job()
        await self._report("job.done", body)

    def _clear_job(self) -> None:
        self.job = None
        self.requester = None
        self.responder.has_job = False

    # -- LED -------------------------------------------------------------------------

    def _led_state(self) -> str:
        if self.job is not None:
            return "busy"
        lease = self.responder.lease
        if lease is not None and lease.state == LeaseState.ACCEPTED:
            return "helping"
        return "idle"

    def _is_available(self) -> bool:
        return self._led_state() == "idle" and self.battery > IDLE_BATTERY_THRESHOLD

    def _led_held(self) -> bool:
        """A new job's first round is collecting grants, for at most ``LED_HOLD_S``:
        the busy LED (and the factsheet that carries it) waits, so the team is not woken
        to read it while the few robots asked answer."""
        req, job = self.requester, self.job
        return (
            req is not None
            and job is not None
            and req.state == RequesterState.COLLECTING
            and req.round == 1
            and time.monotonic() - job.received < LED_HOLD_S
        )

    async def _update_led(self) -> None:
        if self._led_held():
            return
        led, available = self._led_state(), self._is_available()
        if led == self.led and available == self._available:
            return
        self.led, self._available = led, available
        await self._publish_led()

    async def _publish_led(self) -> None:
        lease = self.responder.lease
        body = {
            "state": self.led,
            "battery": round(self.battery, 4),
            "available": self._available,
            "requester": lease.requester if self.led == "helping" and lease else None,
        }
        self.log.info("led", state=self.led, battery=body["battery"], requester=body["requester"])
        await self.publish(LED_CHANNEL, "led", body, retain=True)
        await self.publish("factsheet", "factsheet", self.factsheet(), retain=True)
