"""Task-tree benchmark over a real broker (seed 000 at scale).

For each team size x tree size: a world, one driver per robot and the robots run as
agents against mosquitto (or the embedded broker) at a high time factor; a flat
``AND`` of ``THEN(a, b)`` pairs of PLACE behaviours is executed. Prints mission time,
protocol messages per behaviour, and claim latency (announcement to decision, p50/p99)
next to the broker round trip measured in the same run: during the mission, and before
it with every member connected and idle (the ``idle rtt``; the claim's goals are
multiples of it). ``--hogs N`` also makes every run beside N processes that spin a core
each, alternating with the run without them, and prints the ratio of the medians.
``--nice N`` runs the broker and every agent at nice N, as ``[runtime] nice`` does for
a team (the hogs stay at 0).

Where the agents run (``--procs N``):

- ``--procs 1``: every agent in this process (one connection each); on a big team
  they contend for one core, so read its figures as an upper bound.
- ``--procs N`` (N >= 2, the default is 3): the world in one worker process, the
  robots with their drivers spread over N - 1 more, each agent with its own
  connection as in one process. This process keeps the broker, the round-trip
  prober and its echo, and a tap: a bare connection subscribed to the protocol
  topics only (claims, replies, transitions, snapshots, events), which counts the
  messages and takes claim latencies from the ``node.claim_decided`` events, so the
  figures cover every worker: the claimant's ``elapsed_ms`` (first publish to
  decision, by its own clock), or where an event has none, the claim's HLC wall
  stamp to the event's timestamp (whole milliseconds both, so a 2-3 ms claim read
  that way was off by up to a millisecond, the goal at 8 robots being 3 round trips).
  Workers report exit codes, end times and CPU seconds back over a pipe; with
  ``--profile DIR`` each process also writes a cProfile file there (CPU time, not
  wall time, which on a busy machine counts every wait for the other processes;
  profiling slows the agents enough to tip a big run into overload).

The tap is the same in both modes.

A run is ``ok`` when every member exited 0, every behaviour is done and no node was
started while another robot held it or after it was done, read from the transitions'
HLC stamps (``planners/tasktree/starts.py``); a node taken over after its holder
released it (a retry after a failed behaviour) is listed, not a fault.

Mission time runs from the moment every member is connected to the last member's
exit. ``cpu s`` is the CPU time the workers and this process spent from then until
the tap fell quiet (not mosquitto's).

    python benchmarks/bench_tasktree.py [--robots 2 8 16 32] [--behaviours 10 50 500]
    python benchmarks/bench_tasktree.py --robots 32 --behaviours 500          # minutes
    python benchmarks/bench_tasktree.py --procs 1 --robots 16 --behaviours 50 # one process
    python benchmarks/bench_tasktree.py --robots 32 --behaviours 500 --profile /tmp/prof
    python benchmarks/bench_tasktree.py --robots --startup 20 50   # start-up only
    python benchmarks/bench_tasktree.py --robots 32 --behaviours 50 --repeat 8  # medians
    python benchmarks/bench_tasktree.py --robots 8 32 --behaviours 50 --repeat 4 --hogs 2
    python benchmarks/bench_tasktree.py --robots 8 32 --behaviours 50 --hogs 2 --nice -10

Figures measured with this script, and how they were reached (what was kept and what
was tried and dropped): docs/results/2026-11-tasktree-claims.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import itertools
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import structlog
from startup import print_startup, startup_row  # benchmarks/startup.py, beside this script

from teamtree.agents import Agent, RuntimeSettings, build_agent, parse_config
from teamtree.agents.runtime.event_loop import run_main
from teamtree.agents.runtime.priority import apply_nice
from teamtree.broker import (
    ConfigError,
    Connection,
    Endpoint,
    Incoming,
    MosquittoBroker,
    WireError,
    decode,
    find_mosquitto,
    parse_endpoint,
)
from teamtree.broker.topics import parse as parse_topic
from teamtree.broker.topics import pattern
from teamtree.planners.tasktree import RepeatedStarts, repeated_starts

PROTOCOL_KINDS = {
    "node.claim",
    "node.claim_reply",
    "node.transition",
    "node.snapshot",
    "node.claim_decided",
    "node.potentials",
    "node.interest",
    "node.interest_ack",
    "node.interest_acks",
}
PROGRESS_S = 5.0
RTT_PROBE_S = 0.02
"""The prober's pause between two round trips: often enough that a mission of a second
or two gives the round trip's p50 from dozens of pings, not a handful."""
IDLE_PINGS = 50
"""Round trips measured with every member connected and idle, before the mission
starts: the broker's round trip without the team's traffic, the claims' baseline."""


