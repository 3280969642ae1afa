"""``teamtree monitor``: the view built from broker traffic alone, unit-fed and live."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.observers.monitor import MISSIONS_KEPT, MonitorState, render_text
from teamtree.broker.envelope import Envelope
from teamtree.broker.hlc import HybridLogicalClock
from teamtree.broker.topics import parse
from tests.conftest import REPO, scaled, teamtree_cmd
from tests.ops_support import ops_cmd

TREE = {
    "id": "root",
    "type": "AND",
    "children": [
        {"id": "root/0", "behavior": "PLACE", "params": {"object": "cup"}},
        {"id": "root/1", "behavior": "PLACE", "params": {"object": "sugar"}},
    ],
}


def feed(state: MonitorState, topic: str, sender: str, kind: str, body, ts: int, **fields) -> None:
    clock = HybridLogicalClock(sender)
    env = Envelope(kind=kind, sender=sender, hid=ts, ts=ts, hlc=clock.now(), body=body, **fields)
    state.feed(env, parse(f"teamtree/v1/t/{topic}"))


def test_monitor_state_from_messages() -> None:
    now = [100.0]
    state = MonitorState("t", clock=lambda: now[0])
    feed(state, "pr2/connection", "pr2", "presence", {"state": "ONLINE", "kind": "robot"}, 1)
    feed(state, "bx/connection", "bx", "presence", {"state": "ONLINE", "kind": "robot"}, 1)
    feed(state, "bx/connection", "bx", "presence", {"state": "CONNECTION_BROKEN"}, 2)
    feed(
        state,
        "_/mission",
        "pr2",
        "mission.tree",
        {"kind": "tasktree", "tree": TREE, "text": "t"},
        3,
    )
    working = {"node": "root/0", "agent": "pr2", "status": "working"}
    feed(state, "pr2/state", "pr2", "node.transition", working, 4)
    lost = {"claim_id": "c", "node": "root/0", "won": False, "reason": "earlier claim"}
    feed(state, "bx/events", "bx", "node.claim_decided", lost, 5)
    snap = state.snapshot()
    assert snap["agents"]["pr2"]["node_label"] == "PLACE(cup)"
    assert snap["agents"]["pr2"]["status"] == "working PLACE(cup)"
    assert snap["agents"]["bx"]["presence"] == "CONNECTION_BROKEN"
    assert snap["online"] == ["pr2"]
    assert snap["conflicts"][0]["agent"] == "bx" and snap["conflicts"][0]["label"] == "PLACE(cup)"
    feed(state, "pr2/state", "pr2", "node.transition", {**working, "status": "done"}, 6)
    # a request on a team channel and its reply: latency from the two timestamps
    feed(state, "_/allocation", "cobot", "allocation.solve", {}, 1000, corr="k1", reply_to="cobot",
         deadline=10**13)  # fmt: skip
    feed(state, "alloc-1/reply/cobot", "alloc-1", "allocation.result", {}, 1042, corr="k1")
    feed(state, "_/favors", "r1", "favor.request", {}, 1100)
    feed(state, "r2/favors", "r2", "favor.grant", {}, 1101, to="r1")
    feed(state, "_/dialogs", "pr2", "dialog.ask", {"q": "yours?"}, 1200)
    now[0] += 2.0
    snap = state.snapshot()
    assert snap["agents"]["pr2"]["progress"] == {"done": 1, "of": 2}
    assert snap["mission"]["done"] == 1 and snap["mission"]["done_by"] == {"root/0": "pr2"}
    assert snap["requests"]["allocation"]["latency_ms_p50"] == 42
    assert snap["requests"]["allocation"]["answered"] == 1
    assert snap["favors"]["counts"] == {"favor.request": 1, "favor.grant": 1}
    assert snap["dialogs"][0]["kind"] == "dialog.ask"
    assert snap["rates"]["state"] > 0 and "_/allocation" in snap["rates"]
    state.feed_sys("$SYS/broker/clients/connected", b"7")
    text = render_text(state.snapshot())
    assert "bx lost PLACE(cup)" in text and "clients/connected 7" in text
    assert "latency p50 42 ms" in text
    json.dumps(state.snapshot())  # JSON-ready


def _kept_state(mission: str) -> list[tuple[str, str, str, dict, int]]:
    """What a finished mission leaves at the broker: its tree, each robot's last
    snapshot, and an earlier mission's snapshot from a robot no longer in the team."""
    tree = {"kind": "tasktree", "tree": TREE, "text": "t", "mission": mission}
    stamp = {"t_ms": 1, "counter": 0, "agent": "pr2"}
    return [
        ("_/mission", "pr2", "mission.tree", tree, 10),
        ("pr2/state", "pr2", "node.snapshot",
         {"agent": "pr2", "stamp": stamp, "done": ["root/0"], "mission": mission}, 11),
        ("bx/state", "bx", "node.snapshot",
         {"agent": "bx", "stamp": stamp, "done": ["root/1"], "mission": mission}, 12),
        ("old/state", "old", "node.snapshot",
         {"agent": "old", "stamp": stamp, "done": ["root/0", "root/1"], "mission": "m0"}, 5),
    ]  # fmt: skip


