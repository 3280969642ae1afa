"""Seed 000 over the broker: robots share a task tree through the peer rule.

Every test runs the world, the drivers and the robots as separate processes against
mosquitto, and judges the run from what was published at the broker.
"""

from __future__ import annotations

import asyncio
import itertools
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.planners.tasktree import conflict_set, parse_tree
from tests.conftest import REPO, AgentProcs, eventually, run_recorded, scaled, write_config

pytestmark = pytest.mark.integration

LEAVES = {
    "root/0/0": "cup",
    "root/0/1/0": "sugar",
    "root/0/1/1": "tea_pot",
    "root/1/0": "sandwich",
    "root/1/1/0": "orange",
    "root/1/1/1": "apple",
    "root/1/2": "burger",
}


def check_tea_party(records: list[dict]) -> dict[str, list[dict]]:
    """Assert the multi-robot task's guarantees on a record; return working spans."""
    spans: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        if rec["kind"] != "node.transition":
            continue
        body = rec["body"]
        if body["status"] == "working":
            spans[body["node"]].append(
                {"agent": body["agent"], "start": rec["ts"], "end": None, "body": body}
            )
        elif body["status"] == "done":
            open_spans = [
                s for s in spans[body["node"]] if s["agent"] == body["agent"] and s["end"] is None
            ]
            assert open_spans, f"{body['agent']} finished {body['node']} it never started"
            open_spans[-1]["end"] = rec["ts"]
            # under the distance metric alone the grasp comes after the start: the done
            # transition carries it (GRASP_SCORE_DELAY_S in agents/tasktree/grasp_tracker.py)
            open_spans[-1]["grasp"] = body.get("grasp")
    done = {node for node, s in spans.items() if any(x["end"] is not None for x in s)}
    for node, node_spans in spans.items():
        assert len([s for s in node_spans if s["end"] is not None]) <= 1, (
            f"{node} done twice: {node_spans}"
        )
        live = sorted((s["start"], s["end"] or 1 << 62, s["agent"]) for s in node_spans)
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(live):
            assert start_b >= end_a, f"{a} and {b} worked on {node} at once"
    assert len({"root/1/1/0", "root/1/1/1"} & done) == 1, "exactly one OR child must be done"
    assert {"root/0/0", "root/0/1/0", "root/0/1/1", "root/1/0", "root/1/2"} <= done

    seen_done: dict[str, int] = {}  # leaf -> first snapshot listing it done
    for rec in records:
        if rec["kind"] == "node.snapshot":
            for leaf in rec["body"].get("done") or ():
                seen_done.setdefault(leaf, rec["ts"])

    def end(node: str) -> int:
        """When the leaf was done: its worker's ``done``, or earlier a robot whose
        driver saw the object at its goal (done means done: the world's word; with
        six robots one started the next leaf 14 ms before the worker's ``done``)."""
        worker = next(s["end"] for s in spans[node] if s["end"] is not None)
        return min(worker, seen_done.get(node, worker))

    def start(node: str) -> int:
        return min(s["start"] for s in spans[node])

    for first, later in [
        ("root/0/0", "root/0/1/0"),
        ("root/0/0", "root/0/1/1"),
        ("root/1/0", "root/1/2"),
    ]:
        assert end(first) <= start(later), (
            f"THEN order broken: {later} started before {first} was done"
        )
    or_child = next(iter({"root/1/1/0", "root/1/1/1"} & done))
    assert start("root/1/1/0" if or_child == "root/1/1/0" else "root/1/1/1") >= end("root/1/0")
    assert end(or_child) <= start("root/1/2")
    states = [r for r in records if r["kind"] == "world.state"]
    assert states and states[-1]["body"]["violations"] == 0, (
        "the world saw a double hold or a double place"
    )
    return spans