def team_config(
    team: str, robots: int, behaviours: int, time_factor: float, scope: str = "interest"
) -> dict[str, Any]:
    """Robots on a ring around a round table, objects spread on it, goals near them.
    ``scope`` "interest": the robots declare their interest (``declared_interest``)."""
    pairs = max(1, behaviours // 2)
    tree = "AND(" + ", ".join(f"THEN(o{2 * i}, o{2 * i + 1})" for i in range(pairs)) + ")"
    radius = 0.9 if robots <= 4 else 0.25 * robots / math.pi + 0.6
    world_robots, agents = {}, []
    for r in range(robots):
        angle = 2 * math.pi * r / robots
        base = [radius * math.cos(angle), radius * math.sin(angle), 0.0]
        world_robots[f"r{r}"] = {"profile": "pr2", "base": base, "yaw": angle + math.pi}
        agents.append(
            {
                "id": f"r{r}",
                "kind": "robot",
                "profile": "pr2",
                "metric": "distance",
                "start_timeout_s": 30.0,
                "declared_interest": scope == "interest",
            }
        )
        agents.append(
            {"id": f"r{r}-driver", "kind": "sim_driver", "role": "service", "robot": f"r{r}"}
        )
    objects = {}
    for i in range(2 * pairs):
        # objects near the robots' ring, each goal a little inward of its object
        angle = 2 * math.pi * (i * 0.618034 % 1.0)
        dist = radius - 0.55
        pos = [dist * math.cos(angle), dist * math.sin(angle), 0.80]
        goal = [0.85 * pos[0], 0.85 * pos[1], 0.81]
        objects[f"o{i}"] = {
            "shape": "cylinder",
            "dims": [0.03, 0.10],
            "position": pos,
            "goal": goal,
        }
    agents.append({"id": "world", "kind": "world", "role": "service", "time_factor": time_factor,
                   "objects": objects, "robots": world_robots})  # fmt: skip
    agents.append({"id": "echo", "kind": "echo", "role": "service"})
    return {
        "team": {"name": team},
        "runtime": {"tick_hz": 20, "keepalive_s": 5, "heartbeat_s": 2.0},
        "mission": {"kind": "tasktree", "tree": tree, "timeout_s": 600},
        "agents": agents,
    }


class Tap:
    """Counts protocol messages and collects claim stamps and decisions.

    A bare broker connection on the protocol topics only: it never sees the
    observations, which are most of the bytes of a big run.
    """

    def __init__(self, endpoint: Endpoint, team: str):
        self.counts: Counter[str] = Counter()
        self.claims: dict[str, int] = {}
        self.latencies: list[float] = []
        self.stamp_latencies: list[float] = []
        """The same claims from the claim's stamp to the event's (whole ms both), the
        measure before ``elapsed_ms``: printed beside it, for figures of older code."""
        self.done: set[str] = set()
        self.history: dict[str, list[tuple[str, str, tuple[int, int, str]]]] = {}
        """node -> every transition (agent, status, HLC stamp): ``repeated_starts``."""
        self.delivered: dict[str, float] = {}
        """claim id -> wall ms the tap received the claim (broker delivery)."""
        self.replied: dict[str, list[int]] = {}
        """claim id -> each reply's send stamp (the replier's HLC wall ms)."""
        self.decided: dict[str, tuple[int, bool]] = {}
        """claim id -> (decision stamp, won)."""
        self.elapsed: dict[str, float] = {}
        """claim id -> its latency (``elapsed_ms``, or from the stamps): ``waves``."""
        self.claimant: dict[str, str] = {}
        """claim id -> the robot that made it."""
        self._seen: set[tuple[str, int]] = set()
        self._asked: set[tuple[str, str | None]] = set()
        self.unasked: Counter[bool] = Counter()
        self.every: list[float] = []
        """Every decided claim's ``elapsed_ms``, the unasked ones at 0."""
        """Claims decided before they were ever published, by won (with declared
        interest: no online peer's declaration met the leaf)."""
        self.declared: dict[tuple[str, tuple], float] = {}
        """(agent, stamp) of each declaration -> wall ms the tap received it."""
        self.acked: dict[tuple[str, tuple], float] = {}
        """(declarer, stamp) -> wall ms the tap received its last acknowledgement."""
        self.connection = Connection(
            endpoint, client_id=f"teamtree-{team}-tap", on_message=self._on_message
        )
        self._filters = [
            pattern(team, None, "claims"),
            pattern(team, "+", "claims", "+"),
            pattern(team, "+", "potentials"),
            pattern(team, "+", "claim_reply", "+"),
            pattern(team, "+", "state"),
            pattern(team, "+", "snapshot"),
            pattern(team, "+", "events"),
            pattern(team, None, "interest"),
            pattern(team, "+", "interest", "+"),
            pattern(team, "+", "interest_ack", "+"),
            pattern(team, "+", "interest_acks"),
        ]
        self.robots = 0
        """The team's robots (set before the run): a message to the team reaches each
        other robot (``robot_deliveries``)."""
        self.to_team = 0
        """Protocol messages not addressed to one agent."""
        self._task: asyncio.Task[None] | None = None

    def messages(self) -> int:
        """Protocol messages seen (each published message once)."""
        return sum(n for kind, n in self.counts.items() if kind in PROTOCOL_KINDS)

    def robot_deliveries(self) -> int:
        """Protocol messages the robots received: one for a message to one agent, one
        per other robot for a message to the team (events, read by no robot, counted
        as sent to the team)."""
        return self.messages() - self.to_team + self.to_team * max(self.robots - 1, 0)

    async def start(self) -> None:
        for topic_filter in self._filters:
            await self.connection.subscribe(topic_filter)
        self._task = asyncio.create_task(self.connection.run())
        await asyncio.wait_for(self.connection.connected.wait(), 10)

    async def close(self) -> None:
        await self.connection.close()

    async def _on_message(self, message: Incoming) -> None:
        try:
            env = decode(message.payload, topic=message.topic)
        except WireError:
            return
        if (message.topic, env.hid) in self._seen:
            return  # an at-least-once duplicate
        self._seen.add((message.topic, env.hid))
        if env.kind in PROTOCOL_KINDS:
            self.counts[env.kind] += 1
            if parse_topic(message.topic).recipient is None and env.kind != "node.claim_decided":
                self.to_team += 1
        body = env.body if isinstance(env.body, dict) else {}
        if env.kind == "node.claim":
            claim_id = str(body.get("claim_id", ""))
            first = claim_id not in self.claims
            if env.to is not None:
                # to one peer: with declared interest, every claim; else a resend for
                # a missing reply, a re-ask (rule 4) or a peer that came online
                self.counts["node.claim to one peer"] += 1
                again = (claim_id, env.to) in self._asked or (claim_id, None) in self._asked
                if body.get("round", 0) == 0 and again:
                    self.counts["node.claim resent in round 0"] += 1
            self._asked.add((claim_id, env.to))
            if first and body.get("round", 0) == 0:
                self.claims[claim_id] = body["stamp"][0]
                self.claimant[claim_id] = str(body.get("claimant", env.sender))
                self.delivered[claim_id] = time.time() * 1000
        elif env.kind == "node.interest" and env.to is None:
            key = (str(body.get("agent")), tuple(body.get("stamp") or ()))
            self.declared.setdefault(key, time.time() * 1000)
        elif env.kind == "node.interest_ack":
            key = (str(body.get("declarer")), tuple(body.get("stamp") or ()))
            self.acked[key] = time.time() * 1000
        elif env.kind == "node.interest_acks":
            for entry in body.get("acks") or ():
                if isinstance(entry, dict):
                    key = (str(entry.get("declarer")), tuple(entry.get("stamp") or ()))
                    self.acked[key] = time.time() * 1000
        elif env.kind == "node.claim_decided" and "elapsed_ms" not in body:
            self.unasked[bool(body.get("won"))] += 1
            self.every.append(0.0)  # decided in the step that made it: no message out
        elif env.kind == "node.claim_reply":
            self.replied.setdefault(body.get("claim_id", ""), []).append(env.ts)
        elif env.kind == "node.claim_decided" and body.get("claim_id") in self.claims:
            stamped = env.ts - self.claims[body["claim_id"]]  # whole ms of two stamps
            elapsed = body.get("elapsed_ms")  # the claimant's own clock, sub-millisecond
            if not isinstance(elapsed, int | float) or isinstance(elapsed, bool):
                elapsed = stamped
            self.latencies.append(float(elapsed))
            self.elapsed[body["claim_id"]] = float(elapsed)
            self.every.append(float(elapsed))
            self.stamp_latencies.append(float(stamped))
            self.decided[body["claim_id"]] = (env.ts, bool(body.get("won")))
            if not body.get("won"):  # why claims are lost, names of robots and nodes out
                why = re.sub(r"root(/\d+)*", "N", str(body.get("reason", "?")))
                why = re.sub(r"\br\d+", "R", why)
                self.counts[f"lost: {why}"] += 1
        elif env.kind == "node.transition":
            node, agent = str(body.get("node")), str(body.get("agent"))
            stamp = body.get("stamp")
            try:
                hlc = (int(stamp[0]), int(stamp[1]), str(stamp[2]))
            except (TypeError, ValueError, IndexError):
                hlc = (env.ts, 0, agent)
            self.history.setdefault(node, []).append((agent, str(body.get("status")), hlc))
            if body.get("status") == "done":
                self.done.add(node)

    def starts(self) -> RepeatedStarts:
        """Nodes started more than once: while another robot held them or after they
        were done (never allowed), or taken over after a release (a retry)."""
        return repeated_starts(self.history)

    def breakdown(self) -> dict[str, float]:
        """Where a won claim's time goes (p50s, ms from the claim's stamp): the tap's
        receipt of the claim (broker delivery), the first and the last peer reply sent
        (a peer's queueing and handling), and the decision after the last reply (the
        reply's delivery and the claimant's queueing)."""
        won = [c for c, (_ts, w) in self.decided.items() if w and self.replied.get(c)]
        parts: dict[str, list[float]] = {"delivered": [], "first": [], "last": [], "after": []}
        for c in won:
            stamp, replies, (decided, _w) = self.claims[c], self.replied[c], self.decided[c]
            parts["delivered"].append(self.delivered[c] - stamp)
            parts["first"].append(min(replies) - stamp)
            parts["last"].append(max(replies) - stamp)
            parts["after"].append(decided - max(replies))
        return {k: pct(v, 0.5) for k, v in parts.items()} | {"won": len(won)}

    def waves(self) -> dict[str, float]:
        """The claims that asked peers, split into each robot's first claim (made as
        the team's start-up messages are still being handled: the declarations'
        acknowledgements, the first snapshots and potentials) and the rest; count and
        p50 each."""
        first_of: dict[str, str] = {}
        for claim_id in self.elapsed:
            robot = self.claimant.get(claim_id, "")
            known = first_of.get(robot)
            if known is None or self.claims[claim_id] < self.claims[known]:
                first_of[robot] = claim_id
        firsts = set(first_of.values())
        first = [ms for c, ms in self.elapsed.items() if c in firsts]
        rest = [ms for c, ms in self.elapsed.items() if c not in firsts]
        return {
            "first_n": len(first),
            "first_p50": pct(first, 0.5),
            "rest_n": len(rest),
            "rest_p50": pct(rest, 0.5),
        }

    def declarations(self) -> dict[str, float]:
        """Declared interest: how many declarations (and how many came after a robot's
        first), and the p50 / p99 ms from the tap's receipt of one to its receipt of
        the last acknowledgement (the round a robot waits before claiming)."""
        rounds = [self.acked[k] - t for k, t in self.declared.items() if k in self.acked]
        agents = Counter(agent for agent, _stamp in self.declared)
        return {
            "count": len(self.declared),
            "later": len(self.declared) - len(agents),
            "p50": pct(rounds, 0.5),
            "p99": pct(rounds, 0.99),
        }


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile of `values` (nearest rank below), NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- a group of agents hosted by one process ----------------------------------------


class Group:
    """Some agents of one run, in this process, each with its own broker connection.

    ``services`` run until ``stop``; ``members`` are connected by ``start`` and run
    by ``run_members``, which returns their exit codes and the time the last ended.
    """

    def __init__(
        self, config_data: dict[str, Any], url: str, services: list[str], members: list[str]
    ):
        team = config_data["team"]["name"]
        config = parse_config(config_data, Path(f"<{team}>"))
        endpoint = parse_endpoint(url)
        self.services = [build_agent(config, s, endpoint=endpoint) for s in services]
        self.members = [build_agent(config, m, endpoint=endpoint) for m in members]
        self._started: list[Agent] = []
        self._service_mains: list[asyncio.Task[int]] = []

    async def start(self) -> None:
        for agent in self.services:
            await agent.__aenter__()
            self._started.append(agent)
        self._service_mains = [asyncio.create_task(a.run_until_stopped()) for a in self.services]
        for agent in self.members:
            await agent.__aenter__()
            self._started.append(agent)
        for agent in self._started:
            await agent.wait_connected(30)

    async def run_members(self) -> tuple[dict[str, int], float]:
        mains = {a.id: asyncio.create_task(a.run_until_stopped()) for a in self.members}
        if mains:
            await asyncio.wait(mains.values())
        return {i: t.result() for i, t in mains.items()}, time.monotonic()

    async def stop(self) -> None:
        for agent in self.services:
            agent.request_stop()
        for agent in self.members:
            agent.request_stop(1)
        for agent in reversed(self._started):
            await agent.stop()


def _configure_logging(verbose: bool) -> None:
    # aiomqtt warns through the standard library about queued publishes, per message
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR)
    logging.getLogger("mqtt").setLevel(logging.INFO if verbose else logging.ERROR)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.INFO if verbose else logging.ERROR
        )
    )


