"""What a flood of messages from made-up senders or ids costs an agent in memory: the
drop log's table and the recorder's in-memory records stay bounded however many
come (the receive path, fed directly)."""

from __future__ import annotations

import asyncio

import structlog

from teamtree.agents import Agent
from teamtree.agents.observers.recorder import SUMMARY_MAX, RecorderAgent
from teamtree.agents.runtime.drop_log import DROP_OTHERS, DROP_WINDOWS_MAX
from teamtree.broker import Endpoint, Envelope, HlcStamp, Incoming, encode
from teamtree.broker.topics import build, parse

TEAM = "t1"


def _claim(sender: str, i: int) -> Envelope:
    body = {"claim_id": f"{sender}#{i}", "node": "root/0", "claimant": sender,
            "stamp": [i, 0, sender], "potential": 1.0, "round": 0}  # fmt: skip
    return Envelope("node.claim", sender, i, 1, HlcStamp(1, 0, sender), body)


def test_drops_of_thousands_of_made_up_senders_keep_a_bounded_table() -> None:
    agent = Agent("obs", team=TEAM, endpoint=Endpoint("127.0.0.1", 1))
    senders = 3 * DROP_WINDOWS_MAX

    async def flood() -> None:
        for i in range(senders):
            sender = f"ghost-{i}"
            junk = b"\xc1" + str(i).encode()  # not msgpack: dropped as malformed
            await agent.receiver.receive(Incoming(build(TEAM, sender, "claims"), junk, False, 1))

    with structlog.testing.capture_logs() as logs:
        asyncio.run(flood())
    assert agent.stats["dropped.malformed"] == senders
    assert len(agent.drops.windows) <= DROP_WINDOWS_MAX + 1
    lines = [entry for entry in logs if entry["event"] == "message.dropped"]
    assert len(lines) <= DROP_WINDOWS_MAX + 1, "a line per made-up sender"
    assert lines[-1]["sender"] == DROP_OTHERS


def test_the_recorder_keeps_in_memory_only_what_its_summary_reads(tmp_path) -> None:
    recorder = RecorderAgent(
        "recorder", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), path=str(tmp_path / "r.jsonl")
    )
    topic = parse(build(TEAM, None, "claims"))
    transition = Envelope(
        "node.transition", "pr2", 1, 1, HlcStamp(1, 0, "pr2"),
        {"node": "root/0", "agent": "pr2", "status": "working", "stamp": [1, 0, "pr2"]},
    )  # fmt: skip

    async def flood() -> None:
        for i in range(20_000):
            await recorder._record(_claim(f"ghost-{i % 50}", i), topic)
        await recorder._record(transition, parse(build(TEAM, "pr2", "state")))

    asyncio.run(flood())
    assert recorder.recorded == 20_001
    assert [r["kind"] for r in recorder.records] == ["node.transition"]
    assert SUMMARY_MAX >= 100_000
    assert encode(transition)  # the kept record is a real one


def test_the_queue_keeps_a_bounded_table_and_refuses_beyond_its_length() -> None:
    from teamtree.agents.missions import queue as mq
    from teamtree.agents.missions.protocol import MissionRow

    replies: list[tuple[str, dict]] = []
    published: list[dict] = []

    async def run() -> mq.MissionQueue:
        queue = mq.MissionQueue("queue", team=TEAM, endpoint=Endpoint("127.0.0.1", 1),
                                config_path="x.toml", members=["pr2"])  # fmt: skip

        async def reply(request: Envelope, kind: str, body: object = None) -> None:
            replies.append((kind, body))  # type: ignore[arg-type]

        async def publish(channel: str, kind: str, body: dict, **kwargs: object) -> None:
            published.append(body)

        queue.reply = reply  # type: ignore[method-assign]
        queue.publish = publish  # type: ignore[method-assign]
        for i in range(3 * mq.MAX_ENDED_ROWS):
            row = MissionRow(f"m{i:04d}", "tasktree", reason="x" * 10_000)
            queue._end(row, "failed", "x" * 10_000)
            queue.rows[row.id] = row
        for i in range(mq.MAX_QUEUED):
            queue.rows[f"q{i:04d}"] = MissionRow(f"q{i:04d}", "tasktree")
            queue.queue.append(f"q{i:04d}")
        await queue._publish_table()
        ask = Envelope("mission.submit", "cli", 1, 1, HlcStamp(1, 0, "cli"),
                       {"mission": {"kind": "tasktree", "tree": "cup"}}, "cli", "c1")  # fmt: skip
        await queue._on_submit(ask, parse(build(TEAM, None, "missions")))
        return queue

    queue = asyncio.run(run())
    table = [body for body in published if "missions" in body][-1]  # not a mission.status
    rows = table["missions"]
    assert len(rows) == mq.MAX_ENDED_ROWS + mq.MAX_QUEUED
    assert rows[0]["id"] == f"m{2 * mq.MAX_ENDED_ROWS:04d}", "the oldest ended go first"
    assert max(len(r["reason"]) for r in rows) <= mq.MAX_REASON
    assert len(encode(Envelope("mission.table", "queue", 1, 1, HlcStamp(1, 0, "queue"),
                               table))) < 64 * 1024  # fmt: skip
    assert [k for k, _ in replies] == ["mission.rejected"]
    assert f"holds {mq.MAX_QUEUED} missions" in replies[0][1]["error"]
    assert len(queue.queue) == mq.MAX_QUEUED