def latest_grasps(records: list[dict], agent: str, before_ts: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for rec in records:
        if rec["kind"] == "node.grasp_scores" and rec["sender"] == agent and rec["ts"] <= before_ts:
            scores = rec["body"]["grasp"]
    return scores


@pytest.mark.parametrize("metric", ["distance", "distance+grasp"])
def test_tea_party_scenario_1(metric: str, tmp_path: Path) -> None:
    config = REPO / "configs" / "tea_party_s1.toml"
    stdout, records = run_recorded(config, "tea_party_s1.jsonl", tmp_path, "--metric", metric)
    spans = check_tea_party(records)
    zero_grasp_runs = []
    for node, node_spans in spans.items():
        for span in node_spans:
            mine = span["body"]["grasp"]
            if mine is None and metric == "distance":  # scored after the start
                mine = span.get("grasp")
            assert mine is not None, f"no grasp score for {span}"
            other = "baxter" if span["agent"] == "pr2" else "pr2"
            theirs = latest_grasps(records, other, span["start"]).get(node, 0.0)
            if mine == 0.0:
                zero_grasp_runs.append((span["agent"], LEAVES[node], theirs))
    if metric == "distance+grasp":
        assert not [z for z in zero_grasp_runs if z[2] > 0], (
            f"executed with grasp 0 while the peer could: {zero_grasp_runs}"
        )
    else:  # scenario 1 puts the sandwich nearest the PR2, which cannot grasp it
        assert ("pr2", "sandwich") in [(a, n) for a, n, _ in zero_grasp_runs], zero_grasp_runs
    summary = [line for line in stdout.splitlines() if "summary.behaviour" in line]
    assert len(summary) == 6 and all("potential=" in line and "grasp=" in line for line in summary)


def test_tea_party_with_the_mesh_scorer(tmp_path: Path) -> None:
    """Both robots score grasps on object meshes under distance+grasp: the candidate
    builds (seconds each) run off their event loops, so leases and presence hold, the
    mission completes, and every start carries its grasp (none was claimed unscored)."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    assert text.count('kind = "robot"\n') == 2, "configs/tea_party_s1.toml changed"
    config = tmp_path / "tea_party_s1.toml"
    config.write_text(text.replace('kind = "robot"\n', 'kind = "robot"\ngrasp_scorer = "mesh"\n'))
    stdout, records = run_recorded(
        config, "tea_party_s1.jsonl", tmp_path, "--metric", "distance+grasp"
    )
    # each robot built its objects' candidates (before its claims or during them)
    built = {line.split("|")[0].strip() for line in stdout.splitlines() if "grasp.built" in line}
    assert built == {"pr2", "baxter"}, stdout[-3000:]
    spans = check_tea_party(records)
    grasps = [span["body"]["grasp"] for node_spans in spans.values() for span in node_spans]
    assert grasps and all(g is not None and g > 0 for g in grasps), spans


@pytest.mark.parametrize("declared", [True, False])
def test_tea_party_with_and_without_declared_interest(declared: bool, tmp_path: Path) -> None:
    """With declared interest (the default) both robots declare the leaves they may
    claim: the mission completes with the tea party's guarantees, and the claims went
    only to the peer whose declaration met them (addressed, none on the team channel).
    With ``declared_interest = false`` no robot declares and every claim goes to the
    team channel, as seed 000's rule has it."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    assert text.count('kind = "robot"\n') == 2, "configs/tea_party_s1.toml changed"
    config = tmp_path / "tea_party_s1.toml"
    key = f"declared_interest = {str(declared).lower()}"
    config.write_text(text.replace('kind = "robot"\n', f'kind = "robot"\n{key}\n'))
    _, records = run_recorded(config, "tea_party_s1.jsonl", tmp_path)
    check_tea_party(records)
    if not declared:
        assert not [r for r in records if r["kind"].startswith("node.interest")]
        team_claims = [r for r in records if r["kind"] == "node.claim" and "/_/" in r["topic"]]
        assert len(team_claims) >= 6, "every leaf claimed on the team channel"
        return
    declarations = defaultdict(list)
    for r in records:
        if r["kind"] == "node.interest":
            declarations[r["sender"]].append(r["body"])
    assert set(declarations) == {"pr2", "baxter"}, declarations.keys()
    acks = [r for r in records if r["kind"] == "node.interest_ack"]
    assert {(a["sender"], a["body"]["declarer"]) for a in acks} == {
        ("pr2", "baxter"),
        ("baxter", "pr2"),
    }
    tree = parse_tree(tomllib.loads(text)["mission"]["tree"])
    claims = [r for r in records if r["kind"] == "node.claim"]
    assert claims, "the two declarations overlap (4 leaves prefetched of 7): claims ask"
    assert all("/_/" not in r["topic"] for r in claims), "a claim on the team channel"
    for r in claims:  # a claim asks a peer whose declaration (by then) meets it
        peer = r["topic"].rsplit("/", 1)[-1]
        known = {x for d in declarations[peer] if d["stamp"][0] <= r["ts"] for x in d["leaves"]}
        assert known & conflict_set(tree, r["body"]["node"]), (r, declarations[peer])


EXTRA_ROBOTS = {  # id -> (profile, base x, side): two more of each beside the first two
    "pr2b": ("pr2", -0.45, -1), "pr2c": ("pr2", 0.45, -1),
    "baxterb": ("baxter", -0.45, 1), "baxterc": ("baxter", 0.45, 1),
}  # fmt: skip


def six_robot_party(text: str) -> str:
    """The tea party of scenario 1 with four more robots (and their drivers) around the
    table: six declaring robots."""
    for rid, (profile, x, side) in EXTRA_ROBOTS.items():
        text += f"""
[[agents]]
id = "{rid}"
kind = "robot"
profile = "{profile}"
driver = "{rid}-driver"
metric = "distance+grasp"
w_d = 0.01

[[agents]]
id = "{rid}-driver"
kind = "sim_driver"
role = "service"
robot = "{rid}"
"""
        world = f"""
[agents.robots.{rid}]
profile = "{profile}"
base = [{x}, {0.65 * side}, 0.0]
yaw = {-1.5707963 * side}
"""
        text = text.replace("\n[agents.objects.cup]", world + "\n[agents.objects.cup]", 1)
    return text


def test_six_declaring_robots_acknowledge_the_start_in_one_batch_each(tmp_path: Path) -> None:
    """Six robots declare their interest at once when the mission starts. Each one
    waits for every online peer's declaration and acknowledges them in one
    ``node.interest_acks`` to the team, not one ``node.interest_ack`` to each declarer:
    every declaration is acknowledged by each other robot (in one form or the other),
    far fewer acknowledgements go out than declarations x peers, and the mission
    completes with the tea party's guarantees."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    config = tmp_path / "tea_party_s1.toml"
    config.write_text(six_robot_party(text))
    robots = {"pr2", "baxter", *EXTRA_ROBOTS}
    _, records = run_recorded(config, "tea_party_s1.jsonl", tmp_path)
    check_tea_party(records)
    firsts: dict[str, tuple] = {}
    for r in records:
        if r["kind"] == "node.interest" and r["sender"] not in firsts:
            firsts[r["sender"]] = tuple(r["body"]["stamp"])
    assert set(firsts) == robots, firsts
    acked: set[tuple[str, str, tuple]] = set()  # (acknowledger, declarer, stamp)
    singles = [r for r in records if r["kind"] == "node.interest_ack"]
    batches = [r for r in records if r["kind"] == "node.interest_acks"]
    for r in singles:
        acked.add((r["sender"], r["body"]["declarer"], tuple(r["body"]["stamp"])))
    for r in batches:
        assert r["topic"].endswith(f"/{r['sender']}/interest_acks"), r["topic"]
        for e in r["body"]["acks"]:
            acked.add((r["sender"], e["declarer"], tuple(e["stamp"])))
    for declarer, stamp in firsts.items():
        # a later declaration acknowledged stands for the first (declarations only grow)
        by = {a for a, d, s in acked if d == declarer and s >= stamp}
        assert by == robots - {declarer}, (declarer, sorted(by))
    pairs = len({(a, d, s) for a, d, s in acked})
    print(f"acknowledged {pairs}: {len(singles)} single, {len(batches)} batched")
    assert batches, "no acknowledgements were batched"
    assert len(singles) + len(batches) < pairs, (len(singles), len(batches), pairs)


def test_tea_party_of_a_declaring_robot_and_one_that_does_not(tmp_path: Path) -> None:
    """A mixed team (a robot attached with its own settings): the PR2 declares its
    interest and the Baxter runs with ``declared_interest = false``. The Baxter
    acknowledges the PR2's declarations as a robot that may claim any leaf, so the PR2
    claims (asking the Baxter each time) and both work; the Baxter asks on the team
    channel. The mission completes with the tea party's guarantees."""
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    config = tmp_path / "tea_party_s1.toml"
    config.write_text(
        text.replace('id = "baxter"\n', 'id = "baxter"\ndeclared_interest = false\n', 1)
    )
    assert "declared_interest = false" in config.read_text(), "configs/tea_party_s1.toml changed"
    _, records = run_recorded(config, "tea_party_s1.jsonl", tmp_path)
    spans = check_tea_party(records)
    leaves = set(parse_tree(tomllib.loads(text)["mission"]["tree"]).leaves)
    assert {r["sender"] for r in records if r["kind"] == "node.interest"} == {"pr2"}
    acks = [r for r in records if r["kind"] == "node.interest_ack"]
    assert acks and {(a["sender"], a["body"]["declarer"]) for a in acks} == {("baxter", "pr2")}
    assert all(set(a["body"]["own"]["leaves"]) == leaves for a in acks)
    claims = [r for r in records if r["kind"] == "node.claim"]
    pr2_claims = [r for r in claims if r["sender"] == "pr2"]
    assert pr2_claims and all(r["topic"].endswith("/claims/baxter") for r in pr2_claims)
    assert any("/_/" in r["topic"] for r in claims if r["sender"] == "baxter")
    workers = {span["agent"] for node_spans in spans.values() for span in node_spans}
    assert workers == {"pr2", "baxter"}, workers


MOVE_TEAM = """
[[agents]]
id = "pr2"
kind = "robot"
profile = "pr2"
metric = "distance+grasp"

[[agents]]
id = "baxter"
kind = "robot"
profile = "baxter"
metric = "distance+grasp"

[[agents]]
id = "world"
kind = "world"
role = "service"
time_factor = 6.0

[agents.robots.pr2]
profile = "pr2"
base = [0.0, -0.65, 0.0]
yaw = 1.5707963

[agents.robots.baxter]
profile = "baxter"
base = [0.0, 0.65, 0.0]
yaw = -1.5707963

[agents.objects.sandwich]
shape = "box"
dims = [0.12, 0.12, 0.04]
position = [-0.10, 0.15, 0.77]
goal = [-0.32, -0.18, 0.78]

[agents.objects.burger]
shape = "cylinder"
dims = [0.045, 0.07]
position = [-0.30, 0.00, 0.785]
goal = [-0.28, -0.12, 0.795]

[agents.objects.cup]
shape = "cylinder"
dims = [0.04, 0.10]
position = [0.15, -0.15, 0.80]
goal = [0.12, 0.20, 0.81]

[[agents]]
id = "pr2-driver"
kind = "sim_driver"
role = "service"
robot = "pr2"

[[agents]]
id = "baxter-driver"
kind = "sim_driver"
role = "service"
robot = "baxter"
"""


def tree_config(tmp_path: Path, team: str, tree: str, agents: str) -> Path:
    path = write_config(tmp_path / "team.toml", team, agents, keepalive=1)
    text = path.read_text().replace('kind = "test"', f'kind = "tasktree"\ntree = "{tree}"')
    path.write_text(text)
    return path


class Watcher(Agent):
    """Records node transitions; optionally moves an object when a node starts."""

    def __init__(
        self, *args, move_on: tuple[str, list[tuple[str, list[float]]]] | None = None, **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.transitions: list[dict] = []
        self.move_on = move_on
        self.claim_stamps: dict[str, int] = {}
        """claim id -> the wall ms of its stamp (round 0, as first published)"""
        self.decisions: list[tuple[int, dict]] = []
        """(event timestamp, body) of every ``node.claim_decided``"""

    async def setup(self) -> None:
        self.on_agents("state", self._on_state, kind="node.transition")
        self.on_any(self._on_claim)  # on the team channel, or to each peer it asks
        self.on_agents("events", self._on_decided, kind="node.claim_decided")

    async def _on_claim(self, env, topic) -> None:
        if env.kind == "node.claim":
            self.claim_stamps.setdefault(env.body["claim_id"], env.body["stamp"][0])

    async def _on_decided(self, env, topic) -> None:
        self.decisions.append((env.ts, env.body))

    async def _on_state(self, env, topic) -> None:
        self.transitions.append(env.body)
        if self.move_on and env.body["status"] == "working" and env.body["node"] == self.move_on[0]:
            _, moves = self.move_on
            self.move_on = None
            for obj, position in moves:
                await self.publish(
                    "world", "world.move_object", {"object": obj, "position": position}, team=True
                )

    def workers(self, node: str) -> list[str]:
        return [
            t["agent"] for t in self.transitions if t["node"] == node and t["status"] == "working"
        ]

    def done(self, node: str) -> list[str]:
        return [t["agent"] for t in self.transitions if t["node"] == node and t["status"] == "done"]


@pytest.mark.parametrize("moved", [False, True])
async def test_moving_objects_changes_the_next_allocation(
    moved, mosquitto, team, tmp_path, agent_procs
) -> None:
    """THEN(sandwich, AND(cup, burger)): only the Baxter can grasp the sandwich and ends
    at the plate, by the burger, while the cup lies by the PR2's gripper, so each takes
    the one nearest. Swapped while the sandwich is placed, each takes the other."""
    config = tree_config(tmp_path, team, "THEN(sandwich, AND(cup, burger))", MOVE_TEAM)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    swap = [("burger", [0.22, -0.20, 0.785]), ("cup", [-0.28, 0.00, 0.80])]
    watcher = Watcher(
        "watcher", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2),
        move_on=("root/0", swap) if moved else None,
    )  # fmt: skip
    async with asyncio.timeout(scaled(90)), watcher:
        await watcher.wait_connected(10)
        for agent_id in ("world", "pr2-driver", "baxter-driver", "pr2", "baxter"):
            procs.start(agent_id)
        await eventually(
            lambda: watcher.done("root/1/0") and watcher.done("root/1/1"),
            60,
            what="cup and burger placed",
        )
    assert watcher.workers("root/0") == ["baxter"], watcher.transitions
    # each decision says how long its claim took, by the claimant's clock: more than
    # nothing, and within the whole-ms stamps of the claim and the decision's event;
    # a claim no peer's declared interest met was decided unpublished, with no figure
    assert watcher.decisions
    for ts, body in watcher.decisions:
        elapsed, stamp = body.get("elapsed_ms"), watcher.claim_stamps.get(body["claim_id"])
        assert (elapsed is None) == (stamp is None), (body, stamp)
        if elapsed is not None:
            assert isinstance(elapsed, float) and 0 < elapsed < ts - stamp + 1, (body, ts, stamp)
    assert any(body.get("elapsed_ms") for _ts, body in watcher.decisions), "no claim asked"
    cup, burger = watcher.workers("root/1/0"), watcher.workers("root/1/1")
    assert (cup, burger) == ((["baxter"], ["pr2"]) if moved else (["pr2"], ["baxter"])), (
        watcher.transitions
    )


KILL_TEAM = MOVE_TEAM.replace(
    """[agents.objects.sandwich]
shape = "box"
dims = [0.12, 0.12, 0.04]
position = [-0.10, 0.15, 0.77]
goal = [-0.32, -0.18, 0.78]
""",
    """[agents.objects.sandwich]
shape = "box"
dims = [0.12, 0.12, 0.04]
position = [-0.10, 0.15, 0.77]
goal = [-0.32, -0.18, 0.78]

[agents.objects.sugar]
shape = "box"
dims = [0.06, 0.06, 0.08]
position = [0.05, 0.10, 0.79]
goal = [-0.10, 0.25, 0.80]
""",
).replace('metric = "distance+grasp"', 'metric = "distance"')


async def test_a_robot_killed_while_working_hands_its_node_over(
    mosquitto, team, tmp_path, agent_procs
) -> None:
    config = tree_config(tmp_path, team, "AND(cup, sugar, sandwich, burger)", KILL_TEAM)
    procs = AgentProcs(config, mosquitto.url, team, tmp_path)
    agent_procs.append(procs)
    watcher = Watcher(
        "watcher", team=team, endpoint=mosquitto.endpoint, runtime=RuntimeSettings(keepalive_s=2)
    )
    async with asyncio.timeout(scaled(120)), watcher:
        await watcher.wait_connected(10)
        for agent_id in ("world", "pr2-driver", "baxter-driver", "pr2", "baxter"):
            procs.start(agent_id)
        first = await eventually(
            lambda: next((t["node"] for t in watcher.transitions if t["agent"] == "pr2" and t["status"] == "working"), None),
            60, what="the PR2 to start a behaviour",
        )  # fmt: skip
        procs.kill("pr2")
        await eventually(lambda: watcher.done(first), 60, what=f"{first} completed by the Baxter")
        await eventually(
            lambda: procs.procs["baxter"].poll() is not None,
            60,
            what="the Baxter to finish the mission",
        )
        await asyncio.sleep(0.5)
    assert procs.procs["baxter"].returncode == 0, procs.log("baxter")[-3000:]
    assert watcher.done(first) == ["baxter"], watcher.transitions
    for node in ("root/0", "root/1", "root/2", "root/3"):
        assert len(watcher.done(node)) == 1, (node, watcher.transitions)
