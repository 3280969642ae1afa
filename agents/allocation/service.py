"""The allocation service agent: seed 001's MILPs behind request/reply on ``_/allocation``.

Solves run in worker threads (``workers``, default 1) so heartbeats and presence keep
flowing, and each solve is bounded by the time left before the request's deadline.
With ``shared = true`` the service joins the shared subscription
``$share/<group>/…`` so replicas split the requests (mosquitto), and connects with a
clean session so a dead replica's share goes to the live ones once the broker notices
(1.5 × keepalive). Requests that carry a ``request_id`` are idempotent: a retry (same
requester and id) gets the answer of the first attempt, computed once.

On a broker cluster (``Agent.clustered``: RabbitMQ has no ``$share``) shared replicas
subscribe plainly and each answers only the requests it owns (``owner.py``).

Each worker thread has its own solver pool; with ``reuse_models`` its Gurobi backend
keeps one model per kind and changes it into the next request's (off by default: at
kitting's size, changing the model costs more than passing it afresh, and the
columns and rows left from earlier requests slow the solver's tail).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from teamtree.agents.allocation.owner import owner
from teamtree.agents.allocation.params import AllocatorParams
from teamtree.agents.allocation.solve import solve_request
from teamtree.agents.allocation.wire import (
    CHANNEL,
    ERROR,
    REQUEST_KINDS,
    RESULT,
    BadRequest,
    error_body,
)
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.config import AgentSpec, TeamConfig
from teamtree.agents.runtime.own_presence import HEARTBEAT_CHANNEL
from teamtree.agents.runtime.params import decode_params, params_dict
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker import PlanningError
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import Topic
from teamtree.planners.allocation import SolverPool


class AllocatorAgent(Agent):
    """Serve ``allocation.*`` requests; see the module docstring."""

    kind = "allocator"

    def __init__(
        self,
        *args: Any,
        shared: bool = False,
        group: str = "allocators",
        workers: int = 1,
        cache_size: int = 512,
        margin_ms: int = 30,
        reuse_models: bool = False,
        **kwargs: Any,
    ):
        # A replica's subscription must die with it: with a persistent session the
        # broker keeps routing its share of the requests to the dead session's queue.
        kwargs.setdefault("clean_session", shared)
        super().__init__(*args, **kwargs)
        self.shared = shared
        self.group = group
        self.workers = workers
        self.cache_size = cache_size
        self.margin_ms = margin_ms
        self.reuse_models = reuse_models
        self._executor: ThreadPoolExecutor | None = None
        self._slots: asyncio.Semaphore | None = None
        self._local = threading.local()
        self._done: OrderedDict[tuple[str, str], tuple[str, dict[str, Any]]] = OrderedDict()
        self._inflight: dict[
            tuple[str, str], asyncio.Future[tuple[str, dict[str, Any]] | None]
        ] = {}
        #: cluster mode: requests another replica owns, kept until their deadline
        self._watched: OrderedDict[str, Envelope] = OrderedDict()

    @classmethod
    def params_from_config(cls, spec: AgentSpec, config: TeamConfig) -> dict[str, Any]:
        """Validate ``shared``, ``group``, ``workers``, ``cache_size``, ``margin_ms``,
        ``reuse_models``."""
        return params_dict(decode_params(spec, config, AllocatorParams))

    def factsheet(self) -> dict[str, Any]:
        return {
            **super().factsheet(),
            "channel": CHANNEL,
            "requests": list(REQUEST_KINDS),
            "shared": self.group if self.shared else None,
            "workers": self.workers,
        }

    async def setup(self) -> None:
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=f"solve-{self.id}")
        self._slots = asyncio.Semaphore(self.workers)
        share = self.group if self.shared and not self.clustered else None
        if self.shared and self.clustered:  # heartbeats keep replicas' last_seen fresh
            self.on_agents(HEARTBEAT_CHANNEL, self._on_heartbeat, kind="heartbeat")
        for kind in REQUEST_KINDS:
            self.on_team(CHANNEL, self._on_request, kind=kind, share=share)

    async def on_stop(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _pool(self) -> SolverPool:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = SolverPool(reuse_models=self.reuse_models)
        return pool

    def _solve_blocking(self, kind: str, body: Any, budget: float) -> tuple[str, dict[str, Any]]:
        try:
            return RESULT, solve_request(kind, body, budget, self._pool())
        except (BadRequest, PlanningError, TimeoutError) as exc:
            return ERROR, error_body(exc)
        except Exception as exc:  # a solver bug must not take the service down
            self.log.error("allocation.solver_failed", error=repr(exc), exc_info=True)
            return ERROR, error_body(exc)

    async def _on_request(self, env: Envelope, topic: Topic) -> None:
        if env.reply_to is None or env.corr is None:
            self.stats["allocation.unaddressed"] += 1
            self.log.warning("allocation.no_reply_address", sender=env.sender, kind=env.kind)
            return
        if self.shared and self.clustered:
            key = _owner_key(env)
            if owner(key, self._replicas()) != self.id:
                self.stats["allocation.not_owner"] += 1
                self._watch(key, env)
                return
        self.spawn(self._serve(env), "serve", optional=True)

    async def _on_heartbeat(self, env: Envelope, topic: Topic) -> None:
        """Nothing to do: receiving it updated the sender's ``last_seen_ms``."""

    def _replicas(self) -> set[str]:
        """This replica and the others of its group seen ONLINE and heard from within
        three heartbeats (at least 3 s): a replica whose broker node died publishes no
        Will and stays ONLINE until it reconnects, so silence is what shows it gone."""
        live = {self.id}
        quiet_ms = max(3000, int(3000 * self.runtime.heartbeat_s))
        now = wall_ms()
        for agent_id in self.team_view.online(kind=self.kind):
            member = self.team_view.get(agent_id)
            if member is None or member.factsheet.get("shared", self.group) != self.group:
                continue
            if now - member.last_seen_ms <= quiet_ms:
                live.add(agent_id)
        return live

    def _watch(self, key: str, env: Envelope) -> None:
        now = wall_ms()
        self._watched[key] = env
        for old in list(self._watched):  # forget what expired (oldest first)
            deadline = self._watched[old].deadline
            if deadline is None or deadline >= now:
                break
            del self._watched[old]
        while len(self._watched) > self.cache_size:
            self._watched.popitem(last=False)

    async def on_presence(self, agent_id: str, old: Presence, new: Presence) -> None:
        """Cluster mode: a replica went; serve at once what it owned and this one now
        owns (still before its deadline)."""
        if not (self.shared and self.clustered) or new is Presence.ONLINE:
            return
        if old is not Presence.ONLINE or not self._watched:
            return
        live, now = self._replicas(), wall_ms()
        for key, env in list(self._watched.items()):
            if env.deadline is not None and env.deadline < now:
                del self._watched[key]
            elif owner(key, live) == self.id:
                del self._watched[key]
                self.stats["allocation.taken_over"] += 1
                self.log.info("allocation.taken_over", requester=env.sender, gone=agent_id)
                self.spawn(self._serve(env), "serve", optional=True)

    async def _serve(self, env: Envelope) -> None:
        received = time.monotonic()
        rid = env.body.get("request_id") if isinstance(env.body, dict) else None
        key = (env.sender, rid) if isinstance(rid, str) and rid else None
        if key is not None and key in self._done:
            self.stats["allocation.cached"] += 1
            kind, body = self._done[key]
            await self.reply(env, kind, body)
            return
        if key is not None and key in self._inflight:
            self.stats["allocation.joined"] += 1
            joined = await asyncio.shield(self._inflight[key])
            if joined is not None:  # None: the first attempt expired unanswered
                await self.reply(env, *joined)
            return
        future: asyncio.Future[tuple[str, dict[str, Any]] | None] = (
            asyncio.get_running_loop().create_future()
        )
        if key is not None:
            self._inflight[key] = future
        try:
            answer = await self._compute(env, received)
            future.set_result(answer)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: joiners re-raise it
            raise
        finally:
            if key is not None:
                self._inflight.pop(key, None)
        if answer is None:
            return
        kind, body = answer
        if key is not None and self.cache_size and body.get("error") != "deadline":
            self._done[key] = answer
            while len(self._done) > self.cache_size:
                self._done.popitem(last=False)
        await self.reply(env, kind, body)

    async def _compute(self, env: Envelope, received: float) -> tuple[str, dict[str, Any]] | None:
        assert self._slots is not None and self._executor is not None
        async with self._slots:
            queued = time.monotonic() - received
            budget = None
            if env.deadline is not None:
                budget = (env.deadline - wall_ms() - self.margin_ms) / 1000.0
                if budget <= 0:
                    self.stats["allocation.expired"] += 1
                    self.log.warning(
                        "allocation.expired", sender=env.sender, corr=env.corr, queued_s=queued
                    )
                    return None
            loop = asyncio.get_running_loop()
            t0 = time.monotonic()
            kind, body = await loop.run_in_executor(
                self._executor,
                self._solve_blocking,
                env.kind,
                env.body,
                budget if budget is not None else 3600.0,
            )
        service = time.monotonic() - t0
        rid = env.body.get("request_id") if isinstance(env.body, dict) else None
        body = {
            **body,
            "request_id": rid if isinstance(rid, str) else None,
            "replica": self.id,
            "timing": {"queued_s": queued, "service_s": service},
        }
        self.stats[f"allocation.{'answered' if kind == RESULT else 'refused'}"] += 1
        if kind == RESULT:
            self.log.info(
                "allocation.answered",
                kind=env.kind,
                requester=env.sender,
                solver=body.get("solver"),
                status=body.get("status"),
                solve_s=round(body.get("solve_time", 0.0), 4),
                service_s=round(service, 4),
            )
        else:
            self.log.warning(
                "allocation.refused",
                kind=env.kind,
                requester=env.sender,
                error=body["error"],
                field=body.get("field"),
                detail=body.get("message"),
            )
        return kind, body


def _owner_key(env: Envelope) -> str:
    """What ownership hashes: requester and request id (a retry keeps its owner), else
    the correlation id."""
    rid = env.body.get("request_id") if isinstance(env.body, dict) else None
    return f"{env.sender}/{rid}" if isinstance(rid, str) and rid else f"{env.sender}/{env.corr}"
