"""The seed-000 dialog and belief bodies are declared types (``dialog_wire``): each body
as the robot and the humans built it by hand decodes to its Struct and encodes back to
the same map and msgpack bytes; any other body decodes or raises DialogWireError
naming the field; and a human drops a malformed one with the drop warning and goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.humans.terminal import TerminalHuman
from teamtree.agents.observers.web.person import WebHuman
from teamtree.agents.treeprotocol.dialog_wire import (
    BODIES,
    AskWire,
    BeliefWire,
    DialogWireError,
    decode,
    to_wire,
)
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build
from tests.test_wire import bodies
from tests.wire_strategies import WIRE_INTS

ASK = {
    "dialog_id": "pr2-0123456789",
    "robot": "pr2",
    "human": "alice",
    "node": "n3",
    "label": "PLACE(cup)",
    "object": "cup",
    "question": "We both went for PLACE(cup). Do you want to continue with it?",
    "options": ["continue", "concede"],
    "timeout_s": 5.0,
}
RESOLVED = {
    "dialog_id": "pr2-0123456789",
    "robot": "pr2",
    "human": "alice",
    "node": "n3",
    "label": "PLACE(cup)",
    "answer": "concede",
    "how": "answered",
    "rtt_ms": 812.4,
    "robot_continues": True,
}
BELIEF = {
    "human": "alice",
    "hand": "alice",
    "active": "n3",
    "label": "PLACE(cup)",
    "intent_object": "cup",
    "done": ["n1", "n2"],
    "conceded": [],
    "t": 1.25,
}

SAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("dialog.ask", ASK),
    ("dialog.ask", {**ASK, "object": None, "timeout_s": 2.5}),
    ("dialog.answer", {"dialog_id": "pr2-0123456789", "answer": "continue"}),
    ("dialog.resolved", RESOLVED),
    ("dialog.resolved", {**RESOLVED, "answer": "continue", "how": "timeout",
                         "robot_continues": False}),
    ("tom.belief", BELIEF),
    ("tom.belief", {**BELIEF, "active": None, "label": None, "intent_object": None, "t": None}),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "body"), SAMPLES)
def test_each_body_round_trips_to_the_same_map_and_bytes(kind: str, body: dict) -> None:
    msg = decode(body, BODIES[kind])
    assert to_wire(msg) == body and list(to_wire(msg)) == list(body)
    assert msgspec.msgpack.encode(msg) == msgpack.packb(body)


def test_every_kind_has_a_sample() -> None:
    assert {k for k, _ in SAMPLES} == set(BODIES)


def test_the_belief_struct_takes_the_models_belief_dict() -> None:
    """The robot publishes ``BeliefWire(**model.belief())``: same keys, same order."""
    assert to_wire(BeliefWire(**BELIEF)) == BELIEF  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "body", "path"),
    [
        ("dialog.ask", {**ASK, "node": 3}, r"\$\.node"),
        ("dialog.ask", {**ASK, "options": "continue"}, r"\$\.options"),
        ("dialog.ask", {**ASK, "timeout_s": "5"}, r"\$\.timeout_s"),
        ("dialog.answer", {"dialog_id": "d", "answer": None}, r"\$\.answer"),
        ("dialog.resolved", {**RESOLVED, "robot_continues": "yes"}, r"\$\.robot_continues"),
        ("tom.belief", {**BELIEF, "done": [1]}, r"\$\.done\[0\]"),
    ],
)
def test_errors_name_the_kind_and_the_field(kind: str, body: dict, path: str) -> None:
    with pytest.raises(DialogWireError, match=rf"^bad {kind} body: .*{path}"):
        decode(body, BODIES[kind])


scalars = st.none() | st.booleans() | WIRE_INTS | st.floats(allow_nan=False) | st.text(max_size=4)
values = st.recursive(scalars, lambda v: st.lists(v, max_size=3), max_leaves=6)


def _mutations(sample: tuple[str, dict]) -> st.SearchStrategy:
    keys = st.sampled_from(sorted(sample[1])) | st.text(max_size=4)
    return st.tuples(st.just(sample), st.dictionaries(keys, values, max_size=4))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES).flatmap(_mutations))
def test_any_mutated_body_decodes_or_raises_dialog_wire_error(
    mutation: tuple[tuple[str, dict], dict[str, Any]],
) -> None:
    (kind, body), changes = mutation
    try:
        msg = decode({**body, **changes}, BODIES[kind])
    except DialogWireError as exc:
        assert str(exc).startswith(f"bad {kind} body: ")
        return
    assert decode(to_wire(msg), BODIES[kind]) == msg


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(BODIES)), bodies)
def test_any_body_decodes_or_raises_dialog_wire_error(kind: str, body: Any) -> None:
    try:
        decode(body, BODIES[kind])
    except DialogWireError as exc:
        assert str(exc).startswith(f"bad {kind} body: ")


# -- a receiver --------------------------------------------------------------------------


def _incoming(kind: str, body: Any, hid: int, *, team: bool, to: str | None = None) -> Incoming:
    env = Envelope(kind, "pr2", hid, 1, HlcStamp(1, 0, "pr2"), body, to=to)
    return Incoming(build("t1", None if team else "pr2", "dialog"), encode(env), False, 0)


def test_the_terminal_human_drops_a_malformed_question_and_answers_the_next() -> None:
    lines: list[str] = []

    async def run() -> TerminalHuman:
        human = TerminalHuman(
            "alice", team="t1", endpoint=Endpoint("127.0.0.1", 1),
            reader=asyncio.StreamReader(), write=lines.append, use_world=False,
        )  # fmt: skip
        await human.setup()
        await human.receiver.receive(
            _incoming("dialog.ask", {**ASK, "node": 3}, 1, team=True, to="alice")
        )
        assert human.questions == []
        await human.receiver.receive(_incoming("dialog.ask", ASK, 2, team=True, to="alice"))
        assert [q[1] for q in human.questions] == [AskWire(**ASK)]
        bad = {**RESOLVED, "robot_continues": "yes"}
        await human.receiver.receive(_incoming("dialog.resolved", bad, 3, team=False))
        assert len(human.questions) == 1
        await human.receiver.receive(_incoming("dialog.resolved", RESOLVED, 4, team=False))
        return human

    with structlog.testing.capture_logs() as logs:
        human = asyncio.run(run())
    drops = [e for e in logs if e["event"] == "message.dropped"]
    assert len(drops) == 1 and drops[0]["reason"] == "malformed", drops  # 2nd folded in
    assert drops[0]["detail"].startswith("bad dialog.ask body") and "$.node" in drops[0]["detail"]
    assert human.stats["dropped.malformed"] == 2 and human.stats["handler_errors"] == 0
    assert human.questions == []
    assert lines[0].startswith("question pr2 n3 PLACE(cup)")
    assert lines[-1] == "robot pr2 continues with PLACE(cup) (answer answered)"


def _ask(sender: str, dialog_id: str, hid: int) -> Incoming:
    body = {**ASK, "dialog_id": dialog_id, "robot": sender}
    env = Envelope("dialog.ask", sender, hid, 1, HlcStamp(1, 0, sender), body, to="alice")
    return Incoming(build("t1", None, "dialog"), encode(env), False, 0)


def test_the_web_person_answers_the_question_tapped_when_two_are_open() -> None:
    """The person's page answers the question whose button was tapped, also while two
    robots ask at once (a bare answer would be refused and both questions time out)."""

    async def run() -> WebHuman:
        human = WebHuman("alice", team="t1", endpoint=Endpoint("127.0.0.1", 1), use_world=False)
        await human.setup()
        await human.receiver.receive(_ask("pr2", "d-pr2", 1))
        await human.receiver.receive(_ask("baxter", "d-baxter", 2))
        await human.answer("d-baxter", keep=False)
        assert [q[1].dialog_id for q in human.questions] == ["d-pr2"]
        await human.answer("d-pr2", keep=True)
        return human

    human = asyncio.run(run())
    said = [line["text"] for line in human.lines]
    assert human.questions == []
    assert not [t for t in said if t.startswith("error")], said
    assert any("baxter" in t and "answered" in t for t in said), said


def test_the_terminal_human_asks_which_question_when_two_are_open() -> None:
    """Two robots ask at once: a bare "no" is refused with both names (answering the
    wrong one hands the wrong subtask over), "no baxter" answers baxter's only."""
    lines: list[str] = []

    def ask(sender: str, dialog_id: str, hid: int) -> Incoming:
        body = {**ASK, "dialog_id": dialog_id, "robot": sender}
        env = Envelope("dialog.ask", sender, hid, 1, HlcStamp(1, 0, sender), body, to="alice")
        return Incoming(build("t1", None, "dialog"), encode(env), False, 0)

    async def run() -> TerminalHuman:
        human = TerminalHuman(
            "alice", team="t1", endpoint=Endpoint("127.0.0.1", 1),
            reader=asyncio.StreamReader(), write=lines.append, use_world=False,
        )  # fmt: skip
        await human.setup()
        await human.receiver.receive(ask("pr2", "d-pr2", 1))
        await human.receiver.receive(ask("baxter", "d-baxter", 2))
        assert await human.handle("no")
        assert len(human.questions) == 2
        assert lines[-1] == "error 2 open questions (pr2, baxter): name the robot, e.g. 'no pr2'"
        assert await human.handle("no r2d2")
        assert lines[-1] == "error r2d2 asked no open question; open: pr2, baxter"
        assert await human.handle("no baxter")
        assert lines[-1] == "answered baxter concede"
        assert await human.handle("yes")  # one left: no name needed
        assert lines[-1] == "answered pr2 continue"
        return human

    human = asyncio.run(run())
    assert human.questions == []