def _worker_main(conn: multiprocessing.connection.Connection, job: dict[str, Any]) -> None:
    """A worker process: host one Group, driven by the coordinator over `conn`."""
    _configure_logging(job["verbose"])
    profiler = cProfile.Profile(time.process_time) if job["profile"] else None
    if profiler is not None:
        profiler.enable()
    try:
        run_main(_worker_async(conn, job))  # the loop agents get (event_loop.py)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(job["profile"])


async def _worker_async(conn: multiprocessing.connection.Connection, job: dict[str, Any]) -> None:
    inbox = _pipe_inbox(conn)
    group = Group(job["config"], job["url"], job["services"], job["members"])
    with contextlib.suppress(ValueError, AttributeError):  # SIGUSR1: dump robots' state
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGUSR1, lambda: _dump_state(group.members)
        )
    try:
        await group.start()
        conn.send(("ready",))
        await _expect(inbox, "go")
        cpu0 = cpu_seconds()
        members = asyncio.create_task(group.run_members())
        told = asyncio.create_task(inbox.get())
        await asyncio.wait({members, told}, return_when=asyncio.FIRST_COMPLETED)
        if members.done():  # else the coordinator gave up (or died): stop now
            if group.members:  # the world's worker has none: the coordinator awaits no "done"
                conn.send(("done", *members.result()))
            await told
        conn.send(("cpu", cpu_seconds() - cpu0, peak_rss_mib()))
    finally:
        await group.stop()


