"""A tea party (seed 000, two robots, their drivers and the world, each its own
process against mosquitto) that chaos scenarios can hurt, and what came of it.

``TeaParty`` writes the config, starts the processes, and watches the broker with an
observer that is not a member; ``Outcome`` judges a run from the world's own state
(objects at their goals, violations) and from the robots' snapshots: completed
(every robot ended its mission, every needed object at its goal), duplicates (the
world's violations: two bodies on one object's behaviour at once, a double hold, a
second place; the robots' transitions may overlap harmlessly, since a frozen robot
says it stopped only when it wakes, so they are reported, not counted), false
completion (a robot ended its mission, or a robot's snapshot says a leaf is done,
while the world shows the leaf's object away from its goal).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teamtree.agents import Agent, RuntimeSettings
from teamtree.broker.envelope import Envelope
from teamtree.broker.topics import Topic
from tests.conftest import REPO, AgentProcs

TREE = "AND(THEN(cup, AND(sugar, tea_pot)), THEN(sandwich, OR(orange, apple), burger))"
NEEDED = ("cup", "sugar", "tea_pot", "sandwich", "burger")
EITHER = ("orange", "apple")
ROBOTS = ("pr2", "baxter")
SERVICES = ("world", "pr2-driver", "baxter-driver")


def party_config(path: Path, team: str, *, time_factor: float = 2.0, keepalive: int = 1) -> Path:
    """The tea party of configs/tea_party_s1.toml for `team`, without the recorder."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = text.split('[[agents]]\nid = "recorder"')[0]
    text = text.replace('name = "tea-party-s1"', f'name = "{team}"')
    text = text.replace("time_factor = 8.0", f"time_factor = {time_factor}")
    text = text.replace("keepalive_s = 2", f"keepalive_s = {keepalive}")
    text = text.replace("timeout_s = 240", "timeout_s = 150")
    path.write_text(text)
    return path


def survivor_config(path: Path, team: str) -> Path:
    """configs/compose_tea_party.toml's two robots without the human and the allocators,
    the burger 8 cm wide so that the PR2 can grasp everything: either robot alone can
    finish the mission, so killing one must not stop the other."""
    text = (REPO / "configs" / "compose_tea_party.toml").read_text()
    text = text.split("# Two replicas")[0]
    human = text.index('[[agents]]\nid = "human"')
    text = text[:human] + text[text.index('[[agents]]\nid = "world"') :]
    text = text.replace('name = "tea-party"', f'name = "{team}"')
    text = text.replace('zmq_host = "0.0.0.0"\nzmq_port = 5555\nzmq_advertise = "world"\n', "")
    text = text.replace("dims = [0.045, 0.07]", "dims = [0.040, 0.07]")
    text = text.replace("keepalive_s = 2", "keepalive_s = 1")
    text = text.replace("timeout_s = 240", "timeout_s = 150")
    text = text.split("[agents.hands.alice]")[0] + text[text.index("[agents.objects.burger]") :]
    path.write_text(text)
    return path


@dataclass
class Outcome:
    """What one run came to (see the module docstring)."""

    completed: bool
    duplicates: int
    false_completions: int
    detail: str = ""


