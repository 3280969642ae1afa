"""The allocation service over real brokers: answers equal an in-process solve, bad
requests get an error reply, replicas share the load and a killed one loses nothing."""

from __future__ import annotations

import asyncio
import math
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from teamtree.agents import Agent, RuntimeSettings
from teamtree.agents.allocation.allocator import (
    ALLOCATE,
    SCHEDULE,
    SOLVE,
    AllocationRefused,
    request_allocation,
    solve_request,
)
from tests.conftest import AgentProcs, BrokerUnderTest, eventually, scaled, write_config

pytestmark = pytest.mark.integration

RUNTIME = RuntimeSettings(tick_hz=20, heartbeat_s=0.2, keepalive_s=1, request_timeout_s=3.0)

STATES = ["placed_correctly"] * 3 + ["misplaced", "initial"] + ["initial"] * 5
STATES += (
    ["assigned_to_human"] + ["initial"] * 4 + ["assigned_to_robot_correctly"] + ["initial"] * 4
)
KITTING = {
    "problem": {
        "form": "kitting",
        "states": STATES,
        "p_follow": 0.7,
        "p_error": 0.2,
        "in_progress": {"task": 5, "action": "H1", "remaining": 6.0},
    }
}
GENERAL = {
    "problem": {
        "form": "general",
        "tasks": ["a", "b", "c", "d", "e"],
        "agents": ["h", "r1", "r2"],
        "cost": [[3, 5, None], [2, 4, 4], [6, 3, 3], [1, None, 2], [4, 4, 5]],
        "at_least_one": [["r2", ["b", "c"]]],
        "schedule": {"precedence": [["a", "b"], ["b", "c"], ["d", "e"]]},
    }
}
SCHEDULE_ONLY = {
    "problem": {
        "tasks": [
            {"id": "x", "agent": "h", "duration": 3.0},
            {"id": "y", "agent": "r", "duration": 2.0},
            {"id": "z", "agent": "r", "duration": 4.0, "release": 1.0},
        ],
        "precedence": [["x", "z"]],
    }
}


def allocators(*ids: str, shared: bool = False) -> str:
    return "\n".join(
        f'[[agents]]\nid = "{i}"\nkind = "allocator"\nrole = "service"\n'
        f"shared = {'true' if shared else 'false'}\n"
        for i in ids
    )


def client(broker: BrokerUnderTest, team: str) -> Agent:
    return Agent("client", team=team, endpoint=broker.endpoint, runtime=RUNTIME)


def start(tmp_path: Path, broker: BrokerUnderTest, team: str, made: list, *ids: str, shared=False):
    config = write_config(tmp_path / "team.toml", team, allocators(*ids, shared=shared))
    procs = AgentProcs(config, broker.url, team, tmp_path)
    made.append(procs)
    for i in ids:
        procs.start(i)
    return procs


def same_answer(remote: dict, local: dict) -> None:
    assert remote["status"] == local["status"]
    assert math.isclose(remote["objective"], local["objective"], rel_tol=1e-6, abs_tol=1e-6)
    for part in ("allocation", "schedule"):
        if part in local:
            assert math.isclose(
                remote[part]["objective"], local[part]["objective"], rel_tol=1e-6, abs_tol=1e-6
            )
    if "allocation" in local:
        assert remote["allocation"]["assignment"] == local["allocation"]["assignment"]
    if "makespan" in local:
        assert math.isclose(remote["makespan"], local["makespan"], abs_tol=1e-6)


