"""Random robot-factory scenes for the favor protocol's property tests: a job, a method,
a hop limit, ``factory_robots(n)`` on a grid in random order, the agent that got the
job, and the robots busy with other work."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from teamtree.hardware import RobotProfile, factory_robots
from teamtree.planners.capability import (
    JOBS,
    ActiveMatcher,
    Offer,
    PassiveMatcher,
    Peer,
    make_matcher,
    replay,
)


@dataclass(frozen=True)
class Prediction:
    """What the agent knows from the factsheets before it asks: the robots its request
    will reach that answer (``expect``), and the offer each idle one will make."""

    matcher: PassiveMatcher | ActiveMatcher
    me: Peer
    expect: list[str]
    offers: dict[str, Offer]


@dataclass(frozen=True)
class Scene:
    """One drawn factory; ``busy`` never holds the agent."""

    job: str
    method: int
    ttl: int
    comm_range: float
    robots: list[RobotProfile]
    positions: dict[str, tuple[float, float]]
    agent_id: str
    busy: frozenset[str]

    def peers(self, looks_idle: frozenset[str] = frozenset()) -> dict[str, Peer]:
        """Every robot as its factsheet shows it: idle unless busy, or busy but in
        ``looks_idle`` (a factsheet not updated yet)."""
        return {
            r.robot_id: Peer(
                r,
                self.positions[r.robot_id],
                self.comm_range,
                r.robot_id not in self.busy or r.robot_id in looks_idle,
            )
            for r in self.robots
        }

    def predict(self, peers: dict[str, Peer]) -> Prediction:
        """The agent's replay of its request over ``peers`` (see ``reach.py``)."""
        matcher = make_matcher(self.method)
        me = peers[self.agent_id]
        answers: dict[str, Offer | None] = {}
        query = matcher.query(me.profile, JOBS[self.job])
        reach = replay(me, peers, query, matcher, self.ttl, answers=answers)
        offers = {k: v for k, v in answers.items() if v is not None}
        return Prediction(matcher, me, sorted(reach.answerers), offers)


@st.composite
def scenes(
    draw: st.DrawFn, n: int, ttls: tuple[int, int], ranges: Sequence[float], width: int
) -> Scene:
    """A :class:`Scene` of ``n`` robots on a grid ``width`` wide, ttl in ``ttls``
    (inclusive), communication range one of ``ranges``."""
    robots = factory_robots(n)
    order = draw(st.permutations(list(range(n))))
    busy_mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    agent_id = robots[draw(st.integers(0, n - 1))].robot_id
    busy = {r.robot_id for r, b in zip(robots, busy_mask, strict=True) if b} - {agent_id}
    positions = {r.robot_id: (float(order[i] % width), float(order[i] // width))
                 for i, r in enumerate(robots)}  # fmt: skip
    return Scene(
        job=draw(st.sampled_from(sorted(JOBS))),
        method=draw(st.sampled_from([1, 2])),
        ttl=draw(st.integers(*ttls)),
        comm_range=draw(st.sampled_from(list(ranges))),
        robots=robots,
        positions=positions,
        agent_id=agent_id,
        busy=frozenset(busy),
    )