@dataclass
class TeaParty:
    """The team's processes and an observer of everything they publish."""

    procs: AgentProcs
    observer: Agent
    transitions: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)
    world_state: dict[str, Any] | None = None
    busy: dict[str, str | None] = field(default_factory=dict)
    """Driver -> the command its body runs, as its latest observation shows."""

    @classmethod
    def make(
        cls,
        tmp_path: Path,
        broker_url: str,
        endpoint: Any,
        team: str,
        config: Path | None = None,
        observer_id: str | None = None,
        credentials: dict[str, str] | None = None,
        **kw: Any,
    ) -> TeaParty:
        config = config or party_config(tmp_path / "party.toml", team, **kw)
        procs = AgentProcs(config, broker_url, team, tmp_path)
        observer = Agent(
            observer_id or f"chaos-observer-{os.getpid()}",
            team=team,
            endpoint=endpoint,
            runtime=RuntimeSettings(keepalive_s=2),
            **(credentials or {}),
        )
        party = cls(procs, observer)
        observer.on_agents("state", party._on_transition, kind="node.transition")
        observer.on_agents("snapshot", party._on_snapshot, kind="node.snapshot")
        observer.on_agents("state", party._on_world, kind="world.state")
        observer.on_agents("observation", party._on_observation, kind="observation")
        return party

    async def _on_transition(self, env: Envelope, topic: Topic) -> None:
        if env.sender in ROBOTS and isinstance(env.body, dict):
            self.transitions.append((env.ts, env.body))

    async def _on_snapshot(self, env: Envelope, topic: Topic) -> None:
        if env.sender in ROBOTS and isinstance(env.body, dict):
            self.snapshots[env.sender] = env.body

    async def _on_world(self, env: Envelope, topic: Topic) -> None:
        if env.sender == "world" and isinstance(env.body, dict):
            self.world_state = env.body

    async def _on_observation(self, env: Envelope, topic: Topic) -> None:
        robot = env.body.get("robot") if isinstance(env.body, dict) else None
        if isinstance(robot, dict):
            self.busy[env.sender] = robot.get("busy")

    def body_running(self, robot: str) -> bool:
        """Whether `robot`'s driver shows its body running a command (the world got
        the execute, so a lease runs)."""
        return bool(self.busy.get(f"{robot}-driver"))

    def start(self) -> None:
        for agent_id in (*SERVICES, *ROBOTS):
            self.procs.start(agent_id)

    def started(self) -> bool:
        """Whether a robot has said it works on a leaf (it may have finished it since:
        a loaded test process can read a leaf's start and end in one go)."""
        return any(body.get("status") == "working" for _, body in self.transitions)

    def working(self, robot: str) -> str | None:
        """The leaf `robot` last said it works on, if it has not left it since."""
        current: str | None = None
        for _, body in self.transitions:
            if body.get("agent") != robot:
                continue
            if body.get("status") == "working":
                current = body.get("node")
            elif body.get("node") == current:
                current = None
        return current

    def signal(self, agent_ids: tuple[str, ...], sig: int) -> None:
        for agent_id in agent_ids:
            self.procs.procs[agent_id].send_signal(sig)

    async def wait_robots(self, timeout: float) -> dict[str, int | None]:
        """Wait for both robots to end; their exit codes (None: still running)."""
        return await self.wait_robots_of(ROBOTS, timeout)

    async def wait_robots_of(
        self, robots: tuple[str, ...], timeout: float
    ) -> dict[str, int | None]:
        """Wait for `robots` to end; their exit codes (None: still running)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            codes = {r: self.procs.procs[r].poll() for r in robots}
            if all(c is not None for c in codes.values()):
                return codes
            await asyncio.sleep(0.2)
        return {r: self.procs.procs[r].poll() for r in robots}

    async def final_state(self) -> dict[str, Any] | None:
        await asyncio.sleep(1.5)  # the world publishes its state about once a second
        return self.world_state

    def stop(self) -> None:
        for proc in self.procs.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
        self.procs.stop_all()

    def logs(self) -> str:
        return "\n".join(f"--- {a}\n{self.procs.log(a)[-3000:]}" for a in self.procs.procs)

    def outcome(self, codes: dict[str, int | None], state: dict[str, Any] | None) -> Outcome:
        objects = (state or {}).get("objects", {})
        at_goal = {name for name, o in objects.items() if o.get("at_goal")}
        placed = set(NEEDED) <= at_goal and bool(set(EITHER) & at_goal)
        violations = int((state or {}).get("violations", 0))
        duplicates = violations  # bodies, not beliefs (see the module docstring)
        ended = [r for r, c in codes.items() if c == 0]
        leaf_object = _leaf_objects()
        claimed_done = {
            n for s in self.snapshots.values() for n in s.get("done") or [] if isinstance(n, str)
        }
        false = sum(1 for n in claimed_done if leaf_object.get(n) not in at_goal)
        if ended and not placed:
            false += 1
        completed = len(ended) == len(ROBOTS) and placed
        detail = (
            f"codes={codes} at_goal={sorted(at_goal)} violations={violations} "
            f"belief_overlaps={_overlaps(self.transitions)} snapshot_done={sorted(claimed_done)}"
        )
        return Outcome(completed, duplicates, false, detail)


def _leaf_objects() -> dict[str, str]:
    from teamtree.planners.tasktree import parse_tree

    tree = parse_tree(TREE)
    return {leaf: str(tree[leaf].param_dict.get("object")) for leaf in tree.leaves}


def _overlaps(transitions: list[tuple[int, dict[str, Any]]]) -> int:
    spans: dict[str, list[list[Any]]] = defaultdict(list)
    for ts, body in transitions:
        node, agent, status = body.get("node"), body.get("agent"), body.get("status")
        if status == "working":
            spans[node].append([ts, None, agent])
        else:
            for span in spans[node]:
                if span[2] == agent and span[1] is None:
                    span[1] = ts
    count = 0
    for node_spans in spans.values():
        live = sorted((s[0], s[1] or 1 << 62, s[2]) for s in node_spans)
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(live):
            if a != b and start_b < end_a:
                count += 1
    return count


def _env(kind: str, sender: str, hid: int, body: Any, sid: str = "forged") -> bytes:
    from teamtree.broker import Envelope, HlcStamp, encode
    from teamtree.broker.hlc import wall_ms

    now = wall_ms()
    return encode(Envelope(kind, sender, hid, now, HlcStamp(now, 0, sender), body, sid=sid))


def forged_messages(team: str) -> list[tuple[str, bytes, bool]]:
    """The forged-message attacks of issue 14, as (topic, payload, retain):
    done transitions and a retained all-done snapshot from a made-up id (attack 3), a
    retained OFFLINE for pr2 (attack 4), 600 claims from a stranger with predicted
    header ids (attack 5), a world factsheet with a bad address (attack 6), and claim
    replies with wrong field types in baxter's name (attack 7)."""
    from teamtree.broker.topics import build
    from teamtree.planners.tasktree import parse_tree

    leaves = list(parse_tree(TREE).leaves)
    out: list[tuple[str, bytes, bool]] = []
    for hid, leaf in enumerate(leaves, 1):
        body = {"node": leaf, "agent": "ghost", "status": "done", "stamp": [hid, 0, "ghost"]}
        out.append(
            (build(team, "ghost", "state"), _env("node.transition", "ghost", hid, body), False)
        )
    snap = {"agent": "ghost", "stamp": [1, 0, "ghost"], "done": leaves, "working": None}
    out.append((build(team, "ghost", "snapshot"), _env("node.snapshot", "ghost", 99, snap), True))
    offline = {"state": "OFFLINE", "kind": "robot", "session": "forged"}
    out.append((build(team, "pr2", "connection"), _env("presence", "pr2", 1, offline), True))
    base = 10**15
    for i in range(600):
        claim = {"claim_id": f"x{i}", "node": leaves[i % len(leaves)], "claimant": "ghost",
                 "stamp": [1, 0, "ghost"], "potential": 9.0, "round": 0}  # fmt: skip
        out.append(
            (build(team, None, "claims"), _env("node.claim", "ghost", base + i, claim), False)
        )
    sheet = {"kind": "world", "zmq": "12345", "session": "forged"}
    out.append((build(team, "world", "factsheet"), _env("factsheet", "world", 1, sheet), False))
    for i in range(50):
        bad = {"claim_id": 7, "node": ["x"], "claimant": "pr2", "replier": "baxter",
               "round": "two", "reports": [{"node": None, "state": 3, "agent": [1]}]}  # fmt: skip
        topic = build(team, "baxter", "claim_reply", "pr2")
        out.append((topic, _env("node.claim_reply", "baxter", base + i, bad), False))
    return out


