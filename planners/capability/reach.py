"""Who a favor request reaches and who will answer it, from what the agent already knows.

Every factory robot publishes its profile (C^self), position, communication range and
LED in its factsheet, so an agent can replay the spreading of its own request (§IV.C,
§V.B) before sending it: which robots it reaches within ``ttl`` hops, and which of
those are *capable answerers* (method 1: ΔC against C^job or C^req is zero; method 2:
every robot). A capable answerer always answers: it grants when idle and declines
(``favor.reject``) when not, so the agent can close its grant window as soon as every
capable answerer has answered instead of always waiting for the deadline (which stays
as the bound for lost messages and for robots the factsheets did not foresee).

The same replay with every robot taken as idle tells whether a job is possible at
all: if no selection exists even then, no amount of waiting helps, and the job is
reported impossible (for this method and neighbourhood) instead of failing by timeout.

Choices: the replay follows the responders' rules exactly (the requester names its
idle neighbours; a reached robot forwards to every online robot in its own range that
is not on the path while hops remain; in method 1 only when it does not grant) but
treats a robot as reached once, by its shortest path, as the responders' de-duplication
by request id does. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from teamtree.broker import NoCapableAgentError
from teamtree.hardware import RobotProfile
from teamtree.planners.capability.jobs import JobSpec
from teamtree.planners.capability.modes import (
    ActiveMatcher,
    FavorQuery,
    Method,
    Offer,
    PassiveMatcher,
)


@dataclass(frozen=True)
class Peer:
    """What a robot's factsheet says: profile, position, range and whether it is idle."""

    profile: RobotProfile
    position: tuple[float, float]
    comm_range: float
    idle: bool = True

    @property
    def robot_id(self) -> str:
        """The robot's id."""
        return self.profile.robot_id

    def reaches(self, other: Peer) -> bool:
        """``other`` is within this robot's communication range."""
        dx = self.position[0] - other.position[0]
        dy = self.position[1] - other.position[1]
        return math.hypot(dx, dy) <= self.comm_range


@dataclass(frozen=True)
class Reach:
    """The replay of one request: every robot reached (with its hop) and who answers."""

    hops: Mapping[str, int]
    answerers: frozenset[str]

    @property
    def reached(self) -> frozenset[str]:
        """Every robot the request reaches."""
        return frozenset(self.hops)


def replay(
    agent: Peer,
    peers: Mapping[str, Peer],
    query: FavorQuery,
    matcher: PassiveMatcher | ActiveMatcher,
    ttl: int,
    *,
    all_idle: bool = False,
    answers: dict[str, Offer | None] | None = None,
) -> Reach:
    """Replay the spreading of ``query`` from ``agent`` through ``peers`` (not the agent).

    ``all_idle`` takes every robot as idle (for :func:`feasibility`); ``answers`` caches
    each robot's answer to ``query`` across calls. Returns who is reached (hop 1 = the
    agent's idle neighbours) and who will answer (capable robots).
    """
    others = {k: p for k, p in peers.items() if k != agent.robot_id}
    cache: dict[str, Offer | None] = {} if answers is None else answers

    def idle(p: Peer) -> bool:
        return all_idle or p.idle

    def capable(p: Peer) -> bool:
        if p.robot_id not in cache:
            cache[p.robot_id] = matcher.answer(query, p.profile)
        return cache[p.robot_id] is not None

    hops: dict[str, int] = {}
    frontier = sorted(k for k, p in others.items() if idle(p) and agent.reaches(p))
    for k in frontier:
        hops[k] = 1
    level = 1
    while frontier and level < ttl:
        nxt: list[str] = []
        for k in frontier:
            p = others[k]
            grants = idle(p) and capable(p)
            if grants and query.method != Method.ACTIVE:
                continue  # method 1: a granting robot does not forward
            for j, q in sorted(others.items()):
                if j not in hops and p.reaches(q):
                    hops[j] = level + 1
                    nxt.append(j)
        frontier, level = nxt, level + 1
    answerers = frozenset(k for k in hops if capable(others[k]))
    return Reach(hops, answerers)


@dataclass(frozen=True)
class Feasibility:
    """Whether any team exists for the job among the robots a request could reach."""

    possible: bool
    reason: str
    reached: int


def feasibility(
    agent: Peer,
    peers: Mapping[str, Peer],
    job: JobSpec,
    matcher: PassiveMatcher | ActiveMatcher,
    ttl: int,
    answers: dict[str, Offer | None] | None = None,
) -> Feasibility:
    """Select as if every robot in reach were idle and granted; impossible if that fails.

    Under method 1 eq. 18 picks one helper (ω_o), so a job that needs two helpers
    (3(c), 5) is impossible under method 1 whoever is idle.
    """
    query = matcher.query(agent.profile, job)
    cache: dict[str, Offer | None] = {} if answers is None else answers
    reach = replay(agent, peers, query, matcher, ttl, all_idle=True, answers=cache)
    offers = [o for k in sorted(reach.answerers) if (o := cache[k]) is not None]
    try:
        matcher.select(agent.profile, job, offers)
    except NoCapableAgentError as exc:
        why = (
            f"impossible under method {int(matcher.method)}: no team of {agent.robot_id} and "
            f"the {len(reach.reached)} robots within {ttl} hop(s) can do {job.name} ({exc})"
        )
        return Feasibility(False, why, len(reach.reached))
    return Feasibility(True, "", len(reach.reached))