def _dump_state(agents: Sequence[Agent]) -> None:
    """Print what each robot believes (pending claim, who it waits for, patience):
    ``kill -USR1 <worker pid>`` while a run seems stuck."""
    for agent in agents:
        c = getattr(agent, "controller", None)
        if c is None:
            continue
        p = c.claims.pending
        waits = (
            []
            if p is None
            else sorted(q for q in c.peers_online if p.replies.get(q, -1) < p.need.get(q, 0))
        )
        av = c.avoider
        book = c.interest
        unacked = [] if book is None else book.unacknowledged(c.peers_online)
        acts = c.activations()
        mine = {leaf: round(acts.leaf_value(leaf), 3) for leaf in acts.selectable}
        print(
            f"STATE {agent.id}: connected={c.connected} synced={c.synced} "
            f"mine={list(c.mine)} pending={None if p is None else (p.claim.node, p.age, p.resends)} "
            f"waits_for={waits} online={len(c.peers_online)} done={len(c.done)} "
            f"working={len(c.working)} inhibited={len(c._inhibited)} "
            f"selectable={len(mine)} positive={sum(v > 0 for v in mine.values())} "
            f"best={sorted(mine.items(), key=lambda kv: -kv[1])[:3]} "
            f"waited={None if av is None else (av._waited, av._patience)} "
            f"rivals={None if av is None else len(av.peers)} "
            f"inbound={_inbound_size(agent)} "
            f"declared={None if book is None else len(book.leaves)} "
            f"unacked={len(unacked)}{unacked[:4]} "
            f"world={_world_counts(agent)} coalesced={agent.connection.coalesced}",
            flush=True,
        )


def _world_counts(agent: Agent) -> tuple[int, int] | None:
    """(objects the robot's world view holds, those it shows at their goals)."""
    world = getattr(getattr(agent, "world", None), "world_objects", None)
    if world is None:
        return None
    return len(world), sum(o.at_goal for o in world.values())


def _inbound_size(agent: Agent) -> int | None:
    queue = getattr(agent.connection, "_inbound", None)
    return None if queue is None else queue.qsize()


def _pipe_inbox(conn: multiprocessing.connection.Connection) -> asyncio.Queue[Any]:
    """Messages arriving on `conn`, as a queue (EOF arrives as ``("eof",)``)."""
    inbox: asyncio.Queue[Any] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def readable() -> None:
        try:
            inbox.put_nowait(conn.recv())
        except (EOFError, OSError):
            loop.remove_reader(conn.fileno())
            inbox.put_nowait(("eof",))

    loop.add_reader(conn.fileno(), readable)
    return inbox