async def test_service_answers_like_an_in_process_solve(
    broker: BrokerUnderTest, team: str, tmp_path: Path, agent_procs: list
) -> None:
    procs = start(tmp_path, broker, team, agent_procs, "alloc")
    async with asyncio.timeout(scaled(40)), client(broker, team) as me:
        await eventually(lambda: "alloc" in me.team_view.online("allocator"), 25, what="online")
        for kind, body in [(SOLVE, KITTING), (SOLVE, GENERAL), (ALLOCATE, GENERAL),
                           (ALLOCATE, KITTING), (SCHEDULE, SCHEDULE_ONLY)]:  # fmt: skip
            reply = await request_allocation(me, kind, body, timeout=10)
            assert reply.kind == "allocation.result" and reply.sender == "alloc"
            answer = reply.body
            for key in ("solver", "status", "objective", "gap", "solve_time", "warm_start"):
                assert key in answer, key
            same_answer(answer, solve_request(kind, body, 10.0))
        # the warm start sent back gives the same optimum
        first = (await request_allocation(me, SOLVE, KITTING, timeout=10)).body
        warm = (
            await request_allocation(
                me, SOLVE, {**KITTING, "warm_start": first["warm_start"]}, timeout=10
            )
        ).body
        assert math.isclose(warm["objective"], first["objective"], abs_tol=1e-6)
        # a retry with the same request id is answered from the first solve
        once = await request_allocation(me, SOLVE, GENERAL, timeout=10, request_id="r-1")
        again = await request_allocation(me, SOLVE, GENERAL, timeout=10, request_id="r-1")
        assert once.corr != again.corr and once.body == again.body
        # ... and one that arrives while the first is being solved joins that solve
        twins = await asyncio.gather(
            *(request_allocation(me, SOLVE, KITTING, timeout=10, request_id="r-2") for _ in "ab")
        )
        assert twins[0].corr != twins[1].corr and twins[0].body == twins[1].body
        # malformed requests: an error reply naming the field; the service survives
        bad = [
            ({"problem": {**KITTING["problem"], "p_follow": 1.5}}, "problem.p_follow"),
            ({"problem": {**KITTING["problem"], "states": ["initial"] * 3}}, "problem.states"),
            ({"problem": {**GENERAL["problem"], "cost": [[1, 2, 3]]}}, "problem.cost"),
            ({"problem": {"form": "nonsense"}}, "problem.form"),
            ({"problem": "not a map"}, "problem"),
        ]
        for body, field in bad:
            with pytest.raises(AllocationRefused) as info:
                await request_allocation(me, SOLVE, body, timeout=10)
            assert info.value.code == "bad_request" and info.value.field == field
        with pytest.raises(AllocationRefused) as info:  # body that is not a map at all
            await request_allocation(me, SOLVE, {"problem": [1, 2]}, timeout=10)
        assert info.value.code == "bad_request"
        with pytest.raises(AllocationRefused) as info:
            await request_allocation(
                me,
                ALLOCATE,
                {"problem": {**GENERAL["problem"], "cost": [[None] * 3] * 5}},
                timeout=10,
            )
        assert info.value.code == "no_capable_agent"
        reply = await request_allocation(me, SOLVE, KITTING, timeout=10)
        assert reply.kind == "allocation.result"
    assert procs.procs["alloc"].poll() is None, procs.log("alloc")[-2000:]


async def test_replicas_share_the_load_and_a_killed_one_loses_no_request(
    mosquitto: BrokerUnderTest, team: str, tmp_path: Path, agent_procs: list
) -> None:
    procs = start(tmp_path, mosquitto, team, agent_procs, "alloc-a", "alloc-b", shared=True)
    async with asyncio.timeout(scaled(120)), client(mosquitto, team) as me:
        await eventually(
            lambda: {"alloc-a", "alloc-b"} <= me.team_view.online("allocator"), 25, what="online"
        )
        replies = await asyncio.gather(
            *(request_allocation(me, SOLVE, GENERAL, timeout=10) for _ in range(16))
        )
        by = Counter(r.sender for r in replies)
        assert set(by) == {"alloc-a", "alloc-b"}, by  # both answered some; each answered once
        assert sum(by.values()) == 16

        # four requesters' worth of load, so some requests are queued or being solved at
        # the replica when it dies; they are retried with the same id and answered
        answered: list[str] = []

        async def stream(n: int) -> None:
            for _ in range(n):
                reply = await request_allocation(
                    me, SOLVE, KITTING, timeout=scaled(1.0), attempts=8
                )
                answered.append(reply.sender)

        tasks = [asyncio.create_task(stream(10)) for _ in range(4)]
        await eventually(lambda: len(answered) >= 8, 20, what="first answers")
        procs.kill("alloc-a")
        killed_at = len(answered)
        await asyncio.gather(*tasks)
        assert len(answered) == 40
        assert set(answered[killed_at + 4 :]) == {"alloc-b"}


