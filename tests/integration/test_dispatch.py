"""Missions given to a running team: submit, list, cancel (the mission queue).

The serving tea-party team runs as ``teamtree run`` (a process tree) on mosquitto;
missions are submitted with the ``teamtree submit`` command; the outcome is judged
from the queue's table and the recorder's file.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.missions.protocol import CANCEL, CHANNEL, LIST, REJECTED, SUBMIT
from tests.conftest import REPO, slowness, teamtree_cmd

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TEAM = "tea-party-queue"


def submit(tmp_path: Path, url: str, name: str, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return subprocess.run(
        teamtree_cmd("submit", str(path), "--broker", url, "--team", TEAM, "--timeout", "20"),
        capture_output=True, text=True, timeout=90, cwd=tmp_path,
    )  # fmt: skip


def tree_mission(tree: str, members: object = None) -> str:
    text = f'[mission]\nkind = "tasktree"\ntimeout_s = 150\ntree = "{tree}"\n'
    return text + (f"members = {json.dumps(members)}\n" if members is not None else "")


def overlap(a: dict, b: dict) -> bool:
    """Whether two ended missions ran at the same time."""
    return a["started_ms"] < b["ended_ms"] and b["started_ms"] < a["ended_ms"]


async def table(client: Agent) -> dict[str, dict]:
    reply = await client.request(CHANNEL, LIST, {}, timeout=20)
    return {row["id"]: row for row in reply.body["missions"]}


async def until(client: Agent, ids: list[str], states: set[str], within: float = 400) -> dict:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        rows = await table(client)
        if all(rows.get(i, {}).get("state") in states for i in ids):
            return rows
        await asyncio.sleep(1.0)
    raise AssertionError(f"missions {ids} not {states} in {within} s: {await table(client)}")


@pytest.mark.timeout(900)  # five missions; minutes on a loaded machine
async def test_a_running_team_takes_missions_and_cancels_one(tmp_path: Path, mosquitto) -> None:
    # the world slower on a loaded machine, where each `teamtree submit` takes seconds:
    # the first one-robot mission must still run when the second is submitted
    config = tmp_path / "tea_party_queue.toml"
    text = (REPO / "configs" / "tea_party_queue.toml").read_text()
    config.write_text(text.replace("time_factor = 8.0", f"time_factor = {8.0 / slowness():.3f}"))
    team = subprocess.Popen(
        teamtree_cmd("run", str(config), "--broker", mosquitto.url),
        stdout=(tmp_path / "team.log").open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    client = Agent("test-client", team=TEAM, endpoint=mosquitto.endpoint,
                   runtime=RuntimeSettings(request_timeout_s=20))  # fmt: skip
    working: dict[str, asyncio.Event] = {}  # mission -> one of its robots works a node

    async def tap(env, topic) -> None:
        body = env.body if isinstance(env.body, dict) else {}
        if env.kind == "node.transition" and body.get("status") == "working":
            working.setdefault(str(body.get("mission")), asyncio.Event()).set()

    client.on_any(tap)
    try:
        async with client:
            await client.wait_connected(20)
            deadline = time.monotonic() + 180  # services start slowly on a loaded machine
            while not client.team_view.online("mission_queue") and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            # two one-robot missions run at once; the third takes the robot the
            # first one to end frees; the fourth needs both robots, so it waits
            # (each object once: an object already at its goal is done for a later mission;
            # the third's burger, because either robot may be the one freed first, and the
            # PR2 cannot grasp the orange: a queue does not pick members by what they can do)
            trees = [("THEN(cup, sugar)", 1), ("tea_pot", 1), ("burger", 1), ("sandwich", None)]
            ids = []
            for n, (tree, members) in enumerate(trees):
                out = await asyncio.to_thread(
                    submit, tmp_path, mosquitto.url, f"m{n}", tree_mission(tree, members)
                )
                assert out.returncode == 0, (
                    out.stdout + out.stderr + (tmp_path / "team.log").read_text()[-3000:]
                )
                ids.append(out.stdout.strip().splitlines()[-1])
            before = await table(client)
            bad = await asyncio.to_thread(  # the command: exit 2 naming the field
                submit, tmp_path, mosquitto.url, "spoon", tree_mission("THEN(cup, spoon)")
            )
            assert bad.returncode == 2 and "[mission.tree]" in bad.stderr, bad.stderr
            for mission, field in [  # the protocol: mission.rejected naming the field
                ({"kind": "tasktree", "tree": "cup", "members": ["r2d2"]}, "mission.members"),
                ({"kind": "tasktree", "tree": "cup", "members": 3}, "mission.members"),
                ({"kind": "ltl", "formula": "F a"}, "mission.kind"),
                ({"kind": "tasktree", "tree": "cup", "robots": 1}, "mission.robots"),
            ]:
                reply = await client.request(CHANNEL, SUBMIT, {"mission": mission}, timeout=20)
                assert reply.kind == REJECTED and reply.body["field"] == field, reply.body
            after = await table(client)
            assert set(after) == set(before), "a rejected mission changed the table"

            rows = await until(client, ids, {"done", "failed", "cancelled"})
            assert [rows[i]["state"] for i in ids] == ["done"] * 4, rows
            first, second, third, both = (rows[i] for i in ids)
            assert overlap(first, second), f"two one-robot missions did not run at once: {rows}"
            assert set(first["members"]).isdisjoint(second["members"]), rows
            assert len(third["members"]) == 1 and third["started_ms"] >= min(
                first["ended_ms"], second["ended_ms"]
            ), rows
            assert sorted(both["members"]) == ["baxter", "pr2"], rows
            span = (max(r["ended_ms"] for r in rows.values() if r["id"] in ids)
                    - min(rows[i]["started_ms"] for i in ids)) / 1000  # fmt: skip
            work = sum(rows[i]["ended_ms"] - rows[i]["started_ms"] for i in ids) / 1000
            print(f"4 missions: {work:.1f} s of mission time in {span:.1f} s of wall time")
            for a in ids:  # no body in two missions at once
                for b in ids:
                    if a < b and overlap(rows[a], rows[b]):
                        assert set(rows[a]["members"]).isdisjoint(rows[b]["members"]), rows

            out = await asyncio.to_thread(
                submit,
                tmp_path,
                mosquitto.url,
                "long",
                tree_mission("THEN(apple, orange)", 1),  # both free: the queue takes baxter
            )
            long_id = out.stdout.strip().splitlines()[-1]
            # a behaviour of it is under way
            await asyncio.wait_for(working.setdefault(long_id, asyncio.Event()).wait(), 120)
            reply = await client.request(CHANNEL, CANCEL, {"id": long_id}, timeout=20)
            cancelled_ms = reply.ts
            assert reply.body["state"] == "cancelling"
            rows = await until(client, [long_id], {"cancelled"}, within=60)
            assert rows[long_id]["ended_ms"] is not None
            await asyncio.sleep(3.0)
    finally:
        team.send_signal(signal.SIGINT)
        team.wait(60)
    records = [
        json.loads(line)
        for line in (tmp_path / "runs" / "tea_party_queue.jsonl").read_text().splitlines()
    ]
    transitions = [r for r in records if r["kind"] == "node.transition"]
    for mission in ids:
        by = {
            r["body"]["agent"] for r in transitions
            if r["body"].get("mission") == mission and r["body"]["status"] == "working"
        }  # fmt: skip
        assert by <= set(rows[mission]["members"]), f"{mission} worked by {by}: {rows[mission]}"
        done = Counter(
            r["body"]["node"] for r in transitions
            if r["body"].get("mission") == mission and r["body"]["status"] == "done"
        )  # fmt: skip
        assert done and max(done.values()) == 1, f"{mission}: a node done twice: {done}"
    started_late = [
        r for r in transitions
        if r["body"].get("mission") == long_id and r["body"]["status"] == "working"
        and r["ts"] > cancelled_ms
    ]  # fmt: skip
    assert started_late == [], (
        f"behaviours of the cancelled mission ran after cancel: {started_late}"
    )
    cancels = [  # the driver reports the behaviour it was running as cancelled
        r for r in records
        if r["kind"].startswith("behaviour.") and r["ts"] >= cancelled_ms
        and "cancel" in json.dumps(r["body"])
    ]  # fmt: skip
    assert cancels, "the driver did not cancel the behaviour in progress"


def test_a_hospital_team_takes_ltl_missions_and_fails_an_impossible_one(
    tmp_path: Path, mosquitto
) -> None:
    """LTL missions go to the planner and robots a hospital queue serves: study 1's
    deliveries succeed (exit 0), a formula no robot can satisfy fails at once with the
    planner's reason, and submissions the members cannot read are refused naming the
    field."""
    url = mosquitto.url
    team = subprocess.Popen(
        teamtree_cmd("run", str(REPO / "configs" / "hospital_queue.toml"), "--broker", url),
        stdout=(tmp_path / "team.log").open("w"), stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip

    def submit_ltl(name: str, text: str, *flags: str) -> subprocess.CompletedProcess[str]:
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        return subprocess.run(
            teamtree_cmd("submit", str(path), "--broker", url, "--team", "hospital-queue",
                         "--timeout", "60", *flags),
            capture_output=True, text=True, timeout=180, cwd=tmp_path,
        )  # fmt: skip

    try:
        for name, text, field in [
            ("scenario", '[mission]\nkind = "ltl"\nscenario = "study9"\n', "[mission.scenario]"),
            ("formula", '[mission]\nkind = "ltl"\nformula = "<> (p3"\n', "[mission.formula]"),
            ("tree", '[mission]\nkind = "tasktree"\ntree = "cup"\n', "[mission.kind]"),
            ("members", '[mission]\nkind = "ltl"\nscenario = "study1"\nmembers = 1\n',
             "[mission.members]"),
        ]:  # fmt: skip
            bad = submit_ltl(name, text)
            log = (tmp_path / "team.log").read_text()[-2000:]
            assert bad.returncode == 2 and field in bad.stderr, (name, bad.stderr, log)
        # a formula the team can satisfy (study 1's deliveries) succeeds, exit 0
        study1 = (REPO / "configs" / "missions" / "hospital_study1.toml").read_text()
        good = submit_ltl("study1", study1, "--wait")
        assert good.returncode == 0, good.stdout + good.stderr
        done = good.stdout.splitlines()[0].strip()
        assert f"{done}: done in" in good.stdout, good.stdout
        started = time.monotonic()
        out = submit_ltl(
            "never",
            '[mission]\nkind = "ltl"\ntimeout_s = 60\ntime_factor = 25.0\n'
            'formula = "<> (p3 && standby) && [] !p3"\n',
            "--wait",
        )
        took = time.monotonic() - started
        assert out.returncode == 1, out.stdout + out.stderr
        mission = out.stdout.splitlines()[0].strip()
        # the first agent to exit non-zero is quoted: the planner or a robot it told
        assert ": failed " in out.stdout and "impossible" in out.stdout.lower(), out.stdout
        assert "no word over the labels" in out.stdout, out.stdout
        assert "timed out" not in out.stdout, "the queue waited for the timeout"
        print(f"the impossible mission failed in {took:.1f} s (timeout 60 s)")
        listing = subprocess.run(
            teamtree_cmd("missions", "--broker", url, "--team", "hospital-queue"),
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        row = next(line for line in listing.stdout.splitlines() if line.startswith(mission))
        assert " ltl " in row and " failed " in row and "A1,DR,planner" in row, listing.stdout
        row = next(line for line in listing.stdout.splitlines() if line.startswith(done))
        assert " ltl " in row and " done " in row, listing.stdout
    finally:
        team.send_signal(signal.SIGINT)
        team.wait(60)
