"""The robot factory of seed 002 over the broker: kinds ``factory_robot`` and ``job_source``.

Each ``factory_robot`` runs the pure favor machines of ``teamtree.planners.capability``
(a :class:`FavorResponder` always, a :class:`FavorRequester` per job) and maps their
actions to the wire; ``job_source`` hands jobs to robots and prints the summary.
``docs/favors.md`` is the wire reference:

=================================  ====================  ====  ======
topic                              kinds                 QoS   retain
=================================  ====================  ====  ======
``_/favors``                       favor.request         1     no
``<from>/favor/<to>``              favor.grant/.reject/  1     no
                                   .accept/.release/
                                   .revoke/.status
``<robot>/led``                    led                   1     yes
``<source>/job/<robot>``           job.assign            1     no
``<robot>/job_report``             job.accepted/         1     no
                                   .declined/.selected/
                                   .done/.failed
``_/factory``                      factory.done          1     no
=================================  ====================  ====  ======
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.outcome import RESULT_CHANNEL, RESULT_KIND, result_body
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import ConfigError, PlanningError, SpecificationError, TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic
from teamtree.hardware import (
    IDLE_BATTERY_THRESHOLD,
    ROBOT_TYPES,
    AssembledTeam,
    RobotProfile,
    StrengthCapability,
    make_robot,
)
from teamtree.planners.capability import (
    JOBS,
    Action,
    ActiveMatcher,
    ControlGraph,
    FavorAccept,
    FavorGrant,
    FavorQuery,
    FavorReject,
    FavorRelease,
    FavorRequest,
    FavorRequester,
    FavorResponder,
    FavorRevoke,
    HelperLost,
    HelperStatus,
    JobSpec,
    LeaseState,
    Message,
    Method,
    Offer,
    PassiveMatcher,
    RequesterState,
    Selected,
    SelectionFailed,
    Send,
    WorkingMode,
)

FAVORS_CHANNEL = "favors"  #: team channel of favor requests
FAVOR_CHANNEL = "favor"  #: <from>/favor/<to>: directed lease messages
LED_CHANNEL = "led"  #: <robot>/led, retained
JOB_CHANNEL = "job"  #: <source>/job/<robot>: job.assign
REPORT_CHANNEL = "job_report"  #: <robot>/job_report: progress of a job
FACTORY_CHANNEL = "factory"  #: _/factory: factory.done ends the run

LEDS = ("idle", "busy", "helping")
"""LED states of Fig. 1: green idle, blue busy (job received), white helping."""

# ----------------------------------------------------------------------------- codec


class FavorWireError(ValueError):
    """A favor body that does not decode (missing field, wrong type)."""


def capability_to_wire(cap: StrengthCapability | None) -> dict[str, Any] | None:
    """C = [s q P] as ``{n_levels, matrix}`` (rows of 5 numbers), or None."""
    if cap is None:
        return None
    return {"n_levels": cap.n_levels, "matrix": cap.matrix.tolist()}


def capability_from_wire(data: Any) -> StrengthCapability | None:
    """Inverse of :func:`capability_to_wire`; raises FavorWireError."""
    if data is None:
        return None
    try:
        return StrengthCapability.from_matrix(data["matrix"], int(data["n_levels"]))
    except (KeyError, TypeError, ValueError, SpecificationError) as exc:
        raise FavorWireError(f"bad capability matrix: {exc}") from None


def query_to_wire(query: FavorQuery) -> dict[str, Any]:
    """What a favor request discloses (method 1: C^job and C^req; method 2: nothing)."""
    return {
        "method": int(query.method),
        "job": query.job_name,
        "agent_capable": query.agent_capable,
        "c_job": capability_to_wire(query.c_job),
        "c_req": capability_to_wire(query.c_req),
    }


def query_from_wire(data: Any) -> FavorQuery:
    """Inverse of :func:`query_to_wire`; raises FavorWireError."""
    try:
        return FavorQuery(
            Method(int(data["method"])),
            str(data["job"]),
            bool(data["agent_capable"]),
            capability_from_wire(data.get("c_job")),
            capability_from_wire(data.get("c_req")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FavorWireError(f"bad favor query: {exc!r}") from None


def offer_to_wire(offer: Offer) -> dict[str, Any]:
    """C^fav as the helper's whole profile (its factsheet) plus what it fits."""
    return {
        "profile": offer.profile.to_dict(),
        "fits_job": offer.fits_job,
        "fits_req": offer.fits_req,
    }


