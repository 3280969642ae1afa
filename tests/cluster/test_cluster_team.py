"""Whole teams on a three-node RabbitMQ cluster, with a node stopped mid-mission.

Agents run as separate processes (``teamtree run --broker URL1,URL2,URL3``) and spread
over the nodes by client id (broker/failover.py); the team name is chosen so the
spread covers every node and the stopped node holds the agent under test. A node is
stopped with SIGTERM (a clean RabbitMQ stop: its clients are disconnected) and started
again after the test, in the background; the next test waits for it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.runtime.team_view import Presence
from teamtree.broker.endpoint import parse_endpoint
from teamtree.broker.failover import NodeRing
from tests.cluster_support import RabbitCluster
from tests.conftest import REPO, scaled, teamtree_cmd
from tests.integration.test_tea_party import LEAVES, check_tea_party

#: the first test carries the session's cluster start, minutes when cold beside other
#: work (its stages are printed); each wait inside it has its own scaled deadline
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]

ONLINE = re.compile(r"^(?P<agent>\S+)\s+\|.*agent\.online.*broker=(?P<url>\S+) connects=(?P<n>\d+)")


def node_of(cluster: RabbitCluster, team: str, agent_id: str) -> int:
    """The node an agent of `team` starts on (as its Connection picks it)."""
    return NodeRing(parse_endpoint(cluster.urls), f"teamtree-{team}-{agent_id}").index


def pick_team(cluster: RabbitCluster, prefix: str, agents: list[str], ok) -> str:
    """A team name whose agents cover every node and satisfy `ok(nodes)`."""
    for i in itertools.count():
        team = f"{prefix}{i}"
        nodes = {a: node_of(cluster, team, a) for a in agents}
        if set(nodes.values()) == set(range(len(cluster.nodes))) and ok(nodes):
            return team
    raise AssertionError("unreachable")


def ensure_up(cluster: RabbitCluster) -> None:
    """Every node running and clustered (a previous test may have restarted one)."""
    for index in range(len(cluster.nodes)):
        cluster.start_node(index)
        cluster.wait_node(index)
    cluster.wait_clustered()
    cluster.wait_sessions()  # an agent refused by a rejoining node fails over elsewhere


def onlines(text: str) -> list[tuple[str, str, int]]:
    """(agent, broker URL, connects) of every ``agent.online`` line of a run."""
    found = []
    for line in text.splitlines():
        m = ONLINE.match(line)
        if m:
            found.append((m["agent"], m["url"], int(m["n"])))
    return found


def wait_for_line(path: Path, pattern: str, proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    rx = re.compile(pattern, re.M)
    while time.monotonic() < deadline:
        text = path.read_text()
        if rx.search(text):
            return text
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {pattern!r}:\n{text[-4000:]}")
        time.sleep(0.1)
    raise AssertionError(f"no {pattern!r} in {timeout} s:\n{path.read_text()[-4000:]}")


def wait_after(path: Path, first: str, then: str, proc: subprocess.Popen) -> None:
    """Wait for a line matching `then` after the first line matching `first`."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = path.read_text()
        start = re.search(first, text, re.M)
        if start and re.search(then, text[start.end() :], re.M):
            return
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {then!r}:\n{text[-4000:]}")
        time.sleep(0.1)
    raise AssertionError(f"no {then!r} after {first!r}:\n{path.read_text()[-4000:]}")


def run_team(config: Path, cluster: RabbitCluster, cwd: Path) -> tuple[subprocess.Popen, Path]:
    out = cwd / "run.out"
    proc = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", ",".join(cluster.urls)),
        stdout=out.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=cwd,
    )
    return proc, out


def finish(proc: subprocess.Popen, out: Path, timeout: float = 240) -> str:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait(30)
        raise AssertionError(
            f"run did not finish in {timeout} s:\n{out.read_text()[-4000:]}"
        ) from None
    text = out.read_text()
    assert proc.returncode == 0, text[-6000:]
    return text


