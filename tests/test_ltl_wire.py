"""The LTL bodies between planner and robots are declared types (``ltl_wire``): each
body as the agents built it by hand decodes to its Struct and encodes back to the same
map and the same msgpack bytes; any other body decodes or raises LtlWireError naming
the field (never another exception); and a planner or robot drops a malformed body
with the runtime's drop warning and goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents import load_config
from teamtree.agents.ltl.ltl_wire import (
    BODIES,
    DisturbWire,
    DoneWire,
    LtlWireError,
    MapWire,
    ReplanWire,
    StepWire,
    SyncReplyWire,
    VerdictWire,
    decode,
    to_wire,
)
from teamtree.agents.ltl.planner import LtlPlannerAgent
from teamtree.agents.ltl.robot import LtlRobotAgent
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build
from teamtree.planners.ltl import TSState
from tests.conftest import REPO
from tests.test_wire import bodies
from tests.wire_strategies import WIRE_INTS

PLAN = {
    "robot": "DR",
    "states": [["r1", "walk"], ["r2", "walk"]],
    "actions": ["goto_r2"],
    "weights": [2.5],
    "automaton_states": [0, 1],
    "waits_for": [],
    "cost": 2.5,
    "digest": "0123456789abcdef",
}

#: (kind, a body exactly as the agents built it by hand before the types)
SAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("ltl.plan", {"run": "s1", "epoch": 1, "seq": 0, "strategy": "offline", "dropped": ["A1"],
                  "plan": PLAN}),
    ("ltl.plan_received", {"run": "s1", "epoch": 1, "seq": 0, "digest": "0123456789abcdef",
                           "sent_digest": "0123456789abcdef", "plan": PLAN}),
    ("ltl.plan_received", {"run": "s1", "epoch": 0, "seq": 2, "digest": "ab", "sent_digest": None,
                           "plan": PLAN}),
    ("ltl.step", {"run": "s1", "epoch": 0, "seq": 1, "index": 3, "action": "goto_r2",
                  "state": ["r2", "walk"]}),
    ("ltl.done", {"run": "s1", "epoch": 1, "seq": 0, "state": ["r2", "walk"],
                  "segments": {"0": [["r1", "walk"], ["r2", "walk"]], "1": [["r2", "walk"]]}}),
    ("ltl.replan", {"run": "s1", "strategy": "R2", "epoch": 0, "seq": 0}),
    ("ltl.replan", {"run": "s1", "strategy": "R3", "epoch": 0, "seq": 1,
                    "executed": [["r1", "walk"], ["r1", "standby"]]}),
    ("ltl.replan", {"run": "s1", "strategy": "R4", "epoch": 2, "seq": 0,
                    "executed": [["r1", "walk"]], "edges": [["r1", "r2"]]}),
    ("ltl.replan", {"run": "s1", "strategy": "R4", "epoch": 2, "seq": 0,
                    "executed": [["r1", "walk"]], "edges": [["r1", "r2"], ["r2", "r3"]],
                    "private": [["r2", "r3"]]}),
    ("ltl.replan_result", {"outcome": "error", "detail": "no mission running"}),
    ("ltl.replan_result", {"outcome": "stale", "epoch": 1, "seq": 2}),
    ("ltl.replan_result", {"outcome": "local", "epoch": 1, "seq": 3, "took_ms": 1.25}),
    ("ltl.replan_result", {"outcome": "global", "epoch": 2, "seq": 0, "took_ms": 40.5}),
    ("ltl.sync", {"run": "s1", "epoch": 3}),
    ("ltl.sync_reply", {"segment": [["r1", "walk"], ["r2", "walk"]], "state": ["r2", "walk"],
                        "failed": False}),
    ("ltl.map", {"run": "s1", "blocked": [["r1", "r2"], ["r3", "r4"]]}),
    ("ltl.map", {"run": "s1", "blocked": []}),
    ("ltl.disturb", {"kind": "fall"}),
    ("ltl.disturb", {"kind": "state_change", "mode": "standby", "region": "r3"}),
    ("ltl.disturb", {"kind": "blocked_edge", "edge": ["r1", "r2"], "scope": "robot"}),
    ("ltl.disturb_ack", {"accepted": True, "detail": "edge r1-r2 blocked; R4 follows"}),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "body"), SAMPLES, ids=[f"{k}-{i}" for i, (k, _) in
                                                         enumerate(SAMPLES)])  # fmt: skip
def test_each_body_round_trips_to_the_same_map_and_bytes(kind: str, body: dict) -> None:
    msg = decode(body, BODIES[kind])
    assert to_wire(msg) == body
    assert list(to_wire(msg)) == list(body)  # the same key order
    assert msgspec.msgpack.encode(msg) == msgpack.packb(body)
    assert msgpack.packb(to_wire(msg)) == msgpack.packb(body)


def test_every_kind_has_a_sample() -> None:
    assert {k for k, _ in SAMPLES} == set(BODIES) - {"ltl.verdict"}


def test_structs_built_from_planner_values_encode_as_before() -> None:
    """The senders build Structs from TSState tuples; the wire has lists, as before."""
    a, b = TSState("r1", "walk"), TSState("r2", "walk")
    assert to_wire(StepWire("s1", 0, 1, 3, "goto_r2", b)) == dict(SAMPLES[3][1])
    done = DoneWire("s1", 1, 0, b, {"0": [a, b], "1": [b]})
    assert to_wire(done) == SAMPLES[4][1]
    replan = ReplanWire("s1", "R4", 2, 0, executed=[a], edges=[("r1", "r2")])
    assert to_wire(replan) == SAMPLES[7][1]
    assert to_wire(ReplanWire("s1", "R4", 0, 0, executed=[], edges=[]))["edges"] == []
    assert to_wire(SyncReplyWire([a, b], b, False)) == SAMPLES[14][1]
    assert to_wire(MapWire("s1", sorted({("r3", "r4"), ("r1", "r2")}))) == SAMPLES[15][1]
    assert to_wire(DisturbWire("fall")) == {"kind": "fall"}


def test_the_verdict_is_read_through_its_common_fields() -> None:
    satisfied = {
        "run": "s1", "satisfied": True, "impossible": False, "reason": "accepted",
        "arrangement": [["DR", 0]], "remaining": 0, "epochs": 1, "replans": [],
        "segments": {"DR": [[["r1", "walk"]]]},
    }  # fmt: skip
    impossible = {
        "run": "s1", "satisfied": False, "impossible": True, "reason": "no robot left",
        "failed": ["DR"], "replans": [{"strategy": "R2", "robot": "DR", "scope": "global"}],
    }  # fmt: skip
    assert decode(satisfied, VerdictWire) == VerdictWire("s1", True, False, "accepted")
    assert decode(impossible, VerdictWire).impossible


@pytest.mark.parametrize(
    ("kind", "body", "path"),
    [
        ("ltl.step", {**SAMPLES[3][1], "epoch": "1"}, r"\$\.epoch"),
        ("ltl.step", {**SAMPLES[3][1], "state": ["r2"]}, r"\$\.state"),
        ("ltl.done", {**SAMPLES[4][1], "segments": {"0": [["r1", 5]]}}, r"\$\.segments\[\.\.\.\]"),
        ("ltl.done", {**SAMPLES[4][1], "segments": {"x": []}}, r"\$\.segments"),
        ("ltl.replan", {**SAMPLES[7][1], "edges": [["r1"]]}, r"\$\.edges\[0\]"),
        ("ltl.replan_result", {"outcome": "local", "seq": "3"}, r"\$\.seq"),
        ("ltl.sync_reply", {**SAMPLES[14][1], "failed": "no"}, r"\$\.failed"),
        ("ltl.map", {"run": "s1", "blocked": [["r1", 2]]}, r"\$\.blocked\[0\]\[1\]"),
        ("ltl.disturb", {"kind": "blocked_edge", "edge": [1, 2]}, r"\$\.edge\[0\]"),
        ("ltl.verdict", {"run": "s1", "satisfied": 1, "impossible": False, "reason": ""},
         r"\$\.satisfied"),
        ("ltl.plan", {**SAMPLES[0][1], "dropped": "A1"}, r"\$\.dropped"),
    ],
)  # fmt: skip
def test_errors_name_the_kind_and_the_field(kind: str, body: dict, path: str) -> None:
    with pytest.raises(LtlWireError, match=rf"^bad {kind} body: .*{path}"):
        decode(body, BODIES[kind])


def test_a_missing_field_is_named() -> None:
    body = {k: v for k, v in SAMPLES[3][1].items() if k != "epoch"}
    with pytest.raises(LtlWireError, match="missing required field `epoch`"):
        decode(body, StepWire)


scalars = st.none() | st.booleans() | WIRE_INTS | st.floats(allow_nan=False) | st.text(max_size=4)
values = st.recursive(scalars, lambda v: st.lists(v, max_size=3) | st.dictionaries(
    st.text(max_size=3), v, max_size=2), max_leaves=6)  # fmt: skip


def _mutations(sample: tuple[str, dict]) -> st.SearchStrategy:
    """The sample with up to four keys (mostly its own) set to any value."""
    keys = st.sampled_from(sorted(sample[1])) | st.text(max_size=4)
    return st.tuples(st.just(sample), st.dictionaries(keys, values, max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SAMPLES).flatmap(_mutations))
def test_any_mutated_body_decodes_or_raises_ltl_wire_error(
    mutation: tuple[tuple[str, dict], dict[str, Any]],
) -> None:
    (kind, body), changes = mutation
    try:
        msg = decode({**body, **changes}, BODIES[kind])
    except LtlWireError as exc:
        assert str(exc).startswith(f"bad {kind} body: ")
        return
    assert decode(to_wire(msg), BODIES[kind]) == msg


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(BODIES)), bodies)
def test_any_body_decodes_or_raises_ltl_wire_error(kind: str, body: Any) -> None:
    try:
        decode(body, BODIES[kind])
    except LtlWireError as exc:
        assert str(exc).startswith(f"bad {kind} body: ")


# -- receivers ---------------------------------------------------------------------------


def _incoming(
    sender: str, channel: str, kind: str, body: Any, hid: int, team: bool = False
) -> Incoming:
    """A message as the broker delivers it (``team``: on ``_/<channel>``)."""
    env = Envelope(kind, sender, hid, 1, HlcStamp(1, 0, sender), body)
    return Incoming(build("t1", None if team else sender, channel), encode(env), False, 0)


def _config():
    return load_config(REPO / "configs" / "hospital_study1.toml")


def test_the_planner_drops_a_malformed_step_and_done_and_takes_the_next() -> None:
    config = _config()

    async def run() -> LtlPlannerAgent:
        params = LtlPlannerAgent.params_from_config(config.agent("planner"), config)
        planner = LtlPlannerAgent("planner", team="t1", endpoint=Endpoint("127.0.0.1", 1),
                                  **params)  # fmt: skip
        await planner.setup()
        run = planner.session
        step = {"run": run, "epoch": 0, "seq": 0, "index": 1, "action": "goto_r2",
                "state": ["r2", "walk"]}  # fmt: skip
        await planner.receiver.receive(
            _incoming("DR", "ltl.trace", "ltl.step", {**step, "epoch": "0"}, 1)
        )
        await planner.receiver.receive(_incoming("DR", "ltl.status", "ltl.done",
                                         {"run": run, "epoch": 0}, 2))  # fmt: skip
        assert planner.stream == {} and planner.done == {}
        await planner.receiver.receive(_incoming("DR", "ltl.trace", "ltl.step", step, 3))
        return planner

    with structlog.testing.capture_logs() as logs:
        planner = asyncio.run(run())
    drops = [e for e in logs if e["event"] == "message.dropped"]
    assert [d["reason"] for d in drops] == ["malformed"], drops  # the 2nd is folded in
    assert "$.epoch" in drops[0]["detail"] and drops[0]["detail"].startswith("bad ltl.step")
    assert planner.stats["dropped.malformed"] == 2
    assert planner.stats["handler_errors"] == 0
    assert planner.stream == {"DR": {0: [TSState("r2", "walk")]}}


def test_a_robot_drops_a_malformed_peer_done_and_map_and_goes_on() -> None:
    config = _config()

    async def run() -> LtlRobotAgent:
        params = LtlRobotAgent.params_from_config(config.agent("DR"), config)
        robot = LtlRobotAgent("DR", team="t1", endpoint=Endpoint("127.0.0.1", 1), **params)
        await robot.setup()
        robot.run = "s1"
        done = {"run": "s1", "epoch": 1, "seq": 2, "state": ["r1", "walk"], "segments": {}}
        await robot.receiver.receive(
            _incoming("A1", "ltl.status", "ltl.done", {**done, "seq": 2.5}, 1)
        )
        await robot.receiver.receive(_incoming("planner", "ltl.map", "ltl.map",
                                       {"run": "s1", "blocked": "r1-r2"}, 2, team=True))  # fmt: skip
        assert robot.peer_done == {} and robot.blocked == set()
        await robot.receiver.receive(_incoming("A1", "ltl.status", "ltl.done", done, 3))
        return robot

    with structlog.testing.capture_logs() as logs:
        robot = asyncio.run(run())
    drops = [e for e in logs if e["event"] == "message.dropped"]
    details = " ".join(d["detail"] for d in drops)
    assert {d["reason"] for d in drops} == {"malformed"}
    assert "bad ltl.done body" in details and "$.seq" in details
    assert "bad ltl.map body" in details and "$.blocked" in details
    assert robot.stats["dropped.malformed"] == 2 and robot.stats["handler_errors"] == 0
    assert robot.peer_done == {"A1": (1, 2)}


def test_a_robot_drops_a_malformed_disturbance_answers_why_and_takes_the_next() -> None:
    config = _config()
    acks: list[tuple[str, dict]] = []

    async def run() -> LtlRobotAgent:
        params = LtlRobotAgent.params_from_config(config.agent("DR"), config)
        robot = LtlRobotAgent("DR", team="t1", endpoint=Endpoint("127.0.0.1", 1), **params)

        async def reply(env: Envelope, kind: str, body: Any) -> None:
            acks.append((kind, body))

        robot.reply = reply  # type: ignore[method-assign]
        await robot.setup()
        bad = {"kind": "blocked_edge", "edge": "r1-r2"}
        await robot.receiver.receive(
            _incoming("cli", "ltl.disturb", "ltl.disturb", bad, 1, team=True)
        )
        await robot.receiver.receive(_incoming("cli", "ltl.disturb", "ltl.disturb", {"kind": "critical"},
                                       2, team=True))  # fmt: skip
        return robot

    with structlog.testing.capture_logs() as logs:
        robot = asyncio.run(run())
    drops = [e for e in logs if e["event"] == "message.dropped"]
    assert len(drops) == 1 and "bad ltl.disturb body" in drops[0]["detail"]
    assert "$.edge" in drops[0]["detail"] and robot.stats["handler_errors"] == 0
    assert [k for k, _ in acks] == ["ltl.disturb_ack", "ltl.disturb_ack"]
    assert acks[0][1]["accepted"] is False and "$.edge" in acks[0][1]["detail"]
    assert acks[1][1]["accepted"] is True  # deferred until the first plan
    assert robot.deferred == [DisturbWire("critical")]