def offer_from_wire(data: Any) -> Offer:
    """Inverse of :func:`offer_to_wire`; raises FavorWireError."""
    try:
        profile = RobotProfile.from_dict(data["profile"])
        return Offer(profile, bool(data.get("fits_job")), bool(data.get("fits_req")))
    except (KeyError, TypeError, AttributeError, ConfigError) as exc:
        raise FavorWireError(f"bad offer: {exc}") from None


def request_to_wire(req: FavorRequest, targets: Sequence[str], deadline_ms: int) -> dict[str, Any]:
    """Body of ``favor.request``; ``deadline_ms`` is the request's deadline, UTC ms."""
    return {
        "request_id": req.request_id,
        "requester": req.requester,
        "query": query_to_wire(req.query),
        "ttl": req.ttl,
        "hops": list(req.hops),
        "targets": sorted(targets),
        "deadline_ms": deadline_ms,
    }


def request_from_wire(body: Any, now: float, now_ms: int) -> tuple[FavorRequest, list[str]]:
    """A request and its targets; the wall deadline becomes one on the local monotonic
    clock (``now`` is the local clock at ``now_ms``). Raises FavorWireError."""
    try:
        deadline = now + (int(body["deadline_ms"]) - now_ms) / 1000.0
        req = FavorRequest(
            str(body["request_id"]),
            str(body["requester"]),
            query_from_wire(body["query"]),
            int(body["ttl"]),
            deadline,
            tuple(str(h) for h in body["hops"]),
        )
        targets = [str(t) for t in body["targets"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise FavorWireError(f"bad favor request: {exc!r}") from None
    return req, targets


_KINDS: dict[type, str] = {
    FavorGrant: "favor.grant",
    FavorReject: "favor.reject",
    FavorAccept: "favor.accept",
    FavorRelease: "favor.release",
    FavorRevoke: "favor.revoke",
    HelperStatus: "favor.status",
}
_FROM_HELPER = frozenset({"favor.grant", "favor.reject", "favor.revoke", "favor.status"})


def lease_id(msg: Message) -> str:
    """The idempotency key of a lease message: ``<request_id>/<helper>``."""
    return f"{msg.request_id}/{getattr(msg, 'helper', '')}"


def message_to_wire(msg: Message) -> tuple[str, dict[str, Any]]:
    """(kind, body) of a directed lease message."""
    body: dict[str, Any] = {
        "request_id": msg.request_id,
        "requester": msg.requester,
        "helper": getattr(msg, "helper", ""),
    }
    if isinstance(msg, FavorGrant):
        body["offer"] = offer_to_wire(msg.offer)
    elif isinstance(msg, FavorAccept):
        body["mode"] = msg.mode.value
    elif isinstance(msg, HelperStatus):
        body["battery"] = msg.battery
    elif isinstance(msg, FavorReject | FavorRelease | FavorRevoke):
        body["reason"] = msg.reason
    return _KINDS[type(msg)], body


def message_from_wire(kind: str, body: Any) -> Message:
    """Inverse of :func:`message_to_wire`; raises FavorWireError."""
    try:
        ids = (str(body["request_id"]), str(body["requester"]), str(body["helper"]))
        if kind == "favor.grant":
            return FavorGrant(*ids, offer_from_wire(body["offer"]))
        if kind == "favor.accept":
            return FavorAccept(*ids, WorkingMode(body["mode"]))
        if kind == "favor.status":
            return HelperStatus(*ids, float(body["battery"]))
        reason = str(body.get("reason", ""))
        if kind == "favor.reject":
            return FavorReject(*ids, reason)
        if kind == "favor.release":
            return FavorRelease(*ids, reason)
        if kind == "favor.revoke":
            return FavorRevoke(*ids, reason)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FavorWireError(f"bad {kind} body: {exc!r}") from None
    raise FavorWireError(f"unknown favor kind {kind!r}")


# ----------------------------------------------------------------------------- config

#: factory_robot keys that may also be set once in [mission] for the whole team
TEAM_DEFAULTS: dict[str, tuple[Any, str]] = {
    "method": (1, "1 (passive, §IV) or 2 (active, §V)"),
    "comm_range": (1e9, "a positive communication range (position units)"),
    "ttl": (2, "a hop limit >= 1"),
    "window_s": (0.1, "seconds to collect grants (the request's deadline)"),
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


def job_result(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The factory mission's ``mission.result``: ok only when every job is done."""
    done = [r for r in rows if r["status"] == "done"]
    bad = [r for r in rows if r["status"] != "done"]
    failed = [
        {"item": f"{r['job_id']} ({r['job']})", "reason": f"{r['status']}: {r['reason'] or '?'}"}
        for r in bad
    ]
    summary = f"{len(done)} of {len(rows)} jobs done"
    if bad:
        summary += f"; not done: {', '.join(f['item'] + ' ' + f['reason'] for f in failed[:4])}"
        summary += " ..." if len(failed) > 4 else ""
    return result_body(
        "factory",
        not bad,
        summary,
        done=[{"item": r["job_id"], "by": r["agent"]} for r in done],
        failed=failed,
    )


@dataclass
class _Job:
    """A job this robot owns (it is the agent)."""

    job_id: str
    spec: JobSpec
    source: str
    work_s: float
    received: float
    received_ms: int
    remaining: float = 0.0
    selection_s: float | None = None
    selections: list[dict[str, Any]] = field(default_factory=list)
    lost: list[dict[str, Any]] = field(default_factory=list)
    grants_ms: list[int] = field(default_factory=list)


def _dist(a: Sequence[float], b: Sequence[float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _valid_position(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )


def control_summary(team: AssembledTeam, job: JobSpec) -> dict[str, str]:
    """Who grasps and who moves in an assembled team (least-cost paths, §VI.A)."""
    out: dict[str, str] = {}
    graph = ControlGraph.for_team(team, job)
    sensors = [
        n
        for n, d in sorted(graph.graph.nodes(data=True))
        if d.get("kind") == "component" and n.split("/")[1].startswith("P")
    ]
    if not sensors:
        return out
    # the top-level eye: on the highest robot (it sees what the tower reaches)
    source = max(sensors, key=lambda n: team.ids.index(n.split("/")[0]))
    for action, key in (("grasp", "grasp_by"), ("move", "move_by")):
        with contextlib.suppress(PlanningError):
            out[key] = graph.route(source, action).robot
    return out


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
        window_s: float = 0.1,
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
        self.job: _Job | None = None
        self.led = "idle"
        self._available = self._is_available()
        self._last_tick: float | None = None
        self._lock = asyncio.Lock()

    # -- config ----------------------------------------------------------------------

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``type``, ``position``, ``battery`` and the favor settings (each may
        default from ``[mission]``, see TEAM_DEFAULTS). Raises ConfigError naming the key."""
        reader = spec_reader(spec, config)
        rtype = reader.take("type", str, None, f"a robot type, one of {sorted(ROBOT_TYPES)}")
        if rtype not in ROBOT_TYPES:
            raise reader.error("type", f"is {rtype!r}; expected one of {sorted(ROBOT_TYPES)}")
        position = reader.take("position", list, [0.0, 0.0], "[x, y] in position units")
        if not _valid_position(position):
            raise reader.error("position", f"is {position!r}; expected [x, y] (two numbers)")
        battery = reader.take("battery", (int, float), 1.0, "a charge in [0, 1]")
        if not 0 <= battery <= 1:
            raise reader.error("battery", f"is {battery!r}; expected a charge in [0, 1]")
        out: dict[str, Any] = {
            "robot_type": rtype,
            "position": (float(position[0]), float(position[1])),
            "battery": float(battery),
        }
        for name, (_, what) in TEAM_DEFAULTS.items():
            default = _team_default(config, name)
            value = reader.take(name, (int, float), default, what)
            out[name] = value
        for name in ("ttl", "max_rounds"):
            if not isinstance(out[name], int) or out[name] < 1:
                raise reader.error(name, f"is {out[name]!r}; expected {TEAM_DEFAULTS[name][1]}")
        if out["method"] not in (1, 2):
            raise reader.error("method", f"is {out['method']!r}; expected 1 or 2")
        for name in ("comm_range", "window_s", "hold_s", "status_s", "silence_s"):
            if out[name] <= 0:
                raise reader.error(name, f"is {out[name]!r}; expected {TEAM_DEFAULTS[name][1]}")
        if out["drain_per_s"] < 0:
            raise reader.error("drain_per_s", "must be >= 0")
        if not 0 <= out["favor_loss"] < 1:
            raise reader.error("favor_loss", f"is {out['favor_loss']!r}; expected [0, 1)")
        if out["loss_seed"] is not None and not isinstance(out["loss_seed"], int):
            raise reader.error("loss_seed", "expected an integer")
        reader.no_extras()
        return out

    def factsheet(self) -> dict[str, Any]:
        """Kind, robot type and profile (C^self), position, range, LED and battery."""
        return {
            "kind": self.kind,
            "session": self.session,
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
        out = []
        for member in self.team_view.members.values():
            sheet = member.factsheet
            if not member.online or sheet.get("kind") != self.kind:
                continue
            pos = sheet.get("position")
            if not _valid_position(pos) or _dist(pos, self.position) > self.comm_range:
                continue
            if idle_only and not (sheet.get("led") == "idle" and sheet.get("available", True)):
                continue
            out.append(member.id)
        return sorted(out)

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
            actions = self.responder.on_request(req, now, self.neighbours())
            await self._apply(actions, now)

    async def _on_favor(self, env: Envelope, topic: Topic) -> None:
        if self._lost_in_transit():
            return
        try:
            msg = message_from_wire(env.kind, env.body)
        except FavorWireError as exc:
            self.stats["favor_malformed"] += 1
            self.log.warning("favor.malformed", sender=env.sender, error=str(exc))
            return
        claimed = msg.helper if env.kind in _FROM_HELPER else msg.requester
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
                    self.job.grants_ms.append(int((now - self.job.received) * 1000))
                actions = self.requester.on_message(msg, now)
            else:
                actions = self.responder.on_message(msg, now)
            await self._apply(actions, now)

    async def _on_assign(self, env: Envelope, topic: Topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        job_id, name = str(body.get("job_id", "")), str(body.get("job", ""))
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
            work_s = float(body.get("work_s", 1.0))
            self.job = _Job(job_id, JOBS[name], env.sender, work_s, now, wall_ms())
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
            )
            self.log.info(
                "job.received",
                job_id=job_id,
                job=name,
                capable=self.requester.query.agent_capable,
                method=int(self.method),
            )
            await self._report("job.accepted", {"job_id": job_id, "job": name})
            neighbours = self.neighbours(idle_only=True)
            await self._apply(self.requester.start(now, neighbours), now)

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        if new is Presence.ONLINE or new is Presence.UNKNOWN:
            return
        now = time.monotonic()
        async with self._lock:
            actions: list[Action] = []
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
            if self.led != "idle" and self.drain_per_s > 0:
                self.battery = max(0.0, self.battery - self.drain_per_s * dt)
            await self._apply(self.responder.tick(now, self.battery), now)
            if self.requester is not None:
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

    async def _apply(self, actions: list[Action], now: float) -> None:
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
                    at = int((now - self.job.received) * 1000)
                    self.job.lost.append({"helper": act.helper, "reason": act.reason, "at_ms": at})
        for req, targets in requests.values():
            deadline_ms = wall_ms() + int((req.deadline - now) * 1000)
            body = request_to_wire(req, targets, deadline_ms)
            await self.publish(
                FAVORS_CHANNEL,
                "favor.request",
                body,
                team=True,
                key=req.request_id,
                reply_to=req.requester,
                corr=req.request_id,
                deadline=deadline_ms,
            )
        await self._update_led()

    async def _send(self, to: str, msg: Message) -> None:
        kind, body = message_to_wire(msg)
        self.log.debug("favor.out", kind=kind, to=to, request=msg.request_id)
        await self.publish(FAVOR_CHANNEL, kind, body, recipient=to, key=lease_id(msg))

    async def _report(self, kind: str, body: dict[str, Any]) -> None:
        await self.publish(REPORT_CHANNEL, kind, body, key=f"{body.get('job_id')}/{kind}")

    def _selection_body(self, act: Selected, now: float) -> dict[str, Any]:
        sel = act.selection
        assert self.job is not None
        body: dict[str, Any] = {
            "job_id": self.job.job_id,
            "job": self.job.spec.name,
            "agent": self.id,
            "mode": sel.mode.value,
            "helpers": list(sel.helpers),
            "members": list(sel.members),
            "tower": list(sel.team.ids) if sel.team is not None else [],
            "round": act.round,
            "method": int(sel.method),
            "at_ms": int((now - self.job.received) * 1000),
        }
        if sel.team is not None:
            body["height"] = sel.team.height
            with contextlib.suppress(TeamtreeError, KeyError, ValueError, IndexError):
                body.update(control_summary(sel.team, self.job.spec))
        return body

    async def _on_selected(self, act: Selected, now: float) -> None:
        job = self.job
        if job is None:
            return
        body = self._selection_body(act, now)
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
        body = {
            "job_id": job.job_id,
            "job": job.spec.name,
            "agent": self.id,
            "reason": act.reason,
            "rounds": self.requester.round if self.requester is not None else 0,
            "done_ms": int((now - job.received) * 1000),
            "lost": job.lost,
        }
        self._clear_job()
        await self._report("job.failed", body)

    async def _job_done(self, now: float) -> None:
        job, req = self.job, self.requester
        assert job is not None and req is not None and req.selection is not None
        final = job.selections[-1]
        body = {
            **final,
            "selection_ms": round((job.selection_s or 0.0) * 1000, 1),
            "done_ms": int((now - job.received) * 1000),
            "received_ms": job.received_ms,
            "rounds": req.round,
            "lost": job.lost,
            "selections": [
                {k: s[k] for k in ("mode", "helpers", "tower", "round", "at_ms")}
                for s in job.selections
            ],
            "battery": round(self.battery, 3),
        }
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

    async def _update_led(self) -> None:
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


# ----------------------------------------------------------------------------- jobs


@dataclass
class JobOrder:
    """One job the source hands out; ``robot`` None means a random idle robot."""

    job_id: str
    job: str
    robot: str | None = None
    work_s: float = 1.0
    attempts: int = 0
    not_before: float = 0.0


@dataclass
class _Flight:
    order: JobOrder
    robot: str
    sent: float
    accepted: bool = False
    result: dict[str, Any] | None = None


class JobSource(Agent):
    """Hands each job to a robot (its ``robot``, or a random idle one) over the broker,
    ``concurrency`` at a time; ends the run with a summary and ``factory.done``."""

    kind = "job_source"

    def __init__(
        self,
        *args: Any,
        robots: Sequence[str],
        orders: Sequence[JobOrder],
        concurrency: int = 1,
        seed: int | None = None,
        summary_path: str | None = None,
        start_timeout_s: float = 30.0,
        accept_timeout_s: float = 3.0,
        job_timeout_s: float = 60.0,
        settle_s: float = 0.1,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.robots = tuple(robots)
        self.orders = list(orders)
        self.concurrency = concurrency
        self.seed = random.randrange(1 << 31) if seed is None else seed
        self.rng = random.Random(self.seed)
        self.summary_path = summary_path
        self.start_timeout_s = start_timeout_s
        self.accept_timeout_s = accept_timeout_s
        self.job_timeout_s = job_timeout_s
        self.settle_s = settle_s
        self.max_attempts = 50
        self.flights: dict[str, _Flight] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self._result: dict[str, Any] = job_result([])
        self._changed = asyncio.Event()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``jobs`` (tables: job, robot, work_s), ``random_jobs``, ``seed``,
        ``concurrency``, ``work_s``, ``summary_path`` and the timeouts. The robots are
        the config's ``factory_robot`` entries. Raises ConfigError naming the key."""
        reader = spec_reader(spec, config)
        prefix = reader.prefix
        robots = [s.id for s in config.agents if s.kind == FactoryRobot.kind]
        if not robots:
            raise reader.error("kind", "needs at least one factory_robot agent in the config")
        work_s = reader.positive("work_s", 1.0, "seconds of work per job (solo)")
        seed = reader.take("seed", int, None, "an integer seed")
        if seed is None:
            seed = random.randrange(1 << 31)
        rng = random.Random(seed)
        entries = reader.take("jobs", list, [], "a list of {job, robot, work_s} tables")
        orders: list[JobOrder] = []
        for i, entry in enumerate(entries):
            key = f"{prefix}.jobs[{i}]"
            if not isinstance(entry, dict):
                raise ConfigError("must be a table", path=str(config.path), key=key)
            unknown = sorted(set(entry) - {"job", "robot", "work_s"})
            if unknown:
                raise ConfigError(
                    f"unknown key(s) {unknown}; use job, robot, work_s",
                    path=str(config.path),
                    key=f"{key}.{unknown[0]}",
                )
            name = entry.get("job")
            if name not in JOBS:
                raise ConfigError(
                    f"is {name!r}; expected one of {sorted(JOBS)}",
                    path=str(config.path),
                    key=f"{key}.job",
                )
            robot = entry.get("robot")
            if robot is not None and robot not in robots:
                raise ConfigError(
                    f"is {robot!r}; expected a factory_robot id ({', '.join(robots)})",
                    path=str(config.path),
                    key=f"{key}.robot",
                )
            w = entry.get("work_s", work_s)
            if isinstance(w, bool) or not isinstance(w, int | float) or w <= 0:
                raise ConfigError(
                    f"is {w!r}; expected positive seconds",
                    path=str(config.path),
                    key=f"{key}.work_s",
                )
            orders.append(JobOrder(f"j{i + 1}", name, robot, float(w)))
        n_random = reader.take("random_jobs", int, 0, "a number of random jobs (>= 0)")
        if n_random < 0:
            raise reader.error("random_jobs", f"is {n_random}; expected >= 0")
        names = sorted(JOBS)
        for _ in range(n_random):
            orders.append(JobOrder(f"j{len(orders) + 1}", rng.choice(names), None, work_s))
        if not orders:
            raise reader.error("jobs", "no jobs: give jobs = [...] or random_jobs > 0")
        concurrency = reader.take("concurrency", int, 1, "jobs in flight at once (>= 1)")
        if concurrency < 1:
            raise reader.error("concurrency", f"is {concurrency}; expected >= 1")
        summary = reader.take("summary_path", str, None, "a path for the JSON summary")
        out = {
            "robots": robots,
            "orders": orders,
            "concurrency": concurrency,
            "seed": seed,
            "summary_path": summary,
            "start_timeout_s": reader.positive("start_timeout_s", 30.0),
            "accept_timeout_s": reader.positive("accept_timeout_s", 3.0),
            "job_timeout_s": reader.positive("job_timeout_s", 60.0),
            "settle_s": reader.take("settle_s", (int, float), 0.1, "seconds (>= 0)"),
        }
        reader.no_extras()
        return out

    async def setup(self) -> None:
        self.on_agents(REPORT_CHANNEL, self._on_report)

    # -- view of the robots ----------------------------------------------------------

    def _sheet(self, robot: str) -> Mapping[str, Any]:
        member = self.team_view.get(robot)
        return member.factsheet if member is not None and member.online else {}

    def idle(self, robot: str) -> bool:
        """Online, LED idle and battery above the idle threshold (from its factsheet)."""
        sheet = self._sheet(robot)
        return sheet.get("led") == "idle" and bool(sheet.get("available", False))

    def _ready(self) -> bool:
        return all(self._sheet(r).get("kind") == FactoryRobot.kind for r in self.robots)

    # -- reports ---------------------------------------------------------------------

    async def _on_report(self, env: Envelope, topic: Topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        flight = self.flights.get(str(body.get("job_id")))
        if flight is None or flight.robot != env.sender:
            return
        if env.kind == "job.accepted":
            flight.accepted = True
        elif env.kind == "job.declined":
            flight.result = {"declined": body.get("reason", "")}
        elif env.kind in ("job.done", "job.failed"):
            flight.result = {**body, "status": env.kind.removeprefix("job.")}
        elif env.kind == "job.selected":
            self.log.info(
                "job.selected",
                job_id=flight.order.job_id,
                job=flight.order.job,
                agent=env.sender,
                mode=body.get("mode"),
                helpers=body.get("helpers"),
                selection_ms=body.get("selection_ms"),
            )
        self._changed.set()

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        self._changed.set()

    # -- main ------------------------------------------------------------------------

    async def main(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        self.log.info("jobs.start", jobs=len(self.orders), seed=self.seed, robots=len(self.robots))
        await self.wait_connected(self.start_timeout_s)
        while not self._ready():
            if loop.time() - started > self.start_timeout_s:
                missing = [r for r in self.robots if not self._sheet(r)]
                raise TeamtreeError(f"robots not online after {self.start_timeout_s} s: {missing}")
            await asyncio.sleep(0.05)
        self.log.info("jobs.robots_ready", after_s=round(loop.time() - started, 2))
        t0 = loop.time()
        queue: deque[JobOrder] = deque(self.orders)
        while queue or self.flights:
            await self._hand_out(queue, loop.time())
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 0.05)
            self._collect(queue, loop.time())
        elapsed = loop.time() - t0
        self._summarise(elapsed)
        await self.publish(RESULT_CHANNEL, RESULT_KIND, self._result, team=True, retain=True)
        if not self._result["ok"]:  # the mission's criterion: every job done
            self.log.error("mission.failed", summary=self._result["summary"])
            self.exit_code = 1
        await self.publish(FACTORY_CHANNEL, "factory.done", {"jobs": len(self.results)}, team=True)
        await asyncio.sleep(0.2)  # let the broker deliver before OFFLINE

    async def _hand_out(self, queue: deque[JobOrder], now: float) -> None:
        while queue and len(self.flights) < self.concurrency:
            order = queue[0]
            if order.not_before > now:
                return
            busy = {f.robot for f in self.flights.values()}
            if self.concurrency == 1 and any(
                self._sheet(r).get("led", "idle") != "idle" for r in self.robots
            ):
                return  # sequential runs start each job on a settled team
            if order.robot is not None:
                if not self.idle(order.robot) or order.robot in busy:
                    return
                robot = order.robot
            else:
                idle = [r for r in self.robots if self.idle(r) and r not in busy]
                if not idle:
                    return
                robot = self.rng.choice(idle)
            if self.settle_s > 0 and self.concurrency == 1:
                await asyncio.sleep(self.settle_s)
            queue.popleft()
            self.flights[order.job_id] = _Flight(order, robot, now)
            self.log.info("job.assign", job_id=order.job_id, job=order.job, robot=robot)
            await self.publish(
                JOB_CHANNEL,
                "job.assign",
                {"job_id": order.job_id, "job": order.job, "work_s": order.work_s},
                recipient=robot,
                key=order.job_id,
            )

    def _collect(self, queue: deque[JobOrder], now: float) -> None:
        for job_id, flight in list(self.flights.items()):
            order, result = flight.order, flight.result
            gone = not self._sheet(flight.robot)
            retry = ""
            if result is not None and "declined" in result:
                retry = f"declined: {result['declined']}"
            elif result is not None:
                self.results[job_id] = {"job": order.job, "assigned_to": flight.robot, **result}
            elif gone:
                retry = "robot went offline"
            elif not flight.accepted and now - flight.sent > self.accept_timeout_s:
                retry = "no job.accepted in time"
            elif now - flight.sent > self.job_timeout_s:
                self.results[job_id] = {
                    "job": order.job,
                    "assigned_to": flight.robot,
                    "status": "timeout",
                    "reason": f"not done within {self.job_timeout_s} s",
                }
            else:
                continue
            del self.flights[job_id]
            if retry:
                self.log.info("job.retry", job_id=job_id, robot=flight.robot, reason=retry)
                order.attempts += 1
                if order.attempts < self.max_attempts and (order.robot is None or not gone):
                    order.not_before = now + 0.1  # e.g. a grant's hold lapses within ~0.3 s
                    queue.appendleft(order)
                else:
                    self.results[job_id] = {
                        "job": order.job,
                        "assigned_to": flight.robot,
                        "status": "lost",
                        "reason": retry,
                    }

    def _summarise(self, elapsed: float) -> None:
        rows = []
        for order in self.orders:
            res = self.results.get(order.job_id, {"status": "lost", "reason": "no result"})
            row = {
                "job_id": order.job_id,
                "job": order.job,
                "agent": res.get("assigned_to", res.get("agent")),
                "status": res.get("status"),
                "mode": res.get("mode"),
                "members": res.get("members", []),
                "helpers": res.get("helpers", []),
                "tower": res.get("tower", []),
                "selection_ms": res.get("selection_ms"),
                "done_ms": res.get("done_ms"),
                "rounds": res.get("rounds"),
                "lost": [x.get("helper") for x in res.get("lost", [])],
                "reason": res.get("reason", ""),
            }
            for key in ("grasp_by", "move_by", "height", "grants_ms", "selections"):
                if key in res:
                    row[key] = res[key]
            rows.append(row)
            self.log.info(
                "summary.job",
                **{k: row[k] for k in ("job_id", "job", "agent", "status", "mode", "members")},
                selection_ms=row["selection_ms"],
                done_ms=row["done_ms"],
                lost=row["lost"],
                reason=row["reason"] or None,
            )
        counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "failed", "lost")}
        self.log.info("summary.total", jobs=len(rows), elapsed_s=round(elapsed, 2), **counts)
        self._result = job_result(rows)
        if self.summary_path:
            path = Path(self.summary_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {"seed": self.seed, "elapsed_s": elapsed, "jobs": rows, **counts}
            path.write_text(json.dumps(doc, indent=1))