def without_failed_attempts(records: list[dict]) -> list[dict]:
    """The record with each failed attempt removed (a ``working`` transition its agent
    ended with ``inactive``: a lease that lapsed while the robot moved nodes, redone
    after), once no two agents' attempts at a node overlap, failed ones included. A
    second ``working`` from an agent whose attempt is still open is its re-claim after a
    reconnect (the same body, paused and resumed): it is folded into the open attempt."""
    spans: dict[str, list[list]] = {}
    failed: set[int] = set()
    for i, rec in enumerate(records):
        if rec["kind"] != "node.transition":
            continue
        body = rec["body"]
        node_spans = spans.setdefault(body["node"], [])
        if body["status"] == "working":
            if any(sp[0] == body["agent"] and sp[2] is None for sp in node_spans):
                failed.add(i)  # the same body again: its re-claim after a reconnect
                continue
            node_spans.append([body["agent"], rec["ts"], None, i])
        elif body["status"] in ("done", "inactive"):
            for span in reversed(node_spans):
                if span[0] == body["agent"] and span[2] is None:
                    span[2] = rec["ts"]
                    if body["status"] == "inactive":
                        failed.add(span[3])
                    break
    for node, node_spans in spans.items():
        live = sorted((start, end or 1 << 62, agent) for agent, start, end, _ in node_spans)
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(live):
            assert a == b or start_b >= end_a, f"{a} and {b} worked on {node} at once"
    return [rec for i, rec in enumerate(records) if i not in failed]


def credit_confirmed_attempts(records: list[dict]) -> list[dict]:
    """The record with each attempt that failed with its object left at its goal
    counted done. A body whose lease lapsed during its release puts the object down
    where the gripper is, which is the goal; the world shows it ``at_goal``, the robots
    count the leaf done from that ("done means done", docs/protocol.md) and say so in
    their snapshots, with no ``done`` transition (the behaviour failed). An ``inactive``
    transition is credited as ``done`` only when the first ``world.state`` after it
    shows the leaf's object at its goal and held by nobody, so an attempt that left the
    object anywhere else stays failed."""
    out = []
    for i, rec in enumerate(records):
        body = rec.get("body") or {}
        if rec["kind"] == "node.transition" and body.get("status") == "inactive":
            name = LEAVES.get(body["node"])
            state = next((r["body"] for r in records[i + 1 :] if r["kind"] == "world.state"), None)
            obj = (state or {}).get("objects", {}).get(name) or {}
            if obj.get("at_goal") and obj.get("held_by") is None:
                rec = {**rec, "body": {**body, "status": "done"}}
        out.append(rec)
    return out


def check_world_finished(records: list[dict]) -> None:
    """The world's last state shows the mission done: every needed object at its
    goal (one of the OR's two), nothing held, no violation."""
    states = [r["body"] for r in records if r["kind"] == "world.state"]
    assert states, "the record holds no world.state"
    objects = states[-1]["objects"]
    at_goal = {leaf for leaf, name in LEAVES.items() if objects[name]["at_goal"]}
    needed = {"root/0/0", "root/0/1/0", "root/0/1/1", "root/1/0", "root/1/2"}
    assert needed <= at_goal and at_goal & {"root/1/1/0", "root/1/1/1"}, objects
    assert all(o["held_by"] is None for o in objects.values()), objects
    assert states[-1]["violations"] == 0, states[-1]


READER_WAIT_S = 6.0
"""How long each round of the late readers' and the joiner's re-sync collects answers
(two rounds). After a node stops, a member on a live node can lose the acknowledgement
of a message routed to the stopped node's session queues (docs/cluster.md); it stays
silent until its publish watchdog replaces the session, up to ~10 s (5 s publish timeout,
then a flush that waits as long), and a re-sync asked meanwhile made it re-publish into
the same loss. A window shorter than that missed the member (1 s rounds: one run in
four, in CI and here); two rounds of 6 s outlast it, and its answers arrive with the
outbox the new session sends. The one-shot readers (``monitor --once``, ``tree``) listen
as long (``--wait`` of two rounds, stretched by the machine's slowness): 6 s missed such
a member once in CI, and 12 s once beside two CPU hogs and a benchmark."""


