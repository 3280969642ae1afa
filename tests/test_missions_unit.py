"""Mission identity, config key checks and outcome judging, without a broker."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teamtree.agents.capability.job_source import job_result
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
from teamtree.broker import ConfigError, ConnectError, Endpoint
from teamtree.broker.reach import check_reachable
from teamtree.broker.topics import validate_id

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
