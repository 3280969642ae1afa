"""Working-mode decision (seed 002 Fig. 3) for the passive (method 1, §IV) and active
(method 2, §V) matchers.

Fig. 3: a robot able to do the job alone works solo, or in partnership when a capable
idle neighbour answers; a robot that cannot works by subcontract if non-assemblable,
by assembly or subcontract if assemblable.

Both matchers share one contract, used on both sides of a favor request:
``query`` (agent: what to spread), ``answer`` (neighbour: grant or stay silent) and
``select`` (agent: pick members from the answers). Choices:

- method 1 (§IV.C-D): a neighbour grants when ΔC = [s^job, 0] against C^job (it could
  do the job alone) or, when the agent spread C^req, against C^req (it fills the gap by
  assembling). Each grant is scored by θ^job or θ^req (eq. 17) and the best of those
  2a scores wins (eq. 18); an assembly winner must also form a tower that verifies
  C^job, else the next best is taken. One helper at most, so jobs that need three
  robots (3c, 5) need method 2, as in the paper.
- method 2 (§V.B-C): neighbours send their configuration; the agent checks each for
  partnership / subcontract, runs the assemble search, and ranks every solution by
  θ̂ (eq. 20) in one list: §V.C defines a solution i as "an idle neighbor ω in
  partnership/subcontract mode or the overall capability of a robot team in assembly
  mode", so neither mode is preferred. A team's q̂ counts its usable components (the
  upper robots' locomotion is not, §VI.A). Consequence: a single capable neighbour
  (q̂ near the job's one-per-domain demand) outranks an assembled team (more
  components), so with L1 idle in range M3 subcontracts job 3(a) to L1
  (θ̂ 500 > 309 for M3+S1). The paper reports M3+S1 for 3(a) under method 1 only
  (§VII.B.1) and gives no q̂^job; docs/favors.md has the details.
- method 2 ties: θ̂ sees only component counts, and L and M robots have the same counts
  (Table III), so towers that differ by an L for an M score the same (with two Ls in
  reach, L+L and L+M for job 3(b)). Eq. 18 does not say how a tie ends; the solution
  whose helpers have the fewest assembly ports wins, then the smallest label. For
  towers of one size that is the smallest A_P (eq. 19), the paper's own figure per path
  (Fig. 15), and it keeps the robots with most ports free for the community (§VIII.A:
  the active approach "values the resource utilization of the whole community"): an L,
  the only 3-port type and the base of the towers of jobs 3(c) and 5, is not taken
  where an M does the same. So job 3(b) is L+M and job 5 L+M+O1 whenever an idle M is
  in reach, however many Ls are.
- an agent that can do the job alone never assembles; partnership takes one partner.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from teamtree.broker import NoCapableAgentError
from teamtree.hardware import (
    DEFAULT_LEVELS,
    AssembledTeam,
    RobotProfile,
    StrengthCapability,
    TypeCapability,
    find_tower,
    strength_capability,
    type_capability,
)
from teamtree.planners.capability.assembly import assemble_search, available_ports
from teamtree.planners.capability.jobs import JobSpec
from teamtree.planners.capability.selection import best, theta, theta_hat
from teamtree.planners.capability.verification import verify_strength, verify_type


class WorkingMode(enum.StrEnum):
    """The four working modes of seed 002 §II.B."""

    SOLO = "solo"
    """The agent works alone."""
    PARTNERSHIP = "partnership"
    """The agent and a capable helper share the job equally."""
    ASSEMBLY = "assembly"
    """The agent assembles with helpers into one bigger robot."""
    SUBCONTRACT = "subcontract"
    """The agent passes the job to a helper, who works solo."""


class Method(enum.IntEnum):
    """Capability matching method."""

    PASSIVE = 1
    """Method 1 (§IV): strength-based, neighbours pre-compute and grant."""
    ACTIVE = 2
    """Method 2 (§V): type-based, the agent decides on raw configurations."""


def allowed_modes(capable_alone: bool, assemblable: bool) -> tuple[WorkingMode, ...]:
    """The branches of Fig. 3."""
    if capable_alone:
        return (WorkingMode.SOLO, WorkingMode.PARTNERSHIP)
    if assemblable:
        return (WorkingMode.ASSEMBLY, WorkingMode.SUBCONTRACT)
    return (WorkingMode.SUBCONTRACT,)


def can_start_assembly(agent: RobotProfile) -> bool:
    """True when the agent alone still has a port after eq. 19 (A_P >= 1)."""
    return available_ports([agent.ports]) >= 1


@dataclass(frozen=True)
class FavorQuery:
    """What the agent spreads with a favor request.

    Method 1 carries C^job, and C^req when assembly is possible (§IV.C); method 2
    carries nothing about the job (§V.B). ``agent_capable`` tells neighbours whether a
    partner (not a substitute) is sought.
    """

    method: Method
    job_name: str
    agent_capable: bool
    c_job: StrengthCapability | None = None
    c_req: StrengthCapability | None = None


@dataclass(frozen=True)
class Offer:
    """A neighbour's answer: its profile (C^fav is computed from it) and what it fits."""

    profile: RobotProfile
    fits_job: bool = False
    fits_req: bool = False

    @property
    def robot_id(self) -> str:
        """The neighbour's id."""
        return self.profile.robot_id