async def _expect(inbox: asyncio.Queue[Any], what: str) -> tuple[Any, ...]:
    message = await inbox.get()
    if message[0] != what:
        raise RuntimeError(f"expected {what!r} from the coordinator, got {message[0]!r}")
    return message


class Worker:
    """The coordinator's handle on one worker process."""

    def __init__(self, name: str, job: dict[str, Any]):
        self.name = name
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, job), name=name)
        self.process.start()
        child.close()
        self.inbox = _pipe_inbox(self.conn)
        self.cpu_s = 0.0
        self.rss_mib = float("nan")

    async def expect(self, what: str, timeout: float) -> tuple[Any, ...]:
        """The next message, which must be `what`; raises if the worker died or
        stayed silent for `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = await asyncio.wait_for(self.inbox.get(), 1.0)
            except TimeoutError:
                if not self.process.is_alive():
                    raise RuntimeError(
                        f"worker {self.name} died (exit code {self.process.exitcode})"
                    ) from None
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"worker {self.name}: no {what!r} in {timeout:.0f} s"
                    ) from None
                continue
            if message[0] != what:
                raise RuntimeError(f"worker {self.name} sent {message[0]!r}, expected {what!r}")
            return message

    def send(self, *message: Any) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(message)

    async def finish(self) -> None:
        """Stop the worker; collect its CPU time since "go"; kill it if it does not exit."""
        self.send("stop")
        with contextlib.suppress(Exception):
            _, self.cpu_s, self.rss_mib = await self.expect("cpu", 20)
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError, ValueError):
            loop.remove_reader(self.conn.fileno())
        await loop.run_in_executor(None, self.process.join, 10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


# -- one run ------------------------------------------------------------------------


def split(items: list[str], parts: int) -> list[list[str]]:
    """`items` in `parts` contiguous, nearly equal groups (none empty)."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


async def one_run(
    endpoint: Endpoint,
    robots: int,
    behaviours: int,
    *,
    time_factor: float,
    procs: int,
    timeout: float,
    profile_dir: Path | None,
    verbose: bool,
    scope: str = "interest",
) -> dict[str, Any]:
    team = f"bench{uuid.uuid4().hex[:6]}"
    data = team_config(team, robots, behaviours, time_factor, scope)
    leaves = 2 * max(1, behaviours // 2)
    robot_ids = [f"r{r}" for r in range(robots)]
    tag = f"{robots}x{leaves}"
    tap = Tap(endpoint, team)
    tap.robots = robots
    runtime = RuntimeSettings(keepalive_s=5)
    echo = build_agent(parse_config(data, Path(f"<{team}>")), "echo", endpoint=endpoint)
    prober = Agent("prober", team=team, endpoint=endpoint, runtime=runtime)
    local: Group | None = None
    echo_main: asyncio.Task[int] | None = None
    workers: list[Worker] = []
    members: list[Worker] = []
    cpu0 = 0.0
    profiler = (
        cProfile.Profile(time.process_time) if profile_dir is not None and procs == 1 else None
    )
    try:
        await tap.start()
        for agent in (echo, prober):
            await agent.__aenter__()
        echo_main = asyncio.create_task(echo.run_until_stopped())
        await prober.wait_connected(10)
        if procs == 1:
            if profiler is not None:
                profiler.enable()
            services = ["world", *(f"{r}-driver" for r in robot_ids)]
            local = Group(data, str(endpoint), services, robot_ids)
            await local.start()
        else:

            def job(name: str, services: list[str], member_ids: list[str]) -> dict[str, Any]:
                prof = None if profile_dir is None else str(profile_dir / f"{tag}-{name}.prof")
                return {"config": data, "url": str(endpoint), "services": services,
                        "members": member_ids, "profile": prof, "verbose": verbose}  # fmt: skip

            world = Worker("world", job("world", ["world"], []))
            workers.append(world)
            await world.expect("ready", 60)
            for i, group in enumerate(split(robot_ids, procs - 1)):
                name = f"robots{i}"
                drivers = [f"{r}-driver" for r in group]
                workers.append(Worker(name, job(name, drivers, group)))
            members = workers[1:]
            for w in members:
                await w.expect("ready", 120)
        while "world" not in prober.team_view.online():
            await asyncio.sleep(0.05)
        idle_rtts = await _ping(prober, IDLE_PINGS)
        t0, cpu0 = time.monotonic(), cpu_seconds()
        if local is not None:
            mains: asyncio.Task[Any] = asyncio.create_task(local.run_members())
        else:
            for w in workers:
                w.send("go")
            mains = asyncio.create_task(_members_done(members))
        rtts: list[float] = []
        next_progress = t0 + PROGRESS_S
        while not mains.done():
            await _ping_once(prober, rtts)
            await asyncio.wait({mains}, timeout=RTT_PROBE_S)
            now = time.monotonic()
            if now >= next_progress:
                next_progress = now + PROGRESS_S
                print(f"  {now - t0:6.1f} s: {len(tap.done)}/{leaves} behaviours done, "
                      f"{len(tap.latencies)} claims decided, "
                      f"{tap.messages()} protocol messages", flush=True)  # fmt: skip
            if now - t0 > timeout:
                break
        if mains.done():
            codes, ended = mains.result()
            timed_out = ""
        else:  # report what the run got to: a stalled run is a figure too
            mains.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await mains
            codes, ended = {}, time.monotonic()
            timed_out = f"stopped after {timeout:.0f} s, "
        mission_s = ended - t0
        await _settle(tap)
        cpu = cpu_seconds() - cpu0
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile_dir / f"{tag}-all.prof"))  # type: ignore[operator]
        failed = sorted(i for i, c in codes.items() if c != 0)
        starts = tap.starts()
        unsafe = sorted(starts.unsafe)  # a node on two bodies, or run after done
        ok = not failed and not timed_out and len(tap.done) >= leaves and not unsafe
        why = "" if ok else (f"{timed_out}exit codes {failed}, {len(tap.done)}/{leaves} done"
                             + (f", started while held or done: {unsafe}" if unsafe else ""))  # fmt: skip
        row = {
            "robots": robots,
            "scope": scope,
            "unasked": dict(tap.unasked),
            "declarations": tap.declarations(),
            "behaviours": leaves,
            "mission_s": mission_s,
            "ok": ok,
            "why": why,
            "msgs_per_behaviour": tap.messages() / leaves,
            "recv_per_behaviour": tap.robot_deliveries() / leaves,
            "kinds": dict(tap.counts),
            "starts": starts,
            "claims": len(tap.latencies),
            "claim_p50": pct(tap.latencies, 0.5),
            "claim_p99": pct(tap.latencies, 0.99),
            "every_p50": pct(tap.every, 0.5),
            "every_p99": pct(tap.every, 0.99),
            "stamped_p50": pct(tap.stamp_latencies, 0.5),
            "stamped_p99": pct(tap.stamp_latencies, 0.99),
            "rtt_p50": pct(rtts, 0.5),
            "rtt_p99": pct(rtts, 0.99),
            "idle_rtt_p50": pct(idle_rtts, 0.5),
            "procs": procs,
            "load": os.getloadavg()[0],
        }
    finally:
        if local is not None:
            await local.stop()
        for w in workers:
            await w.finish()
        echo.request_stop()
        for agent in (prober, echo):
            await agent.stop()
        if echo_main is not None:
            await echo_main
        await tap.close()
    row["cpu_s"] = cpu + sum(w.cpu_s for w in workers)
    row["worker_cpu"] = {w.name: w.cpu_s for w in workers}
    row["rss_mib"] = max([w.rss_mib for w in workers[1:]] or [peak_rss_mib()])
    row["breakdown"] = tap.breakdown()
    row["waves"] = tap.waves()
    return row


