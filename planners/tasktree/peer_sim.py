"""A pure discrete-event simulation of N robots running ``TaskController`` over a network.

No asyncio, no sockets, no clock: simulated time only, so a run is fast and
deterministic for a seed. The network stands in for one MQTT broker: each message
goes robot → broker → every other robot, each hop with a random delay (optionally
FIFO per link), duplicates with some probability, and reorders freely when delays are
drawn independently. Two things hold as with a real broker and TCP links:

- a robot's Last Will reaches each peer after every message that robot sent earlier
  (the broker sends it once the dead connection's bytes are processed); messages the
  broker receives from a dead connection after it noticed the death are dropped;
- the retained snapshot of a robot is its newest one (by stamp).

Each robot runs up to ``SimConfig.capacity`` behaviours at once (default 1, as seed
000's robots do; more for multitasking robots); a crash ends all of them.

A *freeze* (``SimConfig.freezes``) stops a robot together with its driver, as a hung
onboard computer or a dead Wi-Fi link does: its controller hears and says nothing
more, but its body runs on. With ``SimConfig.lease`` every body runs a behaviour only
until the lease its robot last renewed (at each tick) lapses: ``lease`` after the
renewal on the body's own clock (``lease_clock = "body"``, as the world reads a
deadline by the holder's send time, ``hardware.lease_clocks``), or, with
``lease_clock = "utc"``, at the robot's skewed clock + ``lease`` compared as UTC,
which a robot's clock skew shifts. Peers take a frozen holder's leaves over only
``lease + lease_margin`` after its Will (``TaskController(takeover_ms=...)``); without
a lease a frozen body runs its behaviour to the end. ``takeover`` overrides the
peers' wait, to show what presence alone would allow.

Used by the property tests and the benchmark; ``check_invariants`` lists every
violated guarantee of docs/protocol.md (safety, ordering, OR exclusivity, completion).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from msgspec.structs import replace as struct_replace

from teamtree.planners.tasktree.contention import PeerPotentials, PublishPotentials
from teamtree.planners.tasktree.interest import PublishInterest, PublishInterestAck
from teamtree.planners.tasktree.peer import TaskController
from teamtree.planners.tasktree.peer_messages import (
    AbortBehaviour,
    BehaviourFinished,
    ClaimDecided,
    ClaimReply,
    ClaimRule,
    PauseBehaviour,
    PeerState,
    PresenceChanged,
    PublishClaim,
    PublishReply,
    PublishSnapshot,
    PublishTransition,
    ResumeBehaviour,
    Snapshot,
    Stamp,
    StartBehaviour,
    Tick,
    Transition,
)
from teamtree.planners.tasktree.status import NodeStatus
from teamtree.planners.tasktree.tree import NodeKind, TaskTree

__all__ = [
    "CrashSpec",
    "Execution",
    "JoinSpec",
    "NetworkModel",
    "SimConfig",
    "SimResult",
    "check_invariants",
    "simulate",
]


@dataclass(frozen=True)
class NetworkModel:
    """Per-hop delay (seconds, uniform in [min_delay, max_delay]), duplicates, order.

    ``reorder=False`` keeps each link FIFO (as TCP does); ``True`` draws every delay
    independently, so any two messages may swap.
    """

    min_delay: float = 0.001
    max_delay: float = 0.02
    duplicate_p: float = 0.0
    reorder: bool = True


@dataclass(frozen=True)
class CrashSpec:
    """Crash ``robot`` while it works its ``on_start``-th behaviour, ``fraction`` through it.

    The crash ends every behaviour the robot runs then (several, with capacity > 1).
    """

    robot: str
    on_start: int = 1
    fraction: float = 0.5


@dataclass(frozen=True)
class JoinSpec:
    """``robot`` joins the running team at time ``at`` (a late joiner)."""

    robot: str
    at: float


@dataclass(frozen=True)
class SimConfig:
    """One simulated run. ``robots`` start at t=0 (joiners are listed in ``joins`` only).

    ``potentials``: robot → leaf → activation potential (eq. 1); None draws each one
    uniformly from [0.1, 1). ``duration``: behaviour time range in seconds.
    ``clock_skew_ms``: each robot's wall clock is off by up to this much.
    ``capacity``: behaviours a robot runs at once (1: seed 000's one at a time).
    """

    robots: tuple[str, ...]
    seed: int = 0
    network: NetworkModel = field(default_factory=NetworkModel)
    tick: float = 0.05
    duration: tuple[float, float] = (0.2, 1.0)
    potentials: Mapping[str, Mapping[str, float]] | None = None
    crashes: tuple[CrashSpec, ...] = ()
    joins: tuple[JoinSpec, ...] = ()
    will_delay: float = 0.1
    clock_skew_ms: int = 50
    time_limit: float = 3600.0
    rule: ClaimRule = ClaimRule.EARLIEST
    inhibit_ticks: int = 10
    capacity: int = 1
    """Behaviours each robot may run at once (``TaskController(capacity=...)``)."""
    freezes: tuple[CrashSpec, ...] = ()
    """Robots frozen with their drivers (their bodies run on, see the module docstring)."""
    lease: float | None = None
    """Seconds a body runs after its robot's last renewal; None: no leases."""
    lease_margin: float = 0.1
    """Seconds peers wait beyond the lease after a Will (with ``lease_clock = "utc"``
    it must cover clock skew)."""
    lease_clock: str = "body"
    """How a body reads a lease deadline: ``"body"`` on its own clock from the
    renewal's send time (skew cancels), ``"utc"`` as UTC (skew shifts it)."""
    takeover: float | None = None
    """Seconds peers wait after a Will; None: ``lease + lease_margin`` (0 without lease)."""
    avoid_contention: bool = False
    """Robots publish potentials and claim where the team's matching puts them
    (``TaskController(avoid_contention=True)``, ``contention.py``)."""
    declared_interest: bool = False
    """Claims ask only the peers whose declared interest meets them
    (``TaskController(declared_interest=True)``, ``interest.py``)."""
    interest_prefetch: int = 2
    """With ``declared_interest``: leaves declared beyond the one wanted."""
    undeclared: tuple[str, ...] = ()
    """With ``declared_interest``: robots that run without it (a mixed team), asking
    every online peer and acknowledging declarations as members of every leaf."""
    ack_hold: float = 0.0
    """Seconds a robot keeps its acknowledgements of declarations before they go out
    together, each carrying the latest ``own`` declaration among them (as the agents'
    outbox batches them, agents/tasktree/peer_outbox.py); 0: each at once."""

    def __post_init__(self) -> None:
        if self.lease_clock not in ("body", "utc"):
            raise ValueError(f"lease_clock is {self.lease_clock!r}; give 'body' or 'utc'")


@dataclass
class Execution:
    """One behaviour run: ``end`` is the completion, abort or crash time.

    ``unreported``: completed, but the robot crashed before any message saying so
    reached the broker (the Last Will overtook it), so no peer could know it is done.
    """

    robot: str
    node: str
    start: float
    end: float | None = None
    completed: bool = False
    aborted: bool = False
    unreported: bool = False


@dataclass
class SimResult:
    """What happened: executions, whether the mission completed, and traffic figures."""

    seed: int
    executions: list[Execution]
    completed: bool
    end_time: float
    published: int
    delivered: int
    claims: int
    claims_won: int
    claim_latencies: list[float]
    crashed: tuple[str, ...]
    capacity: int = 1
    """The run's ``SimConfig.capacity`` (``check_invariants`` bounds each robot by it)."""
    kinds: dict[str, int] = field(default_factory=dict)
    """Messages published, per message type (``Claim``, ``InterestAck``, ...)."""

    def summary(self) -> str:
        """One line for assertion messages and benchmark output."""
        done = sum(e.completed for e in self.executions)
        cap = f" capacity={self.capacity}" if self.capacity != 1 else ""
        return (
            f"seed={self.seed} completed={self.completed} t={self.end_time:.3f}s "
            f"behaviours={done} published={self.published} delivered={self.delivered} "
            f"claims={self.claims} won={self.claims_won} crashed={list(self.crashed)}{cap}"
        )


@dataclass
class _Robot:
    rid: str
    ctl: TaskController | None
    skew: int
    clock: Stamp
    alive: bool = True
    starts: int = 0
    current: dict[str, int] = field(default_factory=dict)  # node -> index into executions
    frozen: bool = False
    acks: list[Any] = field(default_factory=list)  # held acknowledgements (ack_hold)
    lease_until: dict[str, float] = field(default_factory=dict)  # node -> body stops at


class _Sim:
    def __init__(self, tree: TaskTree, cfg: SimConfig):
        self.tree = tree
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.t = 0.0
        self.heap: list[tuple[float, int, str, Any]] = []
        self.seq = 0
        self.robots: dict[str, _Robot] = {}
        self.broker_online: set[str] = set()
        self.broker_dead: set[str] = set()
        self.retained: dict[str, Snapshot] = {}
        self.last_up: dict[str, float] = {}
        self.last_down: dict[tuple[str, str], float] = {}
        self.last_link: dict[str, float] = {}
        self.executions: list[Execution] = []
        self.published = 0
        self.kinds: Counter[str] = Counter()
        self.delivered = 0
        self.claims = 0
        self.claims_won = 0
        self.claim_start: dict[str, float] = {}
        self.latencies: list[float] = []
        self.crashed: list[str] = []
        self.done_leaves: set[str] = set()
        self.reported: set[tuple[str, str]] = set()  # (robot, leaf) done, as it told the broker
        all_ids = list(cfg.robots) + [j.robot for j in cfg.joins]
        if len(set(all_ids)) != len(all_ids):
            raise ValueError("robot ids must be unique across robots and joins")
        self.pots: dict[str, dict[str, float]] = {}
        for rid in all_ids:
            if cfg.potentials is not None and rid in cfg.potentials:
                self.pots[rid] = dict(cfg.potentials[rid])
            else:
                self.pots[rid] = {leaf: float(self.rng.uniform(0.1, 1.0)) for leaf in tree.leaves}

    # ---------------------------------------------------------------- plumbing

    def push(self, t: float, kind: str, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, payload))

    def takeover(self) -> float:
        c = self.cfg
        if c.takeover is not None:
            return c.takeover
        return 0.0 if c.lease is None else c.lease + c.lease_margin

    def renew(self, r: _Robot) -> None:
        """The robot renews its bodies' leases: deadline = its clock now + lease. Read
        on the body's clock from the send time it lapses at real time t + lease; read
        as UTC (the body's clock has no skew) at t + skew + lease."""
        if self.cfg.lease is not None:
            skew = r.skew / 1000 if self.cfg.lease_clock == "utc" else 0.0
            for node in r.current:
                r.lease_until[node] = self.t + skew + self.cfg.lease

    def delay(self) -> float:
        n = self.cfg.network
        return float(self.rng.uniform(n.min_delay, n.max_delay))

    def stamp(self, r: _Robot, remote: Stamp | None = None) -> Stamp:
        """Hybrid logical clock: now, or on receipt of ``remote``."""
        wall = int(self.t * 1000) + r.skew
        w, c, _ = r.clock
        if remote is None:
            r.clock = (wall, 0, r.rid) if wall > w else (w, c + 1, r.rid)
        else:
            rw, rc, _ = remote
            m = max(wall, w, rw)
            if m == w == rw:
                c = max(c, rc) + 1
            elif m == w:
                c += 1
            elif m == rw:
                c = rc + 1
            else:
                c = 0
            r.clock = (m, c, r.rid)
        return r.clock

    def new_robot(self, rid: str, *, joining: bool) -> _Robot:
        skew = int(self.rng.integers(-self.cfg.clock_skew_ms, self.cfg.clock_skew_ms + 1))
        r = _Robot(rid, None, skew, (0, 0, rid))
        peers = set(self.broker_online) - {rid}
        r.ctl = TaskController(
            self.tree,
            rid,
            online_peers=peers,
            await_snapshots=joining,
            potentials=self.pots[rid],
            rule=self.cfg.rule,
            inhibit_ticks=self.cfg.inhibit_ticks,
            capacity=self.cfg.capacity,
            takeover_ms=round(self.takeover() * 1000),
            release_hold_ms=round(self.takeover() * 1000),
            avoid_contention=self.cfg.avoid_contention,
            declared_interest=self.cfg.declared_interest and rid not in self.cfg.undeclared,
            interest_prefetch=self.cfg.interest_prefetch,
            seed=f"{self.cfg.seed}:{rid}",
        )
        self.robots[rid] = r
        self.broker_online.add(rid)
        self.push(self.t + float(self.rng.uniform(0, self.cfg.tick)), "tick", rid)
        self.publish(rid, r.ctl.snapshot(self.stamp(r)))  # every member starts with one
        return r

    # ---------------------------------------------------------------- network

    def publish(self, sender: str, msg: Any, to: str | None = None) -> None:
        self.published += 1
        self.kinds[type(msg).__name__] += 1
        arrive = self.t + self.delay()
        if not self.cfg.network.reorder:
            arrive = max(arrive, self.last_up.get(sender, 0.0) + 1e-9)
            self.last_up[sender] = arrive
        self.push(arrive, "broker", (sender, msg, to))

    def at_broker(self, sender: str, msg: Any, to: str | None) -> None:
        if sender in self.broker_dead:
            return  # the connection is gone; the broker never forwards it
        if isinstance(msg, Snapshot):
            old = self.retained.get(sender)
            if old is None or old.stamp < msg.stamp:
                self.retained[sender] = msg
        self.note_reported(sender, msg, to)
        targets = [to] if to is not None else sorted(self.broker_online - {sender})
        for q in targets:
            if q not in self.broker_online:
                continue
            copies = 2 if self.rng.random() < self.cfg.network.duplicate_p else 1
            for _ in range(copies):
                self.down(sender, q, msg)

    def note_reported(self, sender: str, msg: Any, to: str | None) -> None:
        """Remember which leaves ``sender`` told the team (through the broker) are done."""
        match msg:
            case Transition(node=node, status=NodeStatus.DONE):
                self.reported.add((sender, node))
            case Snapshot(done=done):
                self.reported.update((sender, node) for node in done)
            case ClaimReply(reports=reports) if to in self.broker_online:
                self.reported.update((sender, r.node) for r in reports if r.state is PeerState.DONE)

    def down(self, sender: str, q: str, msg: Any, after: float = 0.0) -> None:
        arrive = max(self.t + self.delay(), after)
        if not self.cfg.network.reorder:
            arrive = max(arrive, self.last_link.get(q, 0.0) + 1e-9)
            self.last_link[q] = arrive
        key = (sender, q)
        self.last_down[key] = max(self.last_down.get(key, 0.0), arrive)
        self.push(arrive, "deliver", (q, msg, sender))

    # ---------------------------------------------------------------- robots

    def feed(self, r: _Robot, event: Any, remote: Stamp | None = None) -> None:
        assert r.ctl is not None
        actions = r.ctl.handle(event, self.stamp(r, remote))
        for a in actions:
            match a:
                case PublishClaim(claim=c, to=to):
                    self.claim_start.setdefault(c.claim_id, self.t)
                    self.publish(r.rid, c, to=to)
                case PublishReply(reply=rep):
                    self.publish(r.rid, rep, to=rep.claimant)
                case PublishTransition(transition=tr):
                    self.publish(r.rid, tr)
                case PublishSnapshot(snapshot=s):
                    self.publish(r.rid, s)
                case PublishPotentials(agent=agent, potentials=pots):
                    self.publish(r.rid, PeerPotentials(agent, pots))
                case PublishInterest(interest=i, to=to):
                    self.publish(r.rid, i, to=to)
                case PublishInterestAck(ack=ack) if self.cfg.ack_hold > 0:
                    if not r.acks:
                        self.push(self.t + self.cfg.ack_hold, "acks", r.rid)
                    r.acks.append(ack)
                case PublishInterestAck(ack=ack):
                    self.publish(r.rid, ack, to=ack.declarer)
                case ClaimDecided(claim=c, won=won):
                    self.claims += 1
                    self.claims_won += won
                    self.latencies.append(self.t - self.claim_start.get(c.claim_id, self.t))
                case StartBehaviour(node=node) | ResumeBehaviour(node=node):
                    self.start(r, node)
                case AbortBehaviour(node=node) | PauseBehaviour(node=node):
                    self.stop(r, node)

    def send_acks(self, r: _Robot) -> None:
        """Send ``r``'s held acknowledgements together, each with the latest ``own``."""
        acks, r.acks = r.acks, []
        if not r.alive or r.frozen or not acks:
            return
        own = acks[-1].own
        for ack in acks:
            self.publish(r.rid, struct_replace(ack, own=own), to=ack.declarer)

    def start(self, r: _Robot, node: str) -> None:
        r.starts += 1
        lo, hi = self.cfg.duration
        dur = float(self.rng.uniform(lo, hi))
        self.executions.append(Execution(r.rid, node, self.t))
        # a second start of a running node (a controller bug) leaves the first
        # execution open, so check_invariants reports the overlap
        idx = r.current[node] = len(self.executions) - 1
        self.push(self.t + dur, "finish", (r.rid, idx))
        self.renew(r)
        for c in self.cfg.crashes:
            if c.robot == r.rid and c.on_start == r.starts:
                self.push(self.t + c.fraction * dur, "crash", r.rid)
        for c in self.cfg.freezes:
            if c.robot == r.rid and c.on_start == r.starts:
                self.push(self.t + c.fraction * dur, "freeze", r.rid)

    def stop(self, r: _Robot, node: str) -> None:
        """End ``r``'s execution of ``node`` (aborted or paused), if it runs one."""
        idx = r.current.pop(node, None)
        if idx is not None:
            ex = self.executions[idx]
            ex.end, ex.aborted = self.t, True

    def run(self) -> SimResult:
        for rid in self.cfg.robots:
            self.broker_online.add(rid)
        for rid in self.cfg.robots:
            self.new_robot(rid, joining=False)
        for j in self.cfg.joins:
            self.push(j.at, "join", j.robot)
        end = 0.0
        while self.heap:
            t, _, kind, payload = heapq.heappop(self.heap)
            if t > self.cfg.time_limit:
                break
            self.t = t
            if kind == "tick":
                r = self.robots[payload]
                if not r.alive:
                    continue
                assert r.ctl is not None
                if r.ctl.mission_done and not r.current and r.ctl.pending_claim is None:
                    continue
                self.feed(r, Tick())
                self.renew(r)
                self.push(t + self.cfg.tick, "tick", payload)
            elif kind == "broker":
                self.at_broker(*payload)
            elif kind == "deliver":
                q, msg, _sender = payload
                r = self.robots.get(q)
                if r is None or not r.alive:
                    continue
                self.delivered += 1
                self.feed(r, msg, getattr(msg, "stamp", None))
            elif kind == "finish":
                rid, idx = payload
                r = self.robots[rid]
                ex = self.executions[idx]
                if r.frozen and r.current.get(ex.node) == idx:  # the body ran on
                    ex.end, ex.completed = t, True
                    del r.current[ex.node]
                    self.done_leaves.add(ex.node)
                    continue
                if not r.alive or r.current.get(ex.node) != idx:
                    continue
                ex.end, ex.completed = t, True
                del r.current[ex.node]
                self.done_leaves.add(ex.node)
                end = max(end, t)
                self.feed(r, BehaviourFinished(ex.node))
            elif kind == "crash":
                self.crash(payload)
            elif kind == "freeze":
                self.freeze(payload)
            elif kind == "lapse":
                rid, node, idx = payload
                r = self.robots[rid]
                if r.current.get(node) == idx:
                    self.stop(r, node)
            elif kind == "will":
                self.will(payload)
            elif kind == "acks":
                self.send_acks(self.robots[payload])
            elif kind == "join":
                self.join(payload)
        for ex in self.executions:
            if ex.completed and ex.robot in self.crashed:
                ex.unreported = (ex.robot, ex.node) not in self.reported
        completed = _satisfied_times(self.tree, self.executions).get(self.tree.root.id) is not None
        return SimResult(
            seed=self.cfg.seed,
            executions=self.executions,
            completed=completed,
            end_time=end,
            published=self.published,
            delivered=self.delivered,
            claims=self.claims,
            claims_won=self.claims_won,
            claim_latencies=self.latencies,
            crashed=tuple(self.crashed),
            capacity=self.cfg.capacity,
            kinds=dict(self.kinds),
        )

    def crash(self, rid: str) -> None:
        r = self.robots[rid]
        if not r.alive:
            return
        r.alive = False
        self.crashed.append(rid)
        for node in list(r.current):
            self.stop(r, node)
        self.push(self.t + self.cfg.will_delay, "will", rid)

    def freeze(self, rid: str) -> None:
        """``rid`` and its driver hang: no more messages either way; each body runs on
        until it finishes or (with leases) its last renewed lease lapses."""
        r = self.robots[rid]
        if not r.alive:
            return
        r.alive = False
        r.frozen = True
        self.crashed.append(rid)
        if self.cfg.lease is not None:
            for node, idx in r.current.items():
                self.push(max(self.t, r.lease_until[node]), "lapse", (rid, node, idx))
        self.push(self.t + self.cfg.will_delay, "will", rid)

    def will(self, rid: str) -> None:
        self.broker_dead.add(rid)
        self.broker_online.discard(rid)
        for q in sorted(self.broker_online):
            after = self.last_down.get((rid, q), 0.0) + 1e-9
            self.down(rid, q, PresenceChanged(rid, False), after=after)

    def join(self, rid: str) -> None:
        r = self.new_robot(rid, joining=True)
        for q in sorted(self.broker_online - {rid}):
            self.down(rid, q, PresenceChanged(rid, True))
        for owner, snap in sorted(self.retained.items()):
            if owner != rid:
                self.down(owner, rid, snap)
        # peers whose first snapshot has not reached the broker yet: it is forwarded
        # to the joiner when it arrives (the joiner is online at the broker by then)
        del r