class LateJoiner(Agent):
    """An observer-like agent that joins mid-mission on a chosen node and keeps what
    it hears of the robots' snapshots and the mission tree."""

    kind = "joiner"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.snapshots: dict[str, dict] = {}
        self.tree: dict | None = None

    async def setup(self) -> None:
        self.on_agents("snapshot", self._on_snapshot)
        self.on_team("mission", self._on_tree, kind="mission.tree")

    async def _on_snapshot(self, env, topic) -> None:
        self.snapshots[env.sender] = env.body

    async def _on_tree(self, env, topic) -> None:
        self.tree = env.body


async def join_late(cluster: RabbitCluster, node: int, team: str, mission: str) -> LateJoiner:
    urls = cluster.urls
    joiner = LateJoiner(
        "late-joiner",
        team=team,
        endpoint=parse_endpoint(urls),
        runtime=RuntimeSettings(cluster=True, resync_wait_s=READER_WAIT_S),
        mission_id=mission,
    )
    joiner.connection.nodes.index = node  # pinned to `node` for its first connect
    joiner.connection.endpoint = joiner.connection.nodes.current
    async with joiner:
        await joiner.wait_synced(60)
    return joiner


MEMBER_CHANNELS = ("connection", "factsheet", "heartbeat")


_ON_CUE = (
    "import importlib, json, sys\n"
    "from teamtree.agents.cli.app import EXTRA_COMMANDS, main\n"
    "for module in EXTRA_COMMANDS: importlib.import_module(module)\n"  # loaded before the cue
    "sys.exit(main(json.loads(sys.stdin.readline())))\n"
)
"""A teamtree CLI that loads, then waits for its arguments (a JSON list) on stdin."""