@settings(max_examples=60, deadline=None, print_blob=True)
@given(st.permutations(range(4)))
def test_the_leaves_done_do_not_depend_on_the_order_kept_state_arrives(order) -> None:
    """The broker hands out kept state in its own order: snapshots before the tree
    must count, and another mission's snapshot must not."""
    state = MonitorState("t")
    kept = _kept_state("m1")
    for i in order:
        feed(state, *kept[i])
    mission = state.snapshot()["mission"]
    assert mission["leaves"] == 2 and mission["done"] == 2, order
    assert set(mission["done_by"]) == {"root/0", "root/1"}
    # a new mission's tree shows none done until its own transitions come
    feed(state, "_/mission", "pr2", "mission.tree",
         {"kind": "tasktree", "tree": TREE, "text": "t", "mission": "m2"}, 20)  # fmt: skip
    assert state.snapshot()["mission"]["done"] == 0
    done = {"node": "root/1", "agent": "bx", "status": "done", "mission": "m2"}
    feed(state, "bx/state", "bx", "node.transition", done, 21)
    assert state.snapshot()["mission"]["done_by"] == {"root/1": "bx"}


def test_finished_leaves_are_kept_for_a_bounded_number_of_missions() -> None:
    """Snapshots of many other missions (robots of earlier runs) neither grow the
    monitor's memory without bound nor drop the shown mission's finished leaves."""
    state = MonitorState("t")
    for topic, sender, kind, body, t in _kept_state("m1")[:2]:
        feed(state, topic, sender, kind, body, t)
    stamp = {"t_ms": 1, "counter": 0, "agent": "old"}
    for i in range(3 * MISSIONS_KEPT):
        body = {"agent": "old", "stamp": stamp, "done": ["root/1"], "mission": f"x{i}"}
        feed(state, "old/state", "old", "node.snapshot", body, 30 + i)
    assert len(state._done) == MISSIONS_KEPT
    assert {f"x{i}" for i in range(2 * MISSIONS_KEPT + 1, 3 * MISSIONS_KEPT)} <= set(state._done)
    assert state.snapshot()["mission"]["done_by"] == {"root/0": "?"}


