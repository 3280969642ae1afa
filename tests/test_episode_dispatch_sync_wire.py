"""Typed bodies of the kitting episode (``kitting.*``), the mission dispatch protocol
(``mission.submit/list/cancel`` and their replies), ``mission.result`` and the re-sync
(``sync.request``/``sync.done``): each Struct encodes to the same msgpack as the
hand-made map it replaced; any wrong-typed field raises the family's wire error naming
the field (and nothing else); and receivers drop or refuse a malformed body and go on.
(tests/test_protocol_docs.py checks the docs' tables against these Structs.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.allocation import kitting_wire as kw
from teamtree.agents.allocation.kitting import (
    CobotAgent,
    KittingHumanAgent,
    _human_action,
    _robot_action,
)
from teamtree.agents.missions import wire as dw
from teamtree.agents.missions.protocol import MissionRow, SubmissionError, check_submission
from teamtree.agents.missions.queue import MissionQueue
from teamtree.agents.runtime.agent import Agent
from teamtree.agents.runtime.outcome import (
    RESULT_KIND,
    OutcomeCollector,
    OutcomeWireError,
    ResultBody,
    decode_result,
    result_body,
)
from teamtree.agents.runtime.resync import (
    SYNC_DONE,
    SYNC_REQUEST,
    SyncDoneBody,
    SyncRequestBody,
    SyncWireError,
    decode_sync_done,
    decode_sync_request,
    sync_done_body,
    sync_request_body,
)
from teamtree.agents.runtime.sync_ask import SyncAsker
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build, parse
from teamtree.planners.allocation import Colour, HumanAction, RobotAction
from tests.test_typed_wire import _fields, _may_accept, plain
from tests.test_wire import bodies

DOCS = Path(__file__).resolve().parent.parent / "docs"
TEAM = "t1"
ENDPOINT = Endpoint("127.0.0.1", 1)

SUMMARY = {
    "makespan": 321.897, "wrong_human_actions": 2, "robot_to_human": 3, "human_to_robot": 1,
    "alpha_f": 0.61, "alpha_e": 0.12, "pattern_correct": True,
    "pattern": "##### ##### ##### #####", "plans": 9, "aborts": 1, "solve_s_p50": 0.02,
    "round_trip_s_p50": 0.05, "adaptive": True,
}  # fmt: skip
PLAN = {
    "version": 3, "t": 12.5, "alpha_f": 0.6, "alpha_e": 0.1, "assignment": {"h0": "human"},
    "robot": ["r1", "a2"], "makespan": 300.0, "solver": "highs", "solve_time": 0.02,
    "round_trip": 0.04, "replica": "allocator",
}  # fmt: skip
ROW = {
    "id": "m1", "kind": "tasktree", "state": "done", "submitted_ms": 1, "started_ms": 2,
    "ended_ms": None, "reason": "", "summary": "done in 1.0 s", "members": ["pr2"],
}  # fmt: skip
RESULT = {
    "kind": "factory", "ok": False, "summary": "1 of 2 jobs done",
    "done": [{"item": "j1", "by": "m1"}], "failed": [{"item": "j2", "reason": "lost"}],
}  # fmt: skip


def _packed(body: Any) -> bytes:
    return msgpack.packb(body, use_bin_type=True)


# -- the wire stays what it was ---------------------------------------------------------


def test_kitting_bodies_encode_to_the_old_maps_byte_for_byte() -> None:
    colour = Colour.GREEN
    old = {"action": "H2", "task": 4, "colour": colour.value}
    for phase in ("start", "end"):
        new = _human_action(HumanAction.H2, 4, colour, phase)
        assert _packed(new) == _packed({**old, "phase": phase})
    old = {"action": "R1", "task": 4, "cancels": "R5", "colour": "red"}
    assert _packed(_robot_action(RobotAction.R1, 4, "R5", "start", "red")) == _packed(
        {**old, "phase": "start"}
    )
    old_abort = {"action": "R2", "task": 4, "cancels": None, "phase": "abort"}
    assert _packed(_robot_action(RobotAction.R2, 4, None, "abort")) == _packed(old_abort)
    # the end body was {action, task, cancels, phase, colour}: the same map, its keys in
    # the Struct's order now (one order for every phase)
    old_end = {"action": "R4", "task": 4, "cancels": None, "phase": "end", "colour": "red"}
    assert _robot_action(RobotAction.R4, 4, None, "end", "red") == old_end
    start = {"human": "human", "time_factor": 10.0, "n": 20}
    assert _packed(kw.to_wire(kw.StartBody(**start))) == _packed(start)
    assert _packed(kw.to_wire(kw.PlanBody(**PLAN))) == _packed(PLAN)
    assert _packed(kw.to_wire(kw.DoneBody(**SUMMARY))) == _packed(SUMMARY)


def test_dispatch_bodies_encode_to_the_old_maps_byte_for_byte() -> None:
    mission = {"kind": "tasktree", "tree": "THEN(cup, sugar)", "members": 1}
    assert _packed(dw.to_wire(dw.SubmitRequest(mission))) == _packed({"mission": mission})
    assert _packed(dw.to_wire(dw.ListRequest())) == _packed({})
    assert _packed(dw.to_wire(dw.CancelRequest("m1"))) == _packed({"id": "m1"})
    accepted = {"id": "m1", "state": "queued", "position": 2}
    assert _packed(dw.to_wire(dw.Accepted("m1", "queued", 2))) == _packed(accepted)
    rejected = {"field": "mission.tree", "error": "[mission.tree] names object 'spoon'"}
    assert _packed(dw.to_wire(dw.Rejected(**rejected))) == _packed(rejected)
    assert _packed(dw.to_wire(dw.Cancelled("m1", "cancelling"))) == _packed(
        {"id": "m1", "state": "cancelling"}
    )
    row = MissionRow("m1", "tasktree", "done", 1, 2, None, "", "done in 1.0 s", ["pr2"])
    assert _packed(row.to_wire()) == _packed(ROW)
    assert _packed(dw.to_wire(dw.Table([row.row()]))) == _packed({"missions": [ROW]})


def test_result_and_sync_bodies_encode_to_the_old_maps_byte_for_byte() -> None:
    new = result_body(
        "factory", False, "1 of 2 jobs done", done=RESULT["done"], failed=RESULT["failed"]
    )
    assert _packed(new) == _packed(RESULT)
    assert _packed(result_body("kitting", True, "kit complete")) == _packed(
        {"kind": "kitting", "ok": True, "summary": "kit complete", "done": [], "failed": []}
    )
    assert _packed(sync_request_body()) == _packed({})
    assert _packed(sync_done_body(7)) == _packed({"kept": 7})


# -- decoders: wrong types are named, nothing else escapes ---------------------------


def _kitting(kind: str) -> Callable[[Any], Any]:
    return lambda body: kw.decode_kitting(kind, body)


def _dispatch(kind: str) -> Callable[[Any], Any]:
    return lambda body: dw.decode_dispatch(kind, body)


#: kind -> (its Struct, a valid body, its decoder, the wire error)
MESSAGES: dict[str, tuple[type, dict[str, Any], Callable[[Any], Any], type[Exception]]] = {
    kw.HUMAN_ACTION: (
        kw.HumanActionBody,
        {"action": "H1", "task": 0, "colour": "red", "phase": "start"},
        _kitting(kw.HUMAN_ACTION),
        kw.KittingWireError,
    ),
    kw.ROBOT_ACTION: (
        kw.RobotActionBody,
        {"action": "R3", "task": 2, "cancels": None, "colour": "red", "phase": "end"},
        _kitting(kw.ROBOT_ACTION),
        kw.KittingWireError,
    ),
    kw.START: (
        kw.StartBody,
        {"human": "human", "time_factor": 10.0, "n": 20},
        _kitting(kw.START),
        kw.KittingWireError,
    ),
    kw.PLAN: (kw.PlanBody, PLAN, _kitting(kw.PLAN), kw.KittingWireError),
    kw.DONE: (kw.DoneBody, SUMMARY, _kitting(kw.DONE), kw.KittingWireError),
    dw.SUBMIT: (
        dw.SubmitRequest,
        {"mission": {"kind": "tasktree"}},
        _dispatch(dw.SUBMIT),
        dw.DispatchWireError,
    ),
    dw.LIST: (dw.ListRequest, {}, _dispatch(dw.LIST), dw.DispatchWireError),
    dw.CANCEL: (dw.CancelRequest, {"id": "m1"}, _dispatch(dw.CANCEL), dw.DispatchWireError),
    dw.ACCEPTED: (
        dw.Accepted,
        {"id": "m1", "state": "queued", "position": 1},
        _dispatch(dw.ACCEPTED),
        dw.DispatchWireError,
    ),
    dw.REJECTED: (
        dw.Rejected,
        {"field": "id", "error": "no mission"},
        _dispatch(dw.REJECTED),
        dw.DispatchWireError,
    ),
    dw.TABLE: (dw.Table, {"missions": [ROW]}, _dispatch(dw.TABLE), dw.DispatchWireError),
    "mission.table row": (
        dw.Row,
        ROW,
        lambda body: dw.decode_dispatch(dw.TABLE, {"missions": [body]}).missions[0],
        dw.DispatchWireError,
    ),
    dw.CANCELLED: (
        dw.Cancelled,
        {"id": "m1", "state": "queued"},
        _dispatch(dw.CANCELLED),
        dw.DispatchWireError,
    ),
    RESULT_KIND: (ResultBody, {**RESULT, "mission": "m1"}, decode_result, OutcomeWireError),
    SYNC_REQUEST: (SyncRequestBody, {}, decode_sync_request, SyncWireError),
    SYNC_DONE: (SyncDoneBody, {"kept": 3}, decode_sync_done, SyncWireError),
}
WITH_FIELDS = sorted(kind for kind, (typ, *_) in MESSAGES.items() if _fields(typ))


@pytest.mark.parametrize("kind", sorted(MESSAGES))
def test_valid_examples_decode_and_round_trip(kind: str) -> None:
    _, body, run, _ = MESSAGES[kind]
    decoded = run(body)
    again = msgpack.unpackb(_packed(msgspec.to_builtins(decoded)), raw=False)
    assert run(again) == decoded


@pytest.mark.parametrize("kind", WITH_FIELDS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_wrong_typed_field_raises_the_wire_error_naming_it(kind: str, data: Any) -> None:
    typ, body, run, error = MESSAGES[kind]
    field = data.draw(st.sampled_from(_fields(typ)), label="field")
    wrong = data.draw(plain.filter(lambda v: not _may_accept(field.type, v)), label="value")
    with pytest.raises(error) as err:
        run({**body, field.encode_name: wrong})
    assert f"$.{field.encode_name}" in str(err.value) or f".{field.encode_name}`" in str(err.value)


@pytest.mark.parametrize("kind", WITH_FIELDS)
def test_a_missing_required_field_is_named(kind: str) -> None:
    typ, body, run, error = MESSAGES[kind]
    for field in (f for f in _fields(typ) if f.required):
        with pytest.raises(error, match=f"`{field.encode_name}`"):
            run({k: v for k, v in body.items() if k != field.encode_name})


@pytest.mark.parametrize("kind", sorted(MESSAGES))
@settings(max_examples=60, deadline=None)
@given(body=bodies)
def test_hostile_bodies_raise_only_the_wire_error(kind: str, body: Any) -> None:
    _, _, run, error = MESSAGES[kind]
    with contextlib.suppress(error):
        run(body)


def test_a_submission_of_the_wrong_shape_names_the_mission_field() -> None:
    for body in ([], {}, {"mission": None}, {"mission": "kind = tasktree"}):
        with pytest.raises(SubmissionError) as err:
            check_submission(body, None)
        assert err.value.field == "mission" and str(err.value).startswith("[mission] ")


# -- receivers drop or refuse a malformed body and go on ---------------------------------


def _env(kind: str, sender: str, body: Any, hid: int, **extra: Any) -> Envelope:
    return Envelope(kind, sender, hid, 1, HlcStamp(1, 0, sender), body, **extra)


def _incoming(topic: str, env: Envelope) -> Incoming:
    return Incoming(topic, encode(env), False, 0)


def _drops(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "message.dropped" and e["reason"] == "malformed"]


def test_the_human_and_the_cobot_drop_a_malformed_action_and_read_the_next() -> None:
    async def run() -> tuple[KittingHumanAgent, CobotAgent]:
        human = KittingHumanAgent("human", team=TEAM, endpoint=ENDPOINT, cobot="cobot")
        cobot = CobotAgent("cobot", team=TEAM, endpoint=ENDPOINT, human="human")
        await human.setup()
        await cobot.setup()
        robot_topic = build(TEAM, "cobot", "actions")
        good = {"action": "R1", "task": 0, "cancels": None, "colour": "red", "phase": "start"}
        for hid, body in enumerate([{**good, "task": 99}, {**good, "task": "0"}, good], 1):
            await human.receiver.receive(
                _incoming(robot_topic, _env(kw.ROBOT_ACTION, "cobot", body, hid))
            )
        status = build(TEAM, "cobot", "status")
        await human.receiver.receive(_incoming(status, _env(kw.START, "cobot", {"human": 1}, 9)))
        assert not human._started.is_set()
        start = {"human": "human", "time_factor": 10.0, "n": 20}
        await human.receiver.receive(_incoming(status, _env(kw.START, "cobot", start, 10)))
        assert human._started.is_set()
        human_topic = build(TEAM, "human", "actions")
        good = {"action": "H1", "task": 3, "colour": "red", "phase": "start"}
        for hid, body in enumerate([{**good, "action": "H3"}, good], 1):
            await cobot.receiver.receive(
                _incoming(human_topic, _env(kw.HUMAN_ACTION, "human", body, hid))
            )
        return human, cobot

    with structlog.testing.capture_logs() as logs:
        human, cobot = asyncio.run(run())
    assert human.board.robot_busy == {0: RobotAction.R1}
    assert human.stats["dropped.malformed"] == 3  # folded into one warning per interval
    assert cobot.stats["dropped.malformed"] == 1
    assert cobot.board.human_busy == (3, HumanAction.H1)
    human_drop, cobot_drop = (d["detail"] for d in _drops(logs))
    assert human_drop == ("bad kitting.robot_action body: task must be 0..19, got 99 - at `$.task`")
    assert cobot_drop == "bad kitting.human_action body: Invalid enum value 'H3' - at `$.action`"
    with pytest.raises(kw.KittingWireError, match=r"Expected `int`, got `str` - at `\$\.task`"):
        kw.decode_kitting(kw.ROBOT_ACTION, {**MESSAGES[kw.ROBOT_ACTION][1], "task": "0"})


def test_the_queue_refuses_malformed_requests_naming_the_field_and_goes_on() -> None:
    replies: list[tuple[str, dict[str, Any]]] = []

    async def run() -> MissionQueue:
        queue = MissionQueue("queue", team=TEAM, endpoint=ENDPOINT, config_path="x.toml",
                             members=["pr2"])  # fmt: skip

        async def reply(request: Envelope, kind: str, body: Any = None) -> None:
            replies.append((kind, body))

        async def publish(*args: Any, **kwargs: Any) -> None:
            return None

        queue.reply = reply  # type: ignore[method-assign]
        queue.publish = publish  # type: ignore[method-assign]
        topic = parse(build(TEAM, None, "missions"))
        ask = {"reply_to": "cli", "corr": "c1"}
        await queue._on_cancel(_env(dw.CANCEL, "cli", {"id": 3}, 1, **ask), topic)
        await queue._on_submit(_env(dw.SUBMIT, "cli", {"mission": 5}, 2, **ask), topic)
        await queue._on_list(_env(dw.LIST, "cli", [], 3, **ask), topic)
        await queue._on_list(_env(dw.LIST, "cli", {}, 4, **ask), topic)
        await queue._on_cancel(_env(dw.CANCEL, "cli", {"id": "m9"}, 5, **ask), topic)
        result = parse(build(TEAM, None, "result"))
        await queue._on_result(_env(RESULT_KIND, "jobs", {"ok": "yes"}, 6), result)
        return queue

    with structlog.testing.capture_logs() as logs:
        queue = asyncio.run(run())
    kinds = [k for k, _ in replies]
    assert kinds == [dw.REJECTED, dw.REJECTED, dw.TABLE, dw.REJECTED]
    cancel, submit, _, unknown = (dw.decode_dispatch(k, b) for k, b in replies)
    assert cancel.field == "id" and "$.id" in cancel.error and "Expected `str`" in cancel.error
    assert submit.field == "mission" and "$.mission" in submit.error
    assert unknown.error == "no mission 'm9' (known: none)"
    assert replies[2][1] == {"missions": []}
    assert queue.stats["dropped.malformed"] == 2
    details = [d["detail"] for d in _drops(logs)]
    assert any("mission.list" in d for d in details), details
    assert any("mission.result" in d and "$.ok" in d for d in details), details


def test_a_malformed_sync_request_is_dropped_and_a_malformed_sync_done_is_no_answer() -> None:
    answered: list[Envelope] = []

    async def run() -> Agent:
        agent = Agent("pr2", team=TEAM, endpoint=ENDPOINT)

        async def answer(env: Envelope) -> None:
            answered.append(env)

        agent.resync._answer = answer  # type: ignore[method-assign]
        topic = parse(build(TEAM, None, "sync"))
        ask = {"reply_to": "obs", "corr": "c1"}
        await agent.resync._on_request(_env(SYNC_REQUEST, "obs", [1], 1, **ask), topic)
        await agent.resync._on_request(_env(SYNC_REQUEST, "obs", {}, 2, **ask), topic)
        await asyncio.sleep(0)
        asker = SyncAsker(TEAM, lambda out: asyncio.sleep(0, True))
        asker._corrs = {"c1"}
        reply = parse(build(TEAM, "pr2", "reply", asker.requester))
        asker.on_message(_env(SYNC_DONE, "pr2", {"kept": "7"}, 3, corr="c1"), reply)
        assert asker.answered == set()
        asker.on_message(_env(SYNC_DONE, "pr2", {"kept": 7}, 4, corr="c1"), reply)
        assert asker.answered == {"pr2"}
        return agent

    with structlog.testing.capture_logs() as logs:
        agent = asyncio.run(run())
    assert len(answered) == 1 and answered[0].hid == 2
    assert agent.stats["dropped.malformed"] == 1
    assert "sync.request" in _drops(logs)[0]["detail"]


def test_a_malformed_result_says_nothing_about_the_run() -> None:
    seen = OutcomeCollector()
    seen.feed(RESULT_KIND, "jobs", {"ok": True, "summary": 3})
    seen.feed(RESULT_KIND, "cobot", {"ok": True})
    assert seen.results == {}
    seen.feed(RESULT_KIND, "jobs", {**RESULT, "mission": "m1"})
    assert seen.results["jobs"]["failed"] == RESULT["failed"]
    assert seen.failures() == ["jobs: 1 of 2 jobs done"]