def load_readers(cwd: Path) -> list[subprocess.Popen]:
    """Three CLI processes for ``start_readers``, loaded ahead of their cue: a Python
    start and the CLI's imports took ~15 s beside two CPU hogs and a cluster, and a
    tea party's last 16 s went by before the readers were in (they found no member)."""
    return [
        subprocess.Popen(
            [sys.executable, "-c", _ON_CUE],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]


def start_readers(
    readers: list[subprocess.Popen], config: Path, url: str, team: str, mission: str, cwd: Path
) -> None:
    """Cue the `readers` (``load_readers``): ``monitor --once --json``, ``tree
    --broker`` and ``record`` on one node, mid-mission."""
    common = ["--broker", url, "--team", team, "--mission", mission]
    # a member silent for ~10 s after the stop is heard; on a busy machine its silence
    # lasts longer, and a longer window only gives every member more time to be heard
    window = scaled(2 * READER_WAIT_S)
    wait = f"{window:.1f}"
    record = ("record", "-o", str(cwd / "late.jsonl"), "--duration", f"{window + 2:.1f}")
    commands = (
        ("monitor", "--once", "--json", "--wait", wait),
        ("tree", str(config), "--wait", wait),
        record,
    )
    for reader, command in zip(readers, commands, strict=True):
        assert reader.stdin is not None
        reader.stdin.write(json.dumps([*command, *common]) + "\n")
        reader.stdin.flush()


def collect(reader: subprocess.Popen) -> str:
    stdout, stderr = reader.communicate(timeout=scaled(2 * READER_WAIT_S) + scaled(60))
    assert reader.returncode == 0, f"{reader.args}: {stderr[-2000:]}"
    return stdout


def check_readers(
    monitor: str, tree: str, record: Path, agents: list[str], joiner: str, left: dict[str, int]
) -> None:
    """Mid-mission, the monitor knew every member (kind and presence; the late
    ``joiner``, a member by design, may have come in while it looked; a member that
    had left (`left`: when the run's recorder heard its OFFLINE) before the monitor
    printed may show the Will that followed its goodbye, CONNECTION_BROKEN, where the
    goodbye did not reach the monitor's node in time) and the mission
    tree (published once, when the mission started: known only from kept state),
    ``tree`` read both robots' snapshots, and ``record`` wrote the re-synced state (no
    retained message reaches it here) as kept, once, and every member's factsheet."""
    snap = json.loads(monitor)
    for agent in agents:
        row = snap["agents"].get(agent)
        known = ["ONLINE", "OFFLINE"]
        if left.get(agent, snap["time_ms"]) < snap["time_ms"]:
            known.append("CONNECTION_BROKEN")
        assert row is not None and row["presence"] in known, (agent, row, left)
        assert row["kind"], (agent, row)
    assert snap["mission"]["kind"] == "tasktree" and snap["mission"]["leaves"] == 7, snap
    assert not set(snap["agents"]) - set(agents) - {joiner}, snap["agents"].keys()
    assert "(2 robot snapshot(s) read from" in tree, tree
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    keys = [(r["topic"], tuple(r["hlc"]), r["sender"]) for r in lines]
    assert len(keys) == len(set(keys)), "a re-published message was recorded twice"
    kept = {(r["kind"], r["sender"]) for r in lines if r["retained"]}
    assert any(kind == "mission.tree" for kind, _ in kept), kept
    # every member's factsheet: kept, or live from a member that came back (a new
    # session) while the record ran; its re-published copy is then the same message
    # and recorded once
    heard = {(r["kind"], r["sender"]) for r in lines}
    assert {("factsheet", a) for a in agents} <= heard, heard


def test_tea_party_survives_a_node_stop_and_a_late_joiner_sees_the_team(
    rabbit_cluster: RabbitCluster, tmp_path: Path
) -> None:
    cluster = rabbit_cluster
    ensure_up(cluster)
    agents = ["pr2", "baxter", "world", "recorder", "pr2-driver", "baxter-driver"]
    team = pick_team(
        cluster,
        f"tpc{int(time.time()) % 100000}-",
        agents,
        lambda n: n["recorder"] != n["pr2"] and n["baxter"] != n["pr2"],
    )
    stop = node_of(cluster, team, "pr2")
    config = tmp_path / "tea.toml"
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    text = text.replace('name = "tea-party-s1"', f'name = "{team}"')
    # the world at real time (not 8x): work remains while the readers and the joiner
    # wait out a member's silence (READER_WAIT_S). Not slower: a behaviour that long
    # met a holder's silence of its own, its lease renewals (QoS 0) dropped meanwhile,
    # and the body stopped (lease_expired), as leases are meant to
    config.write_text(text.replace("time_factor = 8.0", "time_factor = 1.0"))
    readers = load_readers(tmp_path)
    proc, out = run_team(config, cluster, tmp_path)
    try:
        wait_for_line(out, r"^pr2 .*behaviour\.started", proc, 180)
        cluster.stop_node(stop)
        # pr2 is back on another node
        wait_for_line(out, r"^pr2 .*agent\.online.*connects=2", proc, 60)
        mission = json.loads((tmp_path / ".teamtree" / "current.json").read_text())["mission"]
        live = [i for i in range(len(cluster.nodes)) if i != stop]
        baxter_node = node_of(cluster, team, "baxter")
        joiner_node = next((i for i in live if i != baxter_node), live[0])
        # both robots working again (a member whose node's acknowledgements were lost
        # with the stopped node is silent for ~10 s, then reconnects): then the readers
        for robot in ("pr2", "baxter"):
            wait_after(
                out, r"^pr2 .*agent\.online.*connects=2", rf"^{robot} .*behaviour\.started", proc
            )
        start_readers(readers, config, cluster.urls[joiner_node], team, mission, tmp_path)
        joiner = asyncio.run(join_late(cluster, joiner_node, team, mission))
        monitor, tree, _ = (collect(reader) for reader in readers)
        text = finish(proc, out)
    finally:
        for process in (proc, *readers):
            if process.poll() is None:
                process.terminate()
                process.wait(30)
        cluster.start_node(stop)  # back in the background; the next test waits for it
    seen = onlines(text)
    assert {url for _, url, _ in seen} == set(cluster.urls), f"not spread: {seen}"
    moved = [(a, url) for a, url, n in seen if a == "pr2" and n == 2]
    assert moved and moved[0][1] != cluster.urls[stop], moved
    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / "tea_party_s1.jsonl").read_text().splitlines()
    ]
    # every node done once, never by two bodies (the world counts double holds), in
    # order; and the world ends with every needed object at its goal
    check_tea_party(without_failed_attempts(credit_confirmed_attempts(records)))
    check_world_finished(records)
    # the late joiner, on another node than baxter's snapshots, saw the whole team
    view = joiner.team_view
    for agent in agents:
        member = view.get(agent)
        # ONLINE, or OFFLINE when the mission ended (and its members left) while the
        # joiner synced: either way the joiner knows the member and how it stands
        known = (Presence.ONLINE, Presence.OFFLINE)
        assert member is not None and member.presence in known, (agent, member)
        assert member.factsheet.get("kind"), (agent, member)
    assert {"pr2", "baxter"} <= set(joiner.snapshots), joiner.snapshots.keys()
    assert joiner.tree is not None and joiner.tree.get("kind") == "tasktree"
    assert joiner.resync.last_heard >= set(agents), joiner.resync.last_heard
    # the CLI readers on that node (one URL: no cluster setting) saw the team through
    # their own re-sync, and never showed up as members
    left = {}
    for r in records:
        if r["kind"] == "presence" and r["body"].get("state") == "OFFLINE":
            left.setdefault(r["sender"], r["ts"])
    check_readers(monitor, tree, tmp_path / "late.jsonl", agents, "late-joiner", left)
    observers = {a for a in view.members if a not in agents}
    assert observers <= {"late-joiner"}, f"observers seen as members: {observers}"
    members = {r["sender"] for r in records if r["topic"].split("/")[4] in MEMBER_CHANNELS}
    others = members - set(agents) - {"late-joiner"}  # the joiner is a member, by design
    assert not others, f"presence from readers: {others}"