@dataclass(frozen=True)
class Selection:
    """The outcome of member selection.

    ``helpers`` are the chosen neighbours (empty for solo); for assembly ``team`` is the
    tower, bottom first; ``scores`` holds every candidate's θ or θ̂ by label.
    """

    mode: WorkingMode
    agent: str
    helpers: tuple[str, ...] = ()
    team: AssembledTeam | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    method: Method = Method.PASSIVE

    @property
    def members(self) -> tuple[str, ...]:
        """Everyone who works on the job (the agent is not a member under subcontract)."""
        if self.mode == WorkingMode.SUBCONTRACT:
            return self.helpers
        return (self.agent, *self.helpers)


class Matcher(Protocol):
    """The contract both methods implement."""

    method: Method

    def query(self, agent: RobotProfile, job: JobSpec) -> FavorQuery: ...

    def answer(
        self, query: FavorQuery, me: RobotProfile, job: JobSpec | None = None
    ) -> Offer | None: ...

    def select(self, agent: RobotProfile, job: JobSpec, offers: Sequence[Offer]) -> Selection: ...


class PassiveMatcher:
    """Method 1: strength-based matrices, pre-calculated grants (§IV)."""

    method = Method.PASSIVE

    def __init__(self, n_levels: int = DEFAULT_LEVELS) -> None:
        self.n_levels = n_levels

    def query(self, agent: RobotProfile, job: JobSpec) -> FavorQuery:
        """Verify the agent (eqs. 6-12) and build what it spreads."""
        c_job = job.strength(self.n_levels)
        v = verify_strength(c_job, strength_capability(agent, self.n_levels))
        c_req = None
        if not v.capable and can_start_assembly(agent):
            c_req = v.c_req
        return FavorQuery(self.method, job.name, v.capable, c_job, c_req)

    def answer(
        self, query: FavorQuery, me: RobotProfile, job: JobSpec | None = None
    ) -> Offer | None:
        """The neighbour's pre-calculation (§IV.C): grant, or None (forward instead)."""
        assert query.c_job is not None
        mine = strength_capability(me, self.n_levels)
        fits_job = verify_strength(query.c_job, mine).capable
        fits_req = (
            query.c_req is not None
            and me.assemblable
            and verify_strength(query.c_req, mine).capable
        )
        if fits_job or fits_req:
            return Offer(me, fits_job=fits_job, fits_req=bool(fits_req))
        return None

    def select(self, agent: RobotProfile, job: JobSpec, offers: Sequence[Offer]) -> Selection:
        """Member selection by eqs. 16-18; raises NoCapableAgentError when nobody fits."""
        q = self.query(agent, job)
        assert q.c_job is not None
        c_job = q.c_job
        scores: dict[str, float] = {}
        owners: dict[str, Offer] = {}
        for off in offers:
            if off.robot_id == agent.robot_id:
                continue
            c_fav = strength_capability(off.profile, self.n_levels)
            if off.fits_job:
                scores[f"{off.robot_id}:job"] = theta(c_fav, c_job)
                owners[f"{off.robot_id}:job"] = off
            if off.fits_req and q.c_req is not None and not q.agent_capable:
                scores[f"{off.robot_id}:req"] = theta(c_fav, q.c_req)
                owners[f"{off.robot_id}:req"] = off
        if q.agent_capable:
            if not scores:
                return Selection(WorkingMode.SOLO, agent.robot_id, method=self.method)
            label = str(best(scores))
            return Selection(
                WorkingMode.PARTNERSHIP,
                agent.robot_id,
                (owners[label].robot_id,),
                scores=scores,
                method=self.method,
            )

        def verifies(team: AssembledTeam) -> bool:
            return verify_strength(c_job, team.strength_capability(self.n_levels)).capable

        remaining = dict(scores)
        while remaining:
            label = str(best(remaining))
            del remaining[label]
            off = owners[label]
            if label.endswith(":job"):
                return Selection(
                    WorkingMode.SUBCONTRACT,
                    agent.robot_id,
                    (off.robot_id,),
                    scores=scores,
                    method=self.method,
                )
            tower = find_tower([agent, off.profile], verifies)
            if tower is not None:
                return Selection(
                    WorkingMode.ASSEMBLY,
                    agent.robot_id,
                    (off.robot_id,),
                    team=tower,
                    scores=scores,
                    method=self.method,
                )
        raise NoCapableAgentError(
            f"{agent.robot_id} cannot do {job.name} and no neighbour granted a fitting favor"
        )


