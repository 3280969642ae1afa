"""Mission identity, config key checks, outcome judging and the queue's answer to a
cancel, without a broker."""

from __future__ import annotations

import argparse
import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teamtree.agents.capability.job_source import job_result
from teamtree.agents.missions import wire as dw
from teamtree.agents.missions.protocol import MissionRow
from teamtree.agents.missions.queue import MissionQueue
from teamtree.agents.runtime.config import parse_config
from teamtree.agents.runtime.mission import (
    belongs,
    check_mission_id,
    mission_of,
    new_mission_id,
    stamp,
)
from teamtree.agents.runtime.outcome import (
    MemberExit,
    OutcomeCollector,
    judge,
    render_result_block,
    result_body,
)
from teamtree.broker import ConfigError, ConnectError, Endpoint, Envelope, HlcStamp
from teamtree.broker.reach import check_reachable
from teamtree.broker.topics import build, parse, validate_id

IDS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,20}", fullmatch=True)


def test_fresh_mission_ids_are_valid_distinct_and_sort_by_start() -> None:
    ids = [new_mission_id(1_800_000_000 + i) for i in range(50)]
    assert len(set(ids)) == 50
    assert all(validate_id(i) == i for i in ids)
    assert ids == sorted(ids)


def test_a_bad_mission_id_names_its_source() -> None:
    with pytest.raises(ConfigError, match=r"\[--resume\].*mission id"):
        check_mission_id("a/b", source="--resume")


@given(body=st.dictionaries(st.text(max_size=5), st.integers()), mine=IDS, other=IDS)
def test_stamped_state_belongs_only_to_its_mission(body: dict, mine: str, other: str) -> None:
    stamped = stamp(body, mine)
    assert mission_of(stamped) == mine and belongs(stamped, mine)
    assert belongs(stamped, other) == (other == mine)
    assert belongs(stamped, None) and belongs(body, None)
    assert not belongs({k: v for k, v in body.items() if k != "mission"}, mine)
    assert stamp(body, None) == body and stamp([1], mine) == [1]


CONFIG = {
    "team": {"name": "t"},
    "agents": [{"id": "a", "kind": "hello", "peers": []}],
}


def test_a_typo_under_mission_names_file_table_and_key() -> None:
    data = {**CONFIG, "mission": {"kind": "tasktree", "tree": "a", "tre": "b"}}
    with pytest.raises(ConfigError) as err:
        parse_config(data, Path("team.toml"))
    assert err.value.path == "team.toml" and err.value.key == "mission.tre"
    assert "tree" in str(err.value)  # the keys a tasktree mission takes


def test_every_shipped_config_passes_the_mission_key_check() -> None:
    from teamtree.agents.runtime.config import load_config

    for path in sorted((Path(__file__).parent.parent / "configs").glob("*.toml")):
        load_config(path)


def test_a_plugin_mission_kind_is_not_checked() -> None:
    data = {**CONFIG, "mission": {"kind": "my_plugin", "anything": 1}}
    assert parse_config(data, Path("t.toml")).mission.params == {"anything": 1}


def _exit(name: str, code: int | None, role: str = "member", *words: str) -> MemberExit:
    return MemberExit(name, role, code, list(words))


def test_the_outcome_is_success_only_when_members_and_criteria_agree() -> None:
    seen = OutcomeCollector()
    seen.feed("mission.tree", "pr2", {"tree": {"id": "root", "children": [
        {"id": "root/0", "behavior": "PLACE", "params": {"object": "cup"}}]}})  # fmt: skip
    seen.feed("node.transition", "pr2", {"agent": "pr2", "node": "root/0", "status": "done"})
    seen.feed("node.transition", "x", {"agent": "pr2", "node": "root/9", "status": "done"})
    ok, summary = judge(seen, [_exit("pr2", 0)], timed_out=False, interrupted=False)
    assert ok and summary.startswith("Mission succeeded")
    block = render_result_block("m1", seen, [_exit("pr2", 0)], 3.0, ok, summary)
    assert "SUCCEEDED" in block[0] and "PLACE(cup)" in block[1] and "root/9" not in block[1]

    seen.feed("mission.result", "jobs", result_body("factory", False, "1 of 2 jobs done"))
    ok, summary = judge(seen, [_exit("pr2", 0)], timed_out=False, interrupted=False)
    assert not ok and "jobs: 1 of 2 jobs done" in summary

    ok, summary = judge(
        OutcomeCollector(),
        [_exit("pr2", -9, "member", "agent.failed boom"), _exit("world", None, "service")],
        timed_out=False,
        interrupted=False,
    )
    assert not ok and "member pr2 exited with code -9 (agent.failed boom)" in summary