async def _ping_once(prober: Agent, rtts: list[float]) -> None:
    """One round trip to the echo, appended to ``rtts`` in ms (a lost ping is left out)."""
    start = time.perf_counter()
    with contextlib.suppress(Exception):
        await prober.request("echo", "echo.ping", None, to="echo", timeout=2)
        rtts.append((time.perf_counter() - start) * 1000)


async def _ping(prober: Agent, count: int) -> list[float]:
    """``count`` round trips to the echo, one after another (ms; lost pings left out)."""
    rtts: list[float] = []
    for _ in range(count):
        await _ping_once(prober, rtts)
        await asyncio.sleep(RTT_PROBE_S)
    return rtts


async def _members_done(members: list[Worker]) -> tuple[dict[str, int], float]:
    """Every member's exit code, and when the last one ended (the caller times out)."""
    codes: dict[str, int] = {}
    ended = 0.0
    for w in members:
        _, worker_codes, worker_ended = await w.expect("done", math.inf)
        codes.update(worker_codes)
        ended = max(ended, worker_ended)
    return codes, ended


async def _settle(tap: Tap, quiet_s: float = 0.3, limit_s: float = 10.0) -> None:
    """Wait until the tap has heard nothing new for `quiet_s` (stragglers arrive)."""
    deadline = time.monotonic() + limit_s
    last = -1
    while time.monotonic() < deadline:
        count = tap.messages()
        if count == last:
            return
        last = count
        await asyncio.sleep(quiet_s)


# -- the table ----------------------------------------------------------------------


REPEATED = (
    ("claim p50", lambda r: r["claim_p50"]),
    ("claim p99", lambda r: r["claim_p99"]),
    ("rtt p50", lambda r: r["rtt_p50"]),
    ("idle rtt p50", lambda r: r["idle_rtt_p50"]),
    ("claim/rtt", lambda r: r["claim_p50"] / max(r["rtt_p50"], 1e-9)),
    ("claim/idle rtt", lambda r: r["claim_p50"] / max(r["idle_rtt_p50"], 1e-9)),
    ("claim p99/rtt", lambda r: r["claim_p99"] / max(r["rtt_p50"], 1e-9)),
    ("first claims p50", lambda r: r["waves"]["first_p50"]),
    ("later claims p50", lambda r: r["waves"]["rest_p50"]),
    ("mission s", lambda r: r["mission_s"]),
    ("msgs/behav", lambda r: r["msgs_per_behaviour"]),
    ("recv/behav", lambda r: r["recv_per_behaviour"]),
    ("cpu s", lambda r: r["cpu_s"]),
)
"""The per-run figures ``--repeat`` summarises (ms unless named otherwise)."""


