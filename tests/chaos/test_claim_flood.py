"""A flood of forged claims during a tea party (no access control): in each robot's
name, which its peer would answer one for one, and from thousands of made-up senders,
which the roster drops. The mission must complete with no duplicate and no false
completion, the replies the flood draws (counted at the broker) must stay within the
claim bucket of each sender, and the drops of the made-up senders must be logged in
a bounded number of lines."""

from __future__ import annotations

import asyncio
import json
import tomllib

import aiomqtt
import pytest

from teamtree.agents.runtime.drop_log import DROP_WINDOWS_MAX
from teamtree.agents.treeprotocol.peer_member import claim_limits
from teamtree.broker.topics import build
from teamtree.planners.tasktree import parse_tree
from tests.chaos.harness import ROBOTS, RUNS, TREE, TeaParty, _env, record
from tests.conftest import eventually, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

FORGED_PER_ROBOT = 12_000
"""Claims forged in each robot's name: several times what its bucket lets through in
the whole run (``claim_limits``: 64 at once, then 4 a tick, 80 a second here)."""
GHOSTS = 3 * DROP_WINDOWS_MAX
"""Made-up senders, one claim each: three times the drop log's table."""


def _claim(claimant: str, node: str, i: int) -> dict[str, object]:
    return {"claim_id": f"{claimant}@forged#{i}", "node": node, "claimant": claimant,
            "stamp": [1 + i, 0, claimant], "potential": 9.0, "round": 0}  # fmt: skip


def flood(team: str) -> list[tuple[str, bytes]]:
    """The forged claims, interleaved: in pr2's and baxter's names on the team channel
    (header ids above any the robots use, unique per message), and one from each
    made-up sender."""
    leaves = list(parse_tree(TREE).leaves)
    team_claims = build(team, None, "claims")
    base = 10**15
    out: list[tuple[str, bytes]] = []
    for i in range(FORGED_PER_ROBOT):
        for robot in ROBOTS:
            body = _claim(robot, leaves[i % len(leaves)], i)
            out.append((team_claims, _env("node.claim", robot, base + i, body)))
        if i < GHOSTS:
            ghost = f"ghost-{i}"
            out.append(
                (team_claims, _env("node.claim", ghost, base + i, _claim(ghost, leaves[0], i)))
            )
    return out


class ReplyCounter:
    """Counts, at the broker, the claim replies each robot sends the other."""

    def __init__(self, endpoint, team: str) -> None:
        self.endpoint, self.team = endpoint, team
        self.counts = {robot: 0 for robot in ROBOTS}  # replier -> replies to its peer
        self.ready = asyncio.Event()

    async def run(self) -> None:
        topics = {
            build(self.team, r, "claim_reply", p): r for r in ROBOTS for p in ROBOTS if p != r
        }
        async with aiomqtt.Client(self.endpoint.host, self.endpoint.port,
                                  identifier=f"{self.team}-counter") as client:  # fmt: skip
            for topic in topics:
                await client.subscribe(topic, qos=0)
            self.ready.set()
            async for message in client.messages:
                self.counts[topics[str(message.topic)]] += 1


def _drop_lines(log: str, reason: str) -> int:
    lines = 0
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "message.dropped" and entry.get("reason") == reason:
            lines += 1
    return lines


@pytest.mark.parametrize("run", range(RUNS))
async def test_a_claim_flood_is_answered_within_each_senders_bucket(
    run, mosquitto, team, tmp_path
) -> None:
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    config = tomllib.loads(party.procs.config.read_text())
    rate, burst = claim_limits(config["runtime"]["tick_hz"], len(parse_tree(TREE).leaves))
    messages = flood(team)
    counter = ReplyCounter(mosquitto.endpoint, team)
    counting = asyncio.create_task(counter.run())
    try:
        async with asyncio.timeout(scaled(300)), party.observer:
            await asyncio.wait_for(counter.ready.wait(), 30)
            party.start()
            await eventually(lambda: party.working("pr2") or party.working("baxter"), 90,
                             what="a robot to start a behaviour")  # fmt: skip
            loop = asyncio.get_running_loop()
            before = dict(counter.counts)  # honest replies before the flood
            started = loop.time()
            async with aiomqtt.Client(mosquitto.endpoint.host, mosquitto.endpoint.port,
                                      identifier=f"{team}-mallory") as evil:  # fmt: skip
                for topic, payload in messages:  # bounded: every message once
                    await evil.publish(topic, payload, qos=0)
            codes = await party.wait_robots(200)
            window = loop.time() - started
            await asyncio.sleep(1.0)  # the last replies reach the counter
            state = await party.final_state()
            outcome = party.outcome(codes, state)
            record("claim flood: 12k forged claims in each robot's name + 3k made-up senders "
                   "(no access control)", outcome)  # fmt: skip
            logs = party.logs()
            assert outcome.duplicates == 0, outcome.detail + logs
            assert outcome.false_completions == 0, outcome.detail + logs
            assert outcome.completed, outcome.detail + logs
            # every reply a robot sent its peer since the flood began (honest or drawn
            # by the flood) came out of that peer's bucket: a full one, then `rate` a
            # second; and the peer's one pending claim at the start may still be answered
            bound = burst + rate * window + 1
            sent = {robot: counter.counts[robot] - before[robot] for robot in ROBOTS}
            print(f"claim replies {sent} in {window:.1f} s, bound {bound:.0f}")
            for robot, replies in sent.items():
                assert replies <= bound, (
                    f"{robot} sent {replies} claim replies in {window:.0f} s to a flood of "
                    f"{FORGED_PER_ROBOT} forged claims (bucket bound {bound:.0f}): {sent}"
                )
            for robot in ROBOTS:
                log = party.procs.log(robot)
                assert _drop_lines(log, "rate_limited") >= 1, log[-3000:]
                assert _drop_lines(log, "not_member") <= DROP_WINDOWS_MAX + 50, (
                    f"{robot} logged a line per made-up sender"
                )
                assert "Traceback" not in log, log[-3000:]
    finally:
        counting.cancel()
        await asyncio.gather(counting, return_exceptions=True)
        party.stop()