class ActiveMatcher:
    """Method 2: type-based configurations, the agent decides everything (§V)."""

    method = Method.ACTIVE

    def __init__(self, max_members: int | None = None) -> None:
        self.max_members = max_members

    def query(self, agent: RobotProfile, job: JobSpec) -> FavorQuery:
        """Verify the agent (§V.B); the request itself discloses nothing of the job."""
        v = verify_type(job.types(), type_capability(agent))
        return FavorQuery(self.method, job.name, v.capable)

    def answer(
        self, query: FavorQuery, me: RobotProfile, job: JobSpec | None = None
    ) -> Offer | None:
        """An idle neighbour always replies with its configuration (§V.B)."""
        return Offer(me)

    def select(self, agent: RobotProfile, job: JobSpec, offers: Sequence[Offer]) -> Selection:
        """Partnership / subcontract checks, the assemble search, then θ̂ (eq. 20).

        Subcontract substitutes and assembled teams compete on θ̂ alone (§V.C), so an
        assemblable agent assembles only when a team scores above every capable
        neighbour. Solutions of equal θ̂ go to the one whose helpers have the fewest
        assembly ports (see the module docstring). Raises NoCapableAgentError when no
        solution exists.
        """
        t_job = job.types()
        q_job = t_job.q_hat
        capable = verify_type(t_job, type_capability(agent)).capable
        peers = [o.profile for o in offers if o.robot_id != agent.robot_id]
        scores: dict[str, float] = {}
        ports: dict[str, float] = {}
        singles: dict[str, RobotProfile] = {}
        for p in peers:
            tc = type_capability(p)
            if verify_type(t_job, tc).capable:
                scores[p.robot_id] = theta_hat(tc.q_hat, q_job)
                ports[p.robot_id] = p.ports
                singles[p.robot_id] = p
        if capable:
            if not scores:
                return Selection(WorkingMode.SOLO, agent.robot_id, method=self.method)
            pick = str(best(scores, ports))
            return Selection(
                WorkingMode.PARTNERSHIP, agent.robot_id, (pick,), scores=scores, method=self.method
            )
        teams: dict[str, AssembledTeam] = {}
        if can_start_assembly(agent):
            result = assemble_search(
                agent,
                peers,
                lambda team: verify_type(t_job, team.type_capability()).capable,
                max_members=self.max_members,
                may_accept=_may_cover(t_job),
            )
            for team in result.solutions:
                label = "+".join(team.ids)
                teams[label] = team
                scores[label] = theta_hat(team.type_capability().q_hat, q_job)
                ports[label] = sum(m.ports for m in team.members if m.robot_id != agent.robot_id)
        if not scores:
            raise NoCapableAgentError(
                f"{agent.robot_id} cannot do {job.name}, alone, assembled or by subcontract"
            )
        pick = str(best(scores, ports))
        if pick in singles:
            return Selection(
                WorkingMode.SUBCONTRACT, agent.robot_id, (pick,), scores=scores, method=self.method
            )
        team = teams[pick]
        helpers = tuple(i for i in team.ids if i != agent.robot_id)
        return Selection(
            WorkingMode.ASSEMBLY,
            agent.robot_id,
            helpers,
            team=team,
            scores=scores,
            method=self.method,
        )


def _may_cover(job: TypeCapability) -> Callable[[Sequence[RobotProfile]], bool]:
    """A necessary condition for a set of robots to do ``job`` in any tower: a team's
    types are its members' (§V.A) and its q̂ their sum, so the members together must
    hold every type the job needs and at least its quantities. Positions depend on
    the stacking and are left to the verification of each tower."""
    need = {(d, t) for d in range(job.T.shape[0]) for t in job.types(d)}
    cache: dict[str, tuple[frozenset[tuple[int, int]], np.ndarray]] = {}

    def of(robot: RobotProfile) -> tuple[frozenset[tuple[int, int]], np.ndarray]:
        got = cache.get(robot.robot_id)
        if got is None:
            tc = type_capability(robot)
            types = frozenset((d, t) for d in range(tc.T.shape[0]) for t in tc.types(d))
            got = cache[robot.robot_id] = (types, tc.q_hat)
        return got

    def may(robots: Sequence[RobotProfile]) -> bool:
        have: set[tuple[int, int]] = set()
        q = np.zeros_like(job.q_hat, dtype=float)
        for robot in robots:
            types, q_hat = of(robot)
            have |= types
            q = q + q_hat
        return need <= have and not (job.q_hat > q).any()

    return may


def make_matcher(method: Method | int | str) -> PassiveMatcher | ActiveMatcher:
    """The matcher for ``method`` (1 / "passive" or 2 / "active"); ValueError otherwise."""
    text = str(method).strip().lower()
    if text in ("1", "passive", "method.passive"):
        return PassiveMatcher()
    if text in ("2", "active", "method.active"):
        return ActiveMatcher()
    raise ValueError(f"unknown matching method {method!r}; use 1 (passive) or 2 (active)")


def decide_mode(
    agent: RobotProfile,
    job: JobSpec,
    neighbours: Sequence[RobotProfile],
    method: Method | int | str = Method.PASSIVE,
) -> Selection:
    """Fig. 3 end to end without messages: query, every idle neighbour answers, select.

    Raises NoCapableAgentError when no mode works.
    """
    matcher = make_matcher(method)
    q = matcher.query(agent, job)
    offers = [o for nb in neighbours if (o := matcher.answer(q, nb)) is not None]
    return matcher.select(agent, job, offers)