def print_repeats(rows: list[dict[str, Any]]) -> None:
    """Per size and scope: how many runs were ok, and the median (min-max) of each
    run's figures in ``REPEATED``. Figures of one run at 32 robots vary too much to
    compare two versions with (docs/results/ compares medians of runs)."""
    sizes: dict[tuple[int, int, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        sizes.setdefault((r["robots"], r["behaviours"], r["scope"], r["hogs"]), []).append(r)
    print("\nmedian (min-max) over the runs of each size:")
    for (robots, behaviours, scope, hogs), runs in sizes.items():
        ok = sum(1 for r in runs if r["ok"])
        beside = f" beside {hogs} CPU hogs" if hogs else ""
        print(f"  {robots} x {behaviours} {scope}{beside}: {len(runs)} runs, {ok} ok")
        for name, figure in REPEATED:
            values = sorted(v for v in map(figure, runs) if not math.isnan(v))
            if not values:
                continue
            print(f"    {name:<17} {statistics.median(values):9.2f} "
                  f"({values[0]:.2f}-{values[-1]:.2f})")  # fmt: skip


def print_hogs_ratio(rows: list[dict[str, Any]]) -> None:
    """Per size and scope run both ways: the median of a figure beside the hogs over
    its median without them, from runs of the same invocation."""
    sizes: dict[tuple[int, int, str], dict[int, list[dict[str, Any]]]] = {}
    for r in rows:
        key = (r["robots"], r["behaviours"], r["scope"])
        sizes.setdefault(key, {}).setdefault(r["hogs"], []).append(r)
    figures = {name: figure for name, figure in REPEATED}
    names = ("claim p50", "claim/idle rtt", "idle rtt p50", "mission s", "cpu s")
    print("\nbeside CPU hogs / without (ratio of the medians, same invocation):")
    for (robots, behaviours, scope), by_hogs in sizes.items():
        if 0 not in by_hogs or len(by_hogs) < 2:
            continue
        hogs = max(by_hogs)
        parts = []
        for name in names:
            quiet = [v for v in map(figures[name], by_hogs[0]) if not math.isnan(v)]
            busy = [v for v in map(figures[name], by_hogs[hogs]) if not math.isnan(v)]
            if quiet and busy and statistics.median(quiet) > 0:
                parts.append(f"{name} {statistics.median(busy) / statistics.median(quiet):.2f}")
        print(f"  {robots} x {behaviours} {scope}, {hogs} hogs: " + ", ".join(parts))


def print_table(rows: list[dict[str, Any]], broker: str, time_factor: float) -> None:
    """The results, one row per run."""
    print()
    print(f"task trees over {broker}, time factor {time_factor:g}")
    print(f"{'robots':>6} {'behav':>6} {'scope':>8} {'procs':>5} {'ok':>3} {'mission s':>10} {'msgs/behav':>11} {'recv/behav':>11} "
          f"{'claim p50 ms':>13} {'claim p99 ms':>13} {'rtt p50 ms':>11} {'rtt p99 ms':>11} "
          f"{'claim/rtt':>10} {'idle rtt':>9} {'claim/idle':>11} {'hogs':>5} {'cpu s':>7} "
          f"{'RSS MiB':>8} {'load':>5}")  # fmt: skip
    for r in rows:
        print(f"{r['robots']:>6} {r['behaviours']:>6} {r['scope']:>8} {r['procs']:>5} {'y' if r['ok'] else 'n':>3} "
              f"{r['mission_s']:>10.1f} {r['msgs_per_behaviour']:>11.1f} {r['recv_per_behaviour']:>11.1f} {r['claim_p50']:>13.2f} "
              f"{r['claim_p99']:>13.2f} {r['rtt_p50']:>11.2f} {r['rtt_p99']:>11.2f} "
              f"{r['claim_p50'] / max(r['rtt_p50'], 1e-9):>9.1f}x {r['idle_rtt_p50']:>9.2f} "
              f"{r['claim_p50'] / max(r['idle_rtt_p50'], 1e-9):>10.1f}x {r['hogs']:>5} {r['cpu_s']:>7.1f} "
              f"{r['rss_mib']:>8.0f} {r['load']:>5.1f}")  # fmt: skip
    for r in rows:
        if r.get("why"):
            print(f"  {r['robots']} x {r['behaviours']} not ok: {r['why']}")
    for r in rows:
        b = r["breakdown"]
        print(f"  {r['robots']} x {r['behaviours']} won claims ({b['won']}), p50 ms after the "
              f"claim's stamp: tap got it {b['delivered']:.1f}, first reply sent "
              f"{b['first']:.1f}, last reply sent {b['last']:.1f}; decided "
              f"{b['after']:.1f} after the last reply; claim p50 / p99 from the stamps "
              f"(whole ms) {r['stamped_p50']:.0f} / {r['stamped_p99']:.0f}")  # fmt: skip
        w = r["waves"]
        print(f"  {r['robots']} x {r['behaviours']} each robot's first claim: {w['first_n']}, "
              f"p50 {w['first_p50']:.1f} ms; the later claims: {w['rest_n']}, p50 "
              f"{w['rest_p50']:.1f} ms")  # fmt: skip
    for r in rows:
        d, unasked = r["declarations"], r["unasked"]
        asked = r["claims"]
        print(f"  {r['robots']} x {r['behaviours']} {r['scope']}: {asked} claims asked peers "
              f"(the p50 / p99 above), {unasked.get(True, 0)} won and {unasked.get(False, 0)} "
              f"lost without asking anyone; every decision (those at 0 ms) p50 "
              f"{r['every_p50']:.2f} ms, p99 {r['every_p99']:.2f} ms")  # fmt: skip
        if d["count"]:
            print(f"  {r['robots']} x {r['behaviours']} {r['scope']}: {d['count']} declarations "
                  f"({d['later']} after a robot's first), acknowledged by all in p50 "
                  f"{d['p50']:.1f} ms, p99 {d['p99']:.1f} ms (tap receipts)")  # fmt: skip
    for r in rows:
        starts, size = r["starts"], f"{r['robots']} x {r['behaviours']}"
        for label, nodes in (("STARTED WHILE ANOTHER ROBOT HELD IT", starts.held),
                             ("STARTED AGAIN AFTER IT WAS DONE", starts.after_done),
                             ("taken over after a release", starts.taken_over)):  # fmt: skip
            for node, history in nodes.items():
                moves = " ".join(f"{a}:{s}@{t[0]}" for a, s, t in history)
                print(f"  {size} {label}: {node} {moves}")
    for r in rows:
        kinds = ", ".join(f"{k.removeprefix('node.')} {n}" for k, n in sorted(r["kinds"].items()))
        print(f"  {r['robots']} x {r['behaviours']} messages: {kinds}")
        if r.get("worker_cpu"):
            each = ", ".join(f"{name} {cpu:.1f}" for name, cpu in r["worker_cpu"].items())
            print(f"  {r['robots']} x {r['behaviours']} CPU s per worker: {each}")


def _plan(args: argparse.Namespace) -> Iterator[tuple[int, int, str, int, int]]:
    """The runs, in order: (robots, behaviours, scope, run, hogs). With ``--hogs N``
    each run is made without hogs and beside them, the order swapped every other run
    (ABBA), so a drift of the machine over the invocation falls on both sides."""
    for robots, behaviours, scope in itertools.product(args.robots, args.behaviours, args.scope):
        for run in range(1, args.repeat + 1):
            order = [0, args.hogs] if args.hogs else [0]
            if run % 2 == 0:
                order.reverse()
            for hogs in order:
                yield robots, behaviours, scope, run, hogs


def _default_nice() -> None:  # runs in the hog before exec
    os.setpriority(os.PRIO_PROCESS, 0, 0)


@contextlib.contextmanager
def cpu_hogs(count: int) -> Iterator[None]:
    """``count`` processes that spin a core each until the block ends (0: none)."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_default_nice)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


async def main_async(args: argparse.Namespace) -> None:
    if args.broker == "mosquitto" and find_mosquitto():
        broker: Any = MosquittoBroker(persistence=False)
    else:
        from teamtree.broker import EmbeddedBroker

        broker = EmbeddedBroker()
    await broker.start()
    startup = []
    try:
        for n in args.startup:
            print(f"starting {n} agents and {n} bare clients ...", flush=True)
            startup.append(await startup_row(broker.endpoint, n))
    except BaseException:
        await broker.close()
        raise
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for robots, behaviours, scope, run, hogs in _plan(args):
            procs = 1 if args.procs == 1 else min(args.procs, robots + 1)
            nth = f", run {run} of {args.repeat}" if args.repeat > 1 else ""
            beside = f" beside {hogs} CPU hogs" if hogs else ""
            nice = f" at nice {args.nice}" if args.nice else ""
            print(f"running {robots} robots x {behaviours} behaviours ({scope}) in "
                  f"{procs} process(es){nice}{beside}{nth} ...", flush=True)  # fmt: skip
            try:
                with cpu_hogs(hogs):
                    row = await one_run(
                        broker.endpoint,
                        robots,
                        behaviours,
                        time_factor=args.time_factor,
                        procs=procs,
                        timeout=args.timeout,
                        profile_dir=args.profile,
                        verbose=args.verbose,
                        scope=scope,
                    )
            except (TimeoutError, RuntimeError) as exc:
                print(f"  failed: {exc}", flush=True)
                continue
            row["hogs"] = hogs
            rows.append(row)
            print(f"  done in {row['mission_s']:.1f} s", flush=True)
    finally:
        await broker.close()
    if rows:
        print_table(rows, broker.kind.value, args.time_factor)
    if (args.repeat > 1 or args.hogs) and rows:
        print_repeats(rows)
    if args.hogs and rows:
        print_hogs_ratio(rows)
    if startup:
        print_startup(startup)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--robots", type=int, nargs="*", default=[2, 8, 16])
    parser.add_argument("--behaviours", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--time-factor", type=float, default=50.0)
    parser.add_argument("--broker", choices=["mosquitto", "embedded"], default="mosquitto")
    parser.add_argument(
        "--procs",
        type=int,
        default=3,
        help="1: every agent in this process; N >= 2: the world in one worker "
        "process, robots and drivers spread over N - 1 more (default 3)",
    )
    parser.add_argument(
        "--scope", nargs="+", choices=["all", "interest"], default=["interest"],
        help="whom a claim asks: the peers whose declared interest meets it (interest, "
        "the robots' default and this script's), or every online peer (all); both: each "
        "run twice, side by side",
    )  # fmt: skip
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="run each size N times and also print the median and range of each run's "
        "figures (at 32 robots one run's claim p50 varies by 2x, its round trip more)",
    )  # fmt: skip
    parser.add_argument("--profile", type=Path, default=None, help="write cProfile files here")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--hogs", type=int, default=0, metavar="N",
        help="also make each run beside N processes that spin a core each, alternating "
        "with the run without them, and print the ratio of the medians (e.g. --hogs 2)",
    )  # fmt: skip
    parser.add_argument(
        "--nice", type=int, default=0, metavar="N",
        help="run the broker and every agent at nice N, as [runtime] nice does for a team "
        "(-20 to 19; below 0 needs root or CAP_SYS_NICE); the hogs stay at 0",
    )  # fmt: skip
    parser.add_argument(
        "--startup", type=int, nargs="*", default=[], metavar="N",
        help="also start N agent processes at once and N bare aiomqtt clients, and print "
        "the seconds until all are ONLINE (e.g. --startup 20 50; with --robots "
        "given no arguments, only that)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.procs < 1:
        parser.error("--procs must be 1 or more")
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more (the runs of each size)")
    if args.hogs < 0:
        parser.error("--hogs must be 0 or more (the CPU hogs beside every other run)")
    if not -20 <= args.nice <= 19:
        parser.error("--nice must be from -20 to 19")
    try:
        apply_nice(args.nice)
    except ConfigError as exc:
        parser.error(f"--nice {args.nice}: {exc}")
    _configure_logging(args.verbose)
    run_main(main_async(args))


if __name__ == "__main__":
    main()
