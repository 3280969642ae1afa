"""A pure discrete-event stand-in for the broker, to drive the favor protocol in tests
and benchmarks: robots on a plane, a communication range, message latency and loss
from a caller-supplied ``random.Random``. Simulated time only; no I/O.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from teamtree.hardware import RobotProfile
from teamtree.planners.capability.favor import (
    FavorAction,
    FavorRequest,
    HelperLost,
    Message,
    RoleChanged,
    Selected,
    SelectionFailed,
    Send,
)
from teamtree.planners.capability.favor_requester import FavorRequester
from teamtree.planners.capability.favor_responder import FavorResponder
from teamtree.planners.capability.jobs import JobSpec
from teamtree.planners.capability.modes import ActiveMatcher, Method, PassiveMatcher, make_matcher


@dataclass
class SimEvent:
    """Something the simulation recorded (selection, failure, loss, role change)."""

    time: float
    robot: str
    action: FavorAction


@dataclass
class FavorSimulation:
    """Robots, positions and a lossy, delayed network; ``step`` advances one tick.

    ``silent`` robots drop everything they send (a helper that "goes silent").
    """

    robots: Sequence[RobotProfile]
    positions: Mapping[str, tuple[float, float]]
    rng: random.Random
    method: Method | int = Method.PASSIVE
    comm_range: float = 10.0
    loss: float = 0.0
    latency: float = 0.01
    tick: float = 0.02
    window: float = 0.1
    ttl: int = 2
    silence_timeout: float = 0.6
    max_rounds: int = 5
    now: float = 0.0
    events: list[SimEvent] = field(default_factory=list)
    silent: set[str] = field(default_factory=set)
    sent: int = 0
    dropped: int = 0

    def __post_init__(self) -> None:
        self.matcher: PassiveMatcher | ActiveMatcher = make_matcher(self.method)
        self.by_id = {r.robot_id: r for r in self.robots}
        self.responders = {
            r.robot_id: FavorResponder(r, self.matcher, battery=r.battery) for r in self.robots
        }
        self.requesters: dict[str, FavorRequester] = {}
        self._queue: list[tuple[float, int, str, Message]] = []
        self._seq = itertools.count()
        self._nbrs = {rid: self._in_range(rid) for rid in self.by_id}

    def _in_range(self, rid: str) -> list[str]:
        x, y = self.positions[rid]
        return sorted(
            o
            for o, (ox, oy) in self.positions.items()
            if o != rid and o in self.by_id and math.hypot(ox - x, oy - y) <= self.comm_range
        )

    def neighbours(self, rid: str) -> list[str]:
        """Robots within communication range of ``rid``."""
        return list(self._nbrs[rid])

    def idle_neighbours(self, rid: str) -> list[str]:
        """Neighbours in range whose presence says idle."""
        return [n for n in self._nbrs[rid] if self.responders[n].idle]

    def assign(self, job: JobSpec, agent: str) -> FavorRequester:
        """Give ``job`` to ``agent`` now (it verifies and spreads its request)."""
        req = FavorRequester(
            self.by_id[agent],
            job,
            self.matcher,
            window=self.window,
            ttl=self.ttl,
            silence_timeout=self.silence_timeout,
            max_rounds=self.max_rounds,
        )
        self.requesters[agent] = req
        self.responders[agent].has_job = True
        self._apply(agent, req.start(self.now, self.idle_neighbours(agent)))
        return req

    def set_battery(self, rid: str, battery: float) -> None:
        """Change a robot's battery (its responder notices on the next tick)."""
        self.responders[rid].battery = battery

    def _apply(self, rid: str, actions: list[FavorAction]) -> None:
        for act in actions:
            if isinstance(act, Send):
                self.sent += 1
                if rid in self.silent or self.rng.random() < self.loss:
                    self.dropped += 1
                    continue
                at = self.now + self.latency
                heapq.heappush(self._queue, (at, next(self._seq), act.to, act.message))
            else:
                if isinstance(act, RoleChanged) and act.role == "idle" and rid in self.requesters:
                    self.responders[rid].has_job = False
                self.events.append(SimEvent(self.now, rid, act))

    def _deliver(self, to: str, msg: Message) -> None:
        if isinstance(msg, FavorRequest):
            self._apply(to, self.responders[to].on_request(msg, self.now, self._nbrs[to]))
            return
        req = self.requesters.get(to)
        if req is not None and getattr(msg, "requester", None) == to:
            self._apply(to, req.on_message(msg, self.now))
        else:
            self._apply(to, self.responders[to].on_message(msg, self.now))

    def step(self) -> None:
        """Deliver what is due, then tick every state machine once."""
        self.now = round(self.now + self.tick, 9)
        while self._queue and self._queue[0][0] <= self.now + 1e-12:
            _, _, to, msg = heapq.heappop(self._queue)
            self._deliver(to, msg)
        for rid, req in self.requesters.items():
            self._apply(rid, req.tick(self.now))
        for rid, resp in self.responders.items():
            self._apply(rid, resp.tick(self.now))

    def run(self, duration: float) -> None:
        """Step for ``duration`` simulated seconds."""
        end = self.now + duration
        while self.now < end - 1e-12:
            self.step()

    def run_until_selected(self, agent: str, limit: float = 10.0) -> Selected | SelectionFailed:
        """Step until ``agent``'s requester selects or fails; TimeoutError past ``limit``."""
        end = self.now + limit
        start = len(self.events)
        while self.now < end:
            self.step()
            for ev in self.events[start:]:
                if ev.robot == agent and isinstance(ev.action, Selected | SelectionFailed):
                    return ev.action
        raise TimeoutError(f"{agent} did not finish member selection within {limit} s")

    def losses(self, agent: str) -> list[HelperLost]:
        """Helpers ``agent`` lost so far."""
        return [
            e.action for e in self.events if e.robot == agent and isinstance(e.action, HelperLost)
        ]


def grid_positions(ids: Sequence[str], spacing: float = 1.0) -> dict[str, tuple[float, float]]:
    """Robots on a square grid, row by row."""
    side = max(1, math.ceil(math.sqrt(len(ids))))
    return {
        rid: (float(i % side) * spacing, float(i // side) * spacing) for i, rid in enumerate(ids)
    }