@pytest.mark.integration
async def test_monitor_once_json_against_a_live_team(mosquitto, tmp_path: Path) -> None:
    # the world at 3x (not 8x): the mission lasts while monitors start one after another
    config = tmp_path / "tea_party_s1.toml"
    text = (REPO / "configs" / "tea_party_s1.toml").read_text()
    config.write_text(text.replace("time_factor = 8.0", "time_factor = 3.0"))
    run = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    seen_node = None
    try:
        async with asyncio.timeout(scaled(120)):
            while seen_node is None:
                out = await asyncio.to_thread(
                    subprocess.run,
                    ops_cmd("monitor", "--broker", mosquitto.url, "--team", "tea-party-s1",
                            "--once", "--json", "--wait", "1", "--require", "pr2"),
                    capture_output=True, text=True, timeout=60,
                )  # fmt: skip
                if out.returncode != 0:  # pr2 not online yet
                    assert run.poll() is None, "the team ended before the monitor saw it"
                    continue
                snap = json.loads(out.stdout)
                robots = {a: snap["agents"][a] for a in ("pr2", "baxter") if a in snap["agents"]}
                seen_node = next((r["node_label"] for r in robots.values() if r["node"]), None)
        agents = snap["agents"]
        assert {"pr2", "baxter", "world", "pr2-driver", "baxter-driver", "recorder"} <= set(agents)
        assert agents["pr2"]["kind"] == agents["baxter"]["kind"] == "robot"
        assert agents["world"]["kind"] == "world" and agents["pr2-driver"]["kind"] == "sim_driver"
        assert {"pr2", "baxter", "world"} <= set(snap["online"])
        assert seen_node.startswith("PLACE(")
        assert snap["mission"]["kind"] == "tasktree" and snap["mission"]["leaves"] == 7
        assert snap["agents"]["pr2"]["progress"]["of"] == 7
        assert snap["rates"].get("heartbeat", 0) > 0
        assert snap["broker"]["version"].startswith("mosquitto version 2")
        assert snap["dropped"] == {}
        code = await asyncio.to_thread(run.wait, 120)
        assert code == 0
        # the text view of the finished team; --require fails for robots that left
        out = subprocess.run(
            ops_cmd("monitor", "--broker", mosquitto.url, "--team", "tea-party-s1", "--once",
                    "--wait", "0.5", "--require", "pr2"),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 1 and "not online: pr2" in out.stderr
        assert "tasktree 6/7 leaves done" in out.stdout and "OFFLINE" in out.stdout
    finally:
        if run.poll() is None:
            run.terminate()
            run.wait(20)


@pytest.mark.integration
@pytest.mark.parametrize("suffix", ["jsonl", "mcap"])
async def test_record_writes_what_the_timeline_reads(
    mosquitto, tmp_path: Path, suffix: str
) -> None:
    out_file = tmp_path / f"rec.{suffix}"
    recorder = subprocess.Popen(
        ops_cmd("record", "--broker", mosquitto.url, "--team", "tea-party-s1", "-o", str(out_file)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        first = await asyncio.to_thread(recorder.stdout.readline)  # connected: it listens
        assert first.startswith("recording team"), first + recorder.stderr.read()
        run = await asyncio.to_thread(
            subprocess.run,
            teamtree_cmd("run", str(REPO / "configs" / "tea_party_s1.toml"), "--broker",
                         mosquitto.url),
            cwd=tmp_path, capture_output=True, timeout=180,
        )  # fmt: skip
        assert run.returncode == 0
    finally:
        recorder.terminate()
        stdout, _ = recorder.communicate(timeout=20)
    assert recorder.returncode == 0 and "recorded" in stdout
    from teamtree.agents.observers.timeline import load_records, node_intervals

    records = load_records(out_file)
    if suffix == "mcap":  # a third-party reader sees the same messages, each on its channel
        from mcap.reader import make_reader

        with out_file.open("rb") as f:
            read = [
                json.loads(m.data) for _, _, m in make_reader(f).iter_messages(log_time_order=False)
            ]
        assert read == records and all(r["retained"] in (True, False) for r in read)
    spans, labels = node_intervals(records)
    assert set(spans) == {"pr2", "baxter"} and len(labels) == 7
    timeline = subprocess.run(
        teamtree_cmd("timeline", str(out_file), "-o", str(tmp_path / "t.png")),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert timeline.returncode == 0 and (tmp_path / "t.png").stat().st_size > 1000