def job_shop(jobs: int = 15, machines: int = 8, seed: int = 0) -> dict:
    """A schedule-only request HiGHS cannot prove optimal in seconds."""
    rng = random.Random(seed)
    tasks, precedence = [], []
    for j in range(jobs):
        order = list(range(machines))
        rng.shuffle(order)
        prev = None
        for m in order:
            tid = f"j{j}m{m}"
            tasks.append({"id": tid, "agent": f"m{m}", "duration": rng.randint(1, 10)})
            if prev:
                precedence.append([prev, tid])
            prev = tid
    return {
        "problem": {"tasks": tasks, "precedence": precedence},
        "options": {"solver": "highs", "schedule": {"time_limit": 60, "mip_gap": 0.0}},
    }


async def test_a_long_solve_is_bounded_by_the_deadline_and_the_service_stays_live(
    mosquitto: BrokerUnderTest, team: str, tmp_path: Path, agent_procs: list
) -> None:
    start(tmp_path, mosquitto, team, agent_procs, "alloc")
    async with asyncio.timeout(scaled(30)), client(mosquitto, team) as me:
        beats: list[float] = []

        async def on_heartbeat(env, topic) -> None:
            if env.sender == "alloc":
                beats.append(asyncio.get_running_loop().time())

        me.on_agents("heartbeat", on_heartbeat)
        await eventually(lambda: "alloc" in me.team_view.online("allocator"), 25, what="online")
        loop = asyncio.get_running_loop()
        # 2 s on an idle machine; the solver gets most of it and building the model and
        # the answer the rest (SOLVE_SHARE), which takes longer on a busy machine
        timeout = scaled(2.0)
        sent = loop.time()
        reply = await request_allocation(me, SCHEDULE, job_shop(), timeout=timeout, attempts=1)
        took = loop.time() - sent
        assert reply.body["status"] == "feasible" and reply.body["gap"] > 0
        assert took < timeout
        during = [b for b in beats if sent < b < sent + took]
        assert len(during) >= 0.5 * took / RUNTIME.heartbeat_s, (len(during), took)


STANDALONE = """
import argparse, asyncio, sys
from teamtree.agents.cli.study import register
parser = argparse.ArgumentParser(prog="teamtree")
handlers = register(parser.add_subparsers(dest="command", required=True))
args = parser.parse_args(sys.argv[1:])
sys.exit(asyncio.run(handlers[args.command](args)))
"""


async def test_standalone_allocator_command(mosquitto: BrokerUnderTest, team: str) -> None:
    """``teamtree allocator`` (through ``register``, as the CLI wires it) serves and stops."""
    proc = subprocess.Popen(
        [sys.executable, "-c", STANDALONE, "allocator", "--broker", mosquitto.url,
         "--team", team, "--id", "solo", "--log-format", "json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        async with asyncio.timeout(scaled(30)), client(mosquitto, team) as me:
            await eventually(lambda: "solo" in me.team_view.online("allocator"), 25, what="up")
            reply = await request_allocation(me, SOLVE, GENERAL, timeout=10)
            assert reply.sender == "solo" and reply.kind == "allocation.result"
    finally:
        proc.terminate()
        _, err = await asyncio.to_thread(proc.communicate, timeout=10)
    assert proc.returncode == 0, err.decode()[-2000:]