def test_kitting_with_two_replicas_loses_no_request_when_a_replicas_node_stops(
    rabbit_cluster: RabbitCluster, tmp_path: Path
) -> None:
    cluster = rabbit_cluster
    ensure_up(cluster)
    agents = ["cobot", "human", "allocator-1", "allocator-2"]
    team = pick_team(
        cluster,
        f"krc{int(time.time()) % 100000}-",
        agents,
        lambda n: len({n["cobot"], n["allocator-1"], n["allocator-2"]}) == 3,
    )
    stop = node_of(cluster, team, "allocator-1")
    config = tmp_path / "kitting.toml"
    text = (REPO / "configs" / "kitting_replicas.toml").read_text()
    config.write_text(text.replace('name = "kitting-replicas"', f'name = "{team}"'))
    proc, out = run_team(config, cluster, tmp_path)
    try:
        wait_for_line(out, r"^allocator-1 .*allocation\.answered", proc, 180)
        cluster.stop_node(stop)
        text = finish(proc, out)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
        cluster.start_node(stop)
    assert "SUCCEEDED" in text, text[-4000:]
    seen = onlines(text)
    assert {url for _, url, _ in seen} == set(cluster.urls), f"not spread: {seen}"
    assert any(a == "allocator-1" and n >= 2 for a, _, n in seen), "allocator-1 did not move"
    answered = re.findall(r"^(allocator-\d) .*allocation\.answered", text, re.M)
    assert {"allocator-1", "allocator-2"} <= set(answered), "both replicas must serve"
    assert "allocation.refused" not in text and "RequestTimeoutError" not in text
    assert "agent.failed" not in text, text[-4000:]
