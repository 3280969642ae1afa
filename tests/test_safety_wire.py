"""Bad-typed and stranger peer-rule bodies (issue 14): every wrong type is a clean drop,
never a traceback; only the roster speaks; a flood logs one line per sender and reason
per interval; de-duplication cannot be poisoned by another sender's header ids."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.agents.treeprotocol.peer_wire import (
    claim_from_wire,
    reply_from_wire,
    snapshot_from_wire,
    transition_from_wire,
)
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build
from teamtree.planners.tasktree import TaskController, parse_tree

TEAM = "t1"
TREE = parse_tree("AND(PLACE(object=cup), PLACE(object=tea))")

VALID: dict[str, dict[str, Any]] = {
    "node.claim": {
        "claim_id": "baxter@1.0#1",
        "node": "root/0",
        "claimant": "baxter",
        "stamp": [1, 0, "baxter"],
        "potential": 0.5,
        "round": 0,
    },
    "node.claim_reply": {
        "claim_id": "pr2@1.0#1",
        "node": "root/0",
        "claimant": "pr2",
        "replier": "baxter",
        "round": 0,
        "reports": [
            {"node": "root/0", "state": "working", "agent": "baxter", "stamp": [1, 0, "baxter"]}
        ],
    },
    "node.transition": {"node": "root/0", "agent": "baxter", "status": "done", "stamp": [1, 0, "b"]},
    "node.snapshot": {"agent": "baxter", "stamp": [1, 0, "baxter"], "done": ["root/0"], "working": None},
}  # fmt: skip
DECODERS = {
    "node.claim": claim_from_wire,
    "node.claim_reply": reply_from_wire,
    "node.transition": transition_from_wire,
    "node.snapshot": snapshot_from_wire,
}
CHANNELS = {
    "node.claim": (None, "claims", None),
    "node.claim_reply": ("baxter", "claim_reply", "pr2"),
    "node.transition": ("baxter", "state", None),
    "node.snapshot": ("baxter", "snapshot", None),
}

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    """A valid body of some kind with one field (or a report's field) of a random type,
    or a random value altogether."""
    kind = draw(st.sampled_from(sorted(VALID)))
    body: Any = {**VALID[kind]}
    how = draw(st.integers(0, 3))
    if how == 0:
        return kind, draw(values)
    key = draw(st.sampled_from(sorted(body)))
    if how == 3 and kind == "node.claim_reply":
        report = {**body["reports"][0]}
        report[draw(st.sampled_from(sorted(report)))] = draw(values)
        body["reports"] = [report] if draw(st.booleans()) else draw(values)
    elif how == 2:
        del body[key]
    else:
        body[key] = draw(values)
    return kind, body


@given(mutated())
@settings(max_examples=500, deadline=None)
def test_decoders_raise_only_value_errors(case: tuple[str, Any]) -> None:
    kind, body = case
    with contextlib.suppress(ValueError):
        DECODERS[kind](body)


def make_robot(roster: list[str] | None = ("pr2", "baxter")) -> RobotAgent:  # type: ignore[assignment]
    robot = RobotAgent(
        "pr2",
        team=TEAM,
        endpoint=Endpoint("127.0.0.1", 1),
        tree=TREE,
        params=RobotParams(profile="pr2", driver="pr2-driver"),
        roster=None if roster is None else list(roster),
    )
    return robot


async def _started(robot: RobotAgent) -> RobotAgent:
    await robot.setup()
    robot.controller = TaskController(TREE, "pr2", online_peers={"baxter"})
    return robot


def _message(
    kind: str, body: Any, sender: str = "baxter", hid: int = 1, sid: str = "s1"
) -> Incoming:
    agent, channel, recipient = CHANNELS[kind]
    topic = build(TEAM, sender if agent else None, channel, recipient)
    env = Envelope(kind, sender, hid, 1, HlcStamp(1, 0, sender), body, sid=sid)
    return Incoming(topic, encode(env), False, 1)


@given(st.lists(mutated(), min_size=1, max_size=30))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_bad_typed_bodies_never_raise_and_log_once_per_sender_and_reason(
    cases: list[tuple[str, Any]],
) -> None:
    async def run() -> tuple[RobotAgent, list[dict]]:
        robot = await _started(make_robot())
        with structlog.testing.capture_logs() as logs:
            for hid, (kind, body) in enumerate(cases, 1):
                await robot.receiver.receive(_message(kind, body, hid=hid))
        return robot, logs

    robot, logs = asyncio.run(run())
    assert robot.stats["handler_errors"] == 0
    assert not [r for r in logs if r.get("log_level") == "error"]
    drops = [r for r in logs if r["event"] == "message.dropped"]
    assert len(drops) <= len({(r["sender"], r["reason"]) for r in drops})


def test_a_flood_of_bad_bodies_logs_one_line() -> None:
    async def run() -> tuple[RobotAgent, list[dict]]:
        robot = await _started(make_robot())
        bad = {**VALID["node.claim_reply"], "round": "two"}
        with structlog.testing.capture_logs() as logs:
            for hid in range(1, 2001):
                await robot.receiver.receive(_message("node.claim_reply", bad, hid=hid))
        return robot, logs

    robot, logs = asyncio.run(run())
    assert robot.stats["dropped.malformed"] == 2000
    assert len([r for r in logs if r["event"] == "message.dropped"]) == 1


def test_strangers_and_observers_do_not_speak_for_the_tree() -> None:
    """A made-up id's done transitions and snapshots (issue 14 attack 3) change nothing."""

    async def run() -> RobotAgent:
        robot = await _started(make_robot())
        for i, sender in enumerate(["mallory", "recorder"]):
            for kind in ("node.transition", "node.snapshot"):
                body = {**VALID[kind], "agent": sender}
                body["done"] = ["root/0", "root/1"] if kind == "node.snapshot" else None
                if kind == "node.transition":
                    body = {
                        "node": "root/0",
                        "agent": sender,
                        "status": "done",
                        "stamp": [1, 0, sender],
                    }
                await robot.receiver.receive(_message(kind, body, sender=sender, hid=10 + i))
        return robot

    robot = asyncio.run(run())
    assert robot.controller is not None and robot.controller.done == set()
    assert robot.stats["dropped.not_member"] == 4

    # a member's done counts
    async def member() -> None:
        await robot.receiver.receive(_message("node.transition", VALID["node.transition"], hid=99))

    asyncio.run(member())
    assert robot.controller.done == {"root/0"}


def test_header_ids_of_another_sender_do_not_poison_deduplication() -> None:
    """Attack 5: messages on _/claims with predicted header ids from another sender (or
    another connection) must not make the real claims look like duplicates."""

    async def run() -> RobotAgent:
        robot = await _started(make_robot(roster=["pr2", "baxter", "mallory"]))
        for hid in range(1, 50):
            fake = {
                **VALID["node.claim"],
                "claimant": "mallory",
                "claim_id": f"m{hid}",
                "stamp": [1, 0, "mallory"],
            }
            await robot.receiver.receive(_message("node.claim", fake, sender="mallory", hid=hid))
        real = _message("node.claim", VALID["node.claim"], sender="baxter", hid=7, sid="real")
        await robot.receiver.receive(real)
        await robot.receiver.receive(real)  # a true duplicate is still dropped
        return robot

    robot = asyncio.run(run())
    assert robot.stats["duplicates"] == 1
    assert robot.stats["sent"] == 50  # a reply to each of mallory's 49 claims and to baxter's


def test_acl_gives_watcher_agents_no_voice() -> None:
    from teamtree.broker.acl import render_acl, team_users

    users = team_users("t1", ["pr2", "recorder"], env={}, watchers=["recorder"])
    acl = render_acl(users)
    assert "user pr2\ntopic write teamtree/v1/t1/pr2/#\ntopic write teamtree/v1/t1/_/sync/#" in acl
    recorder = next(u for u in users if u.username == "recorder")
    assert recorder.write == tuple(
        f"teamtree/v1/t1/recorder/{c}" for c in ("connection", "factsheet", "heartbeat")
    )
    assert recorder.read == ("teamtree/v1/t1/#",)


def test_a_robot_with_a_roster_hears_its_members_transitions_and_no_one_elses() -> None:
    """Transitions and snapshots are subscribed member by member: the world's state
    (77 kB at 500 objects) shares the ``state`` channel's name, and the broker must not
    send it to every robot to be decoded and dropped. A robot's own are left out too:
    it never reads them. Without a roster: the wildcard."""

    async def filters(roster: list[str] | None) -> set[str]:
        robot = make_robot(roster)  # type: ignore[arg-type]
        await robot.setup()
        await asyncio.sleep(0)  # the subscriptions are spawned
        return set(robot.connection._subscriptions)

    base = f"teamtree/v1/{TEAM}"
    with_roster = asyncio.run(filters(["pr2", "baxter", "alice"]))
    for member in ("baxter", "alice"):
        assert {f"{base}/{member}/state", f"{base}/{member}/snapshot"} <= with_roster
    assert f"{base}/pr2/state" not in with_roster and f"{base}/pr2/snapshot" not in with_roster
    assert f"{base}/+/state" not in with_roster and f"{base}/+/snapshot" not in with_roster
    assert f"{base}/world/state" not in with_roster
    without = asyncio.run(filters(None))
    assert {f"{base}/+/state", f"{base}/+/snapshot"} <= without


def test_a_robot_takes_superseded_state_at_qos_0_and_the_peer_rule_at_qos_1() -> None:
    """Peers' snapshots and potentials are state the sender's next message supersedes:
    subscribed at QoS 0 (no PUBACK for each of them; a retained snapshot comes again
    with every re-subscribe) and coalesced per sender while waiting to be handled.
    Claims, replies and transitions stay at QoS 1 and are never coalesced."""

    async def subscriptions() -> tuple[dict[str, int], set[str]]:
        robot = make_robot(["pr2", "baxter", "alice"])  # type: ignore[arg-type]
        await robot.setup()
        await asyncio.sleep(0)  # the subscriptions are spawned
        return dict(robot.connection._subscriptions), set(robot.routes.latest_topics)

    qos, latest = asyncio.run(subscriptions())
    base = f"teamtree/v1/{TEAM}"
    for member in ("baxter", "alice"):
        assert qos[f"{base}/{member}/snapshot"] == 0
        assert qos[f"{base}/{member}/potentials"] == 0
        assert qos[f"{base}/{member}/state"] == 1
        assert {f"{base}/{member}/snapshot", f"{base}/{member}/potentials"} <= latest
        assert f"{base}/{member}/state" not in latest
    assert f"{base}/pr2/potentials" not in qos  # its own: never read
    assert qos[f"{base}/_/claims"] == 1
    assert all(qos[f] == 1 for f in qos if "/claim" in f or "/state" in f)
