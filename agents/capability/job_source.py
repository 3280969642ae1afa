"""The ``job_source`` kind: hands jobs to factory robots, ``concurrency`` at a time, and
ends the run with a summary and ``factory.done``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from teamtree.agents.capability.channels import (
    FACTORY_CHANNEL,
    JOB_CHANNEL,
    REPORT_CHANNEL,
)
from teamtree.agents.capability.job_wire import JobAssign, JobWireError, decode_report
from teamtree.agents.capability.params import JobEntry, JobSourceParams, MissionJobs
from teamtree.agents.capability.robot import FactoryRobot
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig, spec_reader
from teamtree.agents.runtime.mission_status import StatusReporter
from teamtree.agents.runtime.outcome import RESULT_CHANNEL, RESULT_KIND, result_body
from teamtree.agents.runtime.params import convert_error, decode_params
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import ConfigError, TeamtreeError
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from teamtree.planners.capability import (
    JOBS,
)


def job_result(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The factory mission's ``mission.result``: ok only when every job is done (an
    impossible job fails the mission too, with its reason)."""
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


def mission_jobs(config: TeamConfig) -> tuple[list[JobEntry], int, str | None]:
    """(jobs, random_jobs, "mission") from the ``[mission]`` table when it gives either
    key (a factory mission submitted to a serving team says its jobs), else
    ([], 0, None): the job source's own keys hold. ConfigError naming the key."""
    table = {k: v for k, v in config.mission.params.items() if k in MISSION_JOB_KEYS}
    if not table:
        return [], 0, None
    try:
        given = msgspec.convert(table, MissionJobs, strict=True)
    except msgspec.ValidationError as exc:
        key, message = convert_error(exc, table, MissionJobs, "mission")
        raise ConfigError(message, path=str(config.path), key=key) from None
    return list(given.jobs), given.random_jobs, "mission"


#: the ``[mission]`` keys that give a factory mission's jobs
MISSION_JOB_KEYS = frozenset({"jobs", "random_jobs"})


@dataclass
class JobOrder:
    """One job the source hands out; ``robot`` None means a random idle robot."""

    job_id: str
    job: str
    robot: str | None = None
    work_s: float = 1.0
    attempts: int = 0
    not_before: float = 0.0
    failures: int = 0


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
        self.failure_retries = 3  #: a possible job that failed is handed out again this often
        self.flights: dict[str, _Flight] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self._result: dict[str, Any] = job_result([])
        self._changed = asyncio.Event()
        self._status = StatusReporter(self, "factory", "jobs")

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``jobs`` (tables: job, robot, work_s), ``random_jobs``, ``seed``,
        ``concurrency``, ``work_s``, ``summary_path`` and the timeouts. The robots are
        the config's ``factory_robot`` entries. Raises ConfigError naming the key."""
        reader = spec_reader(spec, config)
        robots = [s.id for s in config.agents if s.kind == FactoryRobot.kind]
        if not robots:
            raise reader.error("kind", "needs at least one factory_robot agent in the config")
        params = decode_params(spec, config, JobSourceParams)
        seed = params.seed if params.seed is not None else random.randrange(1 << 31)
        rng = random.Random(seed)
        jobs, random_jobs, where = mission_jobs(config)
        if where is None:
            jobs, random_jobs = params.jobs, params.random_jobs

        def error(key: str, message: str) -> ConfigError:
            if where is None:
                return reader.error(key, message)
            return ConfigError(message, path=str(config.path), key=f"{where}.{key}")

        orders: list[JobOrder] = []
        for i, entry in enumerate(jobs):
            if entry.job not in JOBS:
                raise error(f"jobs[{i}].job", f"is {entry.job!r}; expected one of {sorted(JOBS)}")
            if entry.robot is not None and entry.robot not in robots:
                raise error(
                    f"jobs[{i}].robot",
                    f"is {entry.robot!r}; expected a factory_robot id ({', '.join(robots)})",
                )
            work_s = entry.work_s if entry.work_s is not None else params.work_s
            orders.append(JobOrder(f"j{i + 1}", entry.job, entry.robot, work_s))
        names = sorted(JOBS)
        for _ in range(random_jobs):
            orders.append(JobOrder(f"j{len(orders) + 1}", rng.choice(names), None, params.work_s))
        if not orders:
            raise error("jobs", "no jobs: give jobs = [...] or random_jobs > 0")
        return {
            "robots": robots,
            "orders": orders,
            "concurrency": params.concurrency,
            "seed": seed,
            "summary_path": params.summary_path,
            "start_timeout_s": params.start_timeout_s,
            "accept_timeout_s": params.accept_timeout_s,
            "job_timeout_s": params.job_timeout_s,
            "settle_s": params.settle_s,
        }

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
        try:
            report = decode_report(env.kind, env.body)
        except JobWireError as exc:
            self._drop("malformed", str(topic), env.sender, str(exc))
            return
        body: dict[str, Any] = env.body
        flight = self.flights.get(report.job_id)  # type: ignore[attr-defined]
        if flight is None or flight.robot != env.sender:
            return
        if env.kind == "job.accepted":
            flight.accepted = True
        elif env.kind == "job.declined":
            flight.result = {"declined": body.get("reason", "")}
        elif env.kind == "job.failed" and body.get("impossible"):
            flight.result = {**body, "status": "impossible"}
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
            await self._job_status()
        elapsed = loop.time() - t0
        self._summarise(elapsed)
        ok = self._result["ok"]
        await self._job_status("succeeded" if ok else "failed", self._result["summary"])
        await self.publish(RESULT_CHANNEL, RESULT_KIND, self._result, team=True, retain=True)
        if not self._result["ok"]:  # the mission's criterion: every job done
            self.log.error("mission.failed", summary=self._result["summary"])
            self.exit_code = self.exit_code or 1
        await self.publish(FACTORY_CHANNEL, "factory.done", {"jobs": len(self.results)}, team=True)
        await asyncio.sleep(0.2)  # let the broker deliver before OFFLINE

    async def _job_status(self, state: str = "running", reason: str = "") -> None:
        """The mission's status: jobs done and failed of the orders."""
        done = sum(1 for r in self.results.values() if r.get("status") == "done")
        failed = len(self.results) - done
        await self._status.report(
            state,
            done=done,
            total=len(self.orders),
            failed=failed,
            reason=reason,
            detail=f"{len(self.flights)} in progress" if self.flights else "",
        )

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
                msgspec.to_builtins(JobAssign(order.job_id, order.job, order.work_s)),
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
            elif (
                result is not None
                and result.get("status") == "failed"
                and order.failures < self.failure_retries
            ):
                # possible, but no capable helper was idle: hand the job out again later
                order.failures += 1
                retry = f"failed: {result.get('reason', '')}"
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

    def _summarise(self, elapsed: float) -> bool:
        """Log and write the summary; True when every job is done or impossible."""
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
            for key in ("grasp_by", "move_by", "height", "asked", "grants_ms", "selections"):
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
        statuses = ("done", "impossible", "failed", "lost", "timeout")
        counts = {s: sum(r["status"] == s for r in rows) for s in statuses}
        self.log.info("summary.total", jobs=len(rows), elapsed_s=round(elapsed, 2), **counts)
        self._result = job_result(rows)
        if self.summary_path:
            path = Path(self.summary_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {"seed": self.seed, "elapsed_s": elapsed, "jobs": rows, **counts}
            path.write_text(json.dumps(doc, indent=1))
        return counts["done"] + counts["impossible"] == len(rows)