async def send_forged(
    endpoint: Any, team: str, username: str | None = None, password: str | None = None
) -> int:
    """Publish ``forged_messages`` from a raw MQTT client; returns how many."""
    return await send_raw(endpoint, team, forged_messages(team), username, password)


async def send_raw(
    endpoint: Any,
    team: str,
    messages: list[tuple[str, bytes, bool]],
    username: str | None = None,
    password: str | None = None,
) -> int:
    """Publish (topic, payload, retain) `messages` from a raw MQTT client, QoS 1."""
    import aiomqtt

    async with aiomqtt.Client(
        endpoint.host,
        endpoint.port,
        identifier=f"{team}-mallory",
        username=username,
        password=password,
    ) as evil:
        for topic, payload, retain in messages:
            await evil.publish(topic, payload, qos=1, retain=retain)
    return len(messages)


RUNS = int(os.environ.get("CHAOS_RUNS", "1"))
"""How often each scenario runs (``CHAOS_RUNS``; 1 in CI)."""
TABLE: dict[str, list[Outcome]] = {}


def record(scenario: str, outcome: Outcome) -> None:
    """Add one run's outcome to the session's chaos table."""
    TABLE.setdefault(scenario, []).append(outcome)


def chaos_table() -> str:
    """The chaos table as markdown: scenario, runs, completed, duplicates, false completions."""
    lines = [
        "| scenario | runs | completed | duplicates | false completions |",
        "|---|---|---|---|---|",
    ]
    for scenario, outcomes in TABLE.items():
        lines.append(
            f"| {scenario} | {len(outcomes)} | {sum(o.completed for o in outcomes)} | "
            f"{sum(o.duplicates for o in outcomes)} | {sum(o.false_completions for o in outcomes)} |"
        )
    return "\n".join(lines)