def test_a_task_tree_mission_succeeds_only_if_the_world_still_shows_it_done() -> None:
    """Every member exited 0 and said done, but the world's last state shows the cup
    put back and neither OR branch placed: the run fails, naming where each object is."""
    tree = {"id": "root", "type": "and", "children": [
        {"id": "root/0", "behavior": "PLACE", "params": {"object": "cup"}},
        {"id": "root/1", "type": "or", "children": [
            {"id": "root/1/0", "behavior": "PLACE", "params": {"object": "orange"}},
            {"id": "root/1/1", "behavior": "PLACE", "params": {"object": "apple"}}]},
        {"id": "root/2", "behavior": "WAVE", "params": {}}]}  # fmt: skip

    def view(at_goal: bool) -> dict[str, object]:
        return {"at_goal": at_goal, "position": [0.1, 0.2, 0.8], "goal": [0.5, 0.5, 0.8]}

    seen = OutcomeCollector()
    seen.feed("mission.tree", "pr2", {"kind": "tasktree", "tree": tree, "text": "-"})
    for node in ("root/0", "root/1/0", "root/1/1", "root/2"):
        seen.feed("node.transition", "pr2", {"agent": "pr2", "node": node, "status": "done"})
    world = {"cup": view(False), "orange": view(False), "apple": view(False)}
    seen.feed("world.state", "alice", {"objects": {k: view(True) for k in world}})  # not the world
    seen.feed("world.state", "world", {"objects": world})
    ok, summary = judge(seen, [_exit("pr2", 0)], timed_out=False, interrupted=False)
    assert not ok, summary
    assert "cup is at (0.10, 0.20, 0.80), not at its goal (0.50, 0.50, 0.80)" in summary
    assert "none of orange is at" in summary and "or apple is at" in summary

    world["cup"], world["apple"] = view(True), view(True)  # one OR branch suffices
    seen.feed("world.state", "world", {"objects": world})
    ok, summary = judge(seen, [_exit("pr2", 0)], timed_out=False, interrupted=False)
    assert ok, summary


def test_an_ltl_verdict_counts_as_the_criterion() -> None:
    seen = OutcomeCollector()
    seen.feed("ltl.verdict", "planner", {"satisfied": False, "impossible": True, "reason": "edge"})
    ok, summary = judge(seen, [_exit("A1", 0)], timed_out=False, interrupted=False)
    assert not ok and "impossible: edge" in summary


def test_factory_result_is_ok_only_when_every_job_is_done() -> None:
    row = {"job_id": "j1", "job": "job1", "agent": "m1", "status": "done", "reason": ""}
    assert job_result([row])["ok"]
    bad = {**row, "job_id": "j2", "status": "failed", "reason": "no helper"}
    result = job_result([row, bad])
    assert not result["ok"] and result["summary"].startswith("1 of 2 jobs done")
    assert result["failed"] == [{"item": "j2 (job1)", "reason": "failed: no helper"}]


def test_an_unreachable_broker_is_named_with_the_reason() -> None:
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(ConnectError, match=rf"mqtt://127.0.0.1:{port}: .*refused"):
            check_reachable(Endpoint("127.0.0.1", port), timeout=2.0)