def simulate(tree: TaskTree, config: SimConfig) -> SimResult:
    """Run one simulated mission; deterministic for ``config.seed``. Never blocks."""
    return _Sim(tree, config).run()


def _satisfied_times(tree: TaskTree, executions: list[Execution]) -> dict[str, float | None]:
    first: dict[str, float] = {}
    for e in executions:
        if e.completed and e.end is not None:
            first[e.node] = min(first.get(e.node, e.end), e.end)
    out: dict[str, float | None] = {}
    for node in reversed(list(tree)):
        if node.is_leaf:
            out[node.id] = first.get(node.id)
            continue
        kids = [out[c.id] for c in node.children]
        if node.kind is NodeKind.OR:
            done = [k for k in kids if k is not None]
            out[node.id] = min(done) if done else None
        else:
            out[node.id] = None if any(k is None for k in kids) else max(kids)  # type: ignore[type-var]
    return out


def check_invariants(tree: TaskTree, result: SimResult) -> list[str]:
    """Every violated guarantee, as sentences (empty when the run was correct).

    Checks: each leaf completed at most once; no leaf run twice at once (by two robots
    or by one); no robot runs more than ``result.capacity`` behaviours at once (one,
    for seed 000 robots); every start under THEN child i+1 after child i was
    satisfied; at most one child of each OR has a completed leaf; the mission
    completed. A crashed or aborted run counts for overlap, not for completion; a run
    that never ended overlaps everything after its start. A completion no peer could
    know of (``Execution.unreported``: its robot crashed before saying so) counts for
    the mission and THEN order but not for "at most once" and OR exclusivity, since
    the team must redo it.
    """
    errors: list[str] = []
    execs = result.executions
    inf = float("inf")
    by_node: dict[str, list[Execution]] = {}
    by_robot: dict[str, list[Execution]] = {}
    for e in execs:
        by_node.setdefault(e.node, []).append(e)
        by_robot.setdefault(e.robot, []).append(e)
    for node, es in by_node.items():
        known = [e.robot for e in es if e.completed and not e.unreported]
        if len(known) > 1:
            errors.append(f"{node} completed {len(known)} times by {known}")
        for i, a in enumerate(es):
            for b in es[i + 1 :]:
                if a.start < (b.end if b.end is not None else inf) and b.start < (
                    a.end if a.end is not None else inf
                ):
                    errors.append(
                        f"{node} run by {a.robot} [{a.start:.3f}, {a.end}] and "
                        f"{b.robot} [{b.start:.3f}, {b.end}] at once"
                    )
    for robot, es in by_robot.items():
        es = sorted(es, key=lambda e: e.start)  # stable: ties keep the run's order
        # the most a robot runs at once is reached at some start: count what still
        # runs then (an end at t frees its slot for a start at t)
        for k, e in enumerate(es):
            running = [f for f in es[:k] if f.end is None or f.end > e.start] + [e]
            if len(running) > result.capacity:
                nodes = " and ".join(f.node for f in running)
                errors.append(
                    f"{robot} ran {nodes} at once at {e.start:.3f} (capacity {result.capacity})"
                )
    sat = _satisfied_times(tree, execs)
    for node in tree:
        if node.kind is NodeKind.THEN:
            for prev, nxt in zip(node.children, node.children[1:], strict=False):
                ready = sat[prev.id]
                for leaf in tree.leaf_ids(nxt.id):
                    for e in by_node.get(leaf, []):
                        if ready is None or e.start < ready:
                            errors.append(
                                f"THEN {node.id}: {leaf} started at {e.start:.3f} before "
                                f"{prev.id} was done ({ready})"
                            )
        elif node.kind is NodeKind.OR:
            used = [
                c.id
                for c in node.children
                if any(
                    e.completed and not e.unreported
                    for leaf in tree.leaf_ids(c.id)
                    for e in by_node.get(leaf, [])
                )
            ]
            if len(used) > 1:
                errors.append(f"OR {node.id}: children {used} were all executed")
    if not result.completed:
        errors.append("the mission did not complete")
    return errors