def _queue_replies(rows: list[MissionRow], asked: list[str]) -> list[tuple[str, Any]]:
    """The queue's replies to a cancel of each id of `asked`, its table holding `rows`."""
    replies: list[tuple[str, Any]] = []

    async def run() -> None:
        queue = MissionQueue("queue", team="t1", endpoint=Endpoint("127.0.0.1", 1),
                             config_path="x.toml", members=["pr2"])  # fmt: skip

        async def reply(request: Envelope, kind: str, body: Any = None) -> None:
            replies.append((kind, dw.decode_dispatch(kind, body)))

        async def publish(*args: Any, **kwargs: Any) -> None:
            return None

        queue.reply = reply  # type: ignore[method-assign]
        queue.publish = publish  # type: ignore[method-assign]
        queue._terminate = lambda procs: None  # type: ignore[method-assign]
        for row in rows:
            queue.rows[row.id] = row
        topic = parse(build("t1", None, "missions"))
        for hid, mission in enumerate(asked, 1):
            ask = {"reply_to": "cli", "corr": f"c{hid}"}
            env = Envelope(dw.CANCEL, "cli", hid, 1, HlcStamp(1, 0, "cli"), {"id": mission}, **ask)
            await queue._on_cancel(env, topic)

    asyncio.run(run())
    return replies


def test_a_cancel_of_a_mission_that_already_ended_is_refused_saying_how_it_ended() -> None:
    """A cancel that comes after the mission succeeded, failed or was cancelled changes
    nothing and says so with the mission's state (field ``state``); one of a running
    mission cancels it; an unknown id is refused naming the id."""
    rows = [
        MissionRow("m-done", "tasktree", "done", summary="done in 4.2 s"),
        MissionRow("m-failed", "tasktree", "failed", summary="failed in 3.0 s (pr2 exited 1)"),
        MissionRow("m-gone", "tasktree", "cancelled", reason="cancelled by ops before it started"),
        MissionRow("m-run", "tasktree", "running"),
    ]
    replies = _queue_replies(rows, ["m-done", "m-failed", "m-gone", "m-run", "m-none"])
    done, failed, gone, running, unknown = (body for _, body in replies)
    assert [k for k, _ in replies] == [dw.REJECTED] * 3 + [dw.CANCELLED, dw.REJECTED]
    assert done == dw.Rejected(
        "state", "mission 'm-done' already ended: done in 4.2 s; nothing to cancel"
    )
    assert failed.field == "state" and "already ended: failed in 3.0 s" in failed.error
    assert gone.field == "state"
    assert "already ended: cancelled (cancelled by ops before it started)" in gone.error
    assert [r.state for r in rows] == ["done", "failed", "cancelled", "cancelling"]
    assert running == dw.Cancelled("m-run", "cancelling")
    assert unknown.field == "id"


@pytest.mark.parametrize(
    ("reply", "code", "said"),
    [
        ((dw.CANCELLED, {"id": "m1", "state": "cancelling"}), 0, "m1: cancelling"),
        ((dw.REJECTED, {"field": "state", "error": "mission 'm1' already ended: done in 4 s"}),
         1, "already ended: done in 4 s"),
        ((dw.CANCELLED, {"id": "m1", "state": "done"}), 1, "already ended: done"),
        ((dw.REJECTED, {"field": "id", "error": "no mission 'm1' (known: none)"}), 2, "no mission"),
    ],
)  # fmt: skip
def test_teamtree_cancel_exits_0_only_when_it_cancelled(monkeypatch, capsys, reply, code, said):
    """``teamtree cancel`` of a mission that already ended says so, with its state, and
    exits 1 (also when an older queue answers ``mission.cancelled`` with the ended
    state); an unknown id exits 2; a cancelled or cancelling mission exits 0."""
    from teamtree.agents.cli import dispatch

    kind, body = reply

    async def ask(args: Any, kind_: str, body_: Any) -> Any:
        assert kind_ == dw.CANCEL and body_ == {"id": "m1"}
        return Envelope(kind, "queue", 1, 1, HlcStamp(1, 0, "queue"), body)

    monkeypatch.setattr(dispatch, "_ask", ask)
    assert asyncio.run(dispatch.run_cancel(argparse.Namespace(id="m1"))) == code
    out = capsys.readouterr()
    assert said in (out.out if code == 0 else out.err), out
