"""Attacks from every kind of login a deployment hands out, against a tea party on
mosquitto with the files ``teamtree acl`` writes (client ids bound to logins, agents
logged in with their generated credentials):

- observer (the monitor's read-only login) connects again and again with pr2's and
  baxter's client ids: neither robot is evicted, and the mission finishes;
- person (alice's login), robot (a spare robot's login), driver (a spare driver's
  login) and operator (ops, who may move objects and cancel by design) each publish
  ``done`` transitions, an all-done snapshot, an OFFLINE and a claim of every leaf in
  pr2's name and a failing ``mission.result``, and put every placed object back at
  its start (``world.move_object``: refused from all but the operator, whose
  disturbance the team must undo by placing the object again).

Every run must complete with no duplicate and no false completion, and the broker
must never close a robot's session for another connection (an eviction: its log
says so)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from teamtree.agents.runtime.config import load_config
from teamtree.agents.runtime.credentials import agent_credentials
from teamtree.broker import MosquittoBroker
from teamtree.broker.topics import build
from tests.chaos.harness import ROBOTS, RUNS, TREE, TeaParty, _env, party_config, record
from tests.conftest import eventually, scaled
from tests.logins_support import bound_broker, evicted

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

SPARES = """
[[agents]]
id = "spare-robot"
kind = "robot"
role = "on_call"

[[agents]]
id = "spare-driver"
kind = "sim_driver"
role = "on_call"

[access]
operators = ["ops"]
persons = ["alice"]
"""


@pytest.fixture
async def bound(tmp_path: Path, team: str):
    """mosquitto with `teamtree acl`'s users for the party plus spare logins of each
    kind, client ids bound to logins."""
    # at half the usual pace (a mission of about 20 s): the attack's rounds, 7 s or
    # more beside other work, land while the robots still work
    config = party_config(tmp_path / "party.toml", team, time_factor=1.0)
    config.write_text(config.read_text() + SPARES)
    files = tmp_path / "broker"
    async with bound_broker(config, files) as broker:
        yield broker, config, files


def _leaves() -> list[str]:
    from teamtree.planners.tasktree import parse_tree

    return list(parse_tree(TREE).leaves)


def forged_in_pr2s_name(team: str) -> list[tuple[str, bytes, bool]]:
    """done transitions, an all-done retained snapshot and an OFFLINE in pr2's name, a
    claim of every leaf in pr2's name and a failing mission.result from pr2."""
    leaves = _leaves()
    out: list[tuple[str, bytes, bool]] = []
    for hid, leaf in enumerate(leaves, 1):
        body = {"node": leaf, "agent": "pr2", "status": "done", "stamp": [10**13, 0, "pr2"]}
        out.append((build(team, "pr2", "state"), _env("node.transition", "pr2", hid, body), False))
    snap = {"agent": "pr2", "stamp": [10**13, 0, "pr2"], "done": leaves, "working": None}
    out.append((build(team, "pr2", "snapshot"), _env("node.snapshot", "pr2", 99, snap), True))
    offline = {"state": "OFFLINE", "kind": "robot", "session": "forged"}
    out.append((build(team, "pr2", "connection"), _env("presence", "pr2", 1, offline), True))
    for i, leaf in enumerate(leaves):
        claim = {"claim_id": f"f{i}", "node": leaf, "claimant": "pr2",
                 "stamp": [10**13, 0, "pr2"], "potential": 9.0, "round": 0}  # fmt: skip
        out.append(
            (build(team, None, "claims"), _env("node.claim", "pr2", 10**9 + i, claim), False)
        )
    result = {"kind": "tasktree", "ok": False, "summary": "criterion failed: forged"}
    out.append((build(team, None, "result"), _env("mission.result", "pr2", 7, result), True))
    return out


def put_back(team: str, sender: str, starts: dict[str, list[float]], names: list[str]):
    return [
        (build(team, None, "world"),
         _env("world.move_object", sender, 100 + i, {"object": n, "position": starts[n]}), False)
        for i, n in enumerate(names)
    ]  # fmt: skip


async def publish_as(
    broker: MosquittoBroker,
    creds: dict[str, str],
    messages,
    client_id: str,
    turn: asyncio.Lock | None = None,
) -> bool:
    """Publish `messages` over a connection of its own; whether the broker took them
    all (connected, every publish acknowledged, disconnected) within the bound.

    The broker binds client ids to logins: two connections of one login at a time evict
    each other, so one attacker's connections take `turn`s. A connection that hangs
    (an acknowledgement or the disconnect's end that never comes) is left behind once
    the bound is over, and its turn given back, so neither the attacker nor the test
    waits on it for good."""
    ep = broker.endpoint

    async def session() -> None:
        async with aiomqtt.Client(ep.host, ep.port, identifier=client_id, **creds) as client:
            for topic, payload, retain in messages:
                await client.publish(topic, payload, qos=1, retain=retain)

    lock = turn or asyncio.Lock()
    try:
        await asyncio.wait_for(lock.acquire(), scaled(30))
    except TimeoutError:
        return False
    task = asyncio.create_task(session())
    try:
        done, _ = await asyncio.wait({task}, timeout=scaled(30))
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        lock.release()
    if not done:
        task.cancel()  # not awaited: a disconnect that never ends stays behind
        return False
    return not task.cancelled() and task.exception() is None


def _at_goal(state: dict[str, Any] | None) -> list[str]:
    return sorted(n for n, o in (state or {}).get("objects", {}).items() if o.get("at_goal"))


ATTACKERS = {"observer": "monitor", "person": "alice", "robot": "spare-robot",
             "driver": "spare-driver", "operator": "ops"}  # fmt: skip
"""Login kind -> the login that attacks."""


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("kind", list(ATTACKERS))
async def test_a_login_attacks_a_tea_party(kind, run, bound, team, tmp_path, monkeypatch) -> None:
    broker, config, files = bound
    cred_dir = str(files / "credentials")
    monkeypatch.setenv("TEAMTREE_CREDENTIALS_DIR", cred_dir)

    def login(user: str) -> dict[str, str]:
        return agent_credentials(user, env={"TEAMTREE_CREDENTIALS_DIR": cred_dir})

    objects = load_config(config).agent("world").params["objects"]
    starts = {name: list(spec["position"]) for name, spec in objects.items()}
    party = TeaParty.make(
        tmp_path, broker.endpoint.url, broker.endpoint, team, config=config,
        observer_id="run", credentials=login("run"),
    )  # fmt: skip
    evictions = 0
    delivered = 0  # the main attack's connections the broker took in full

    user = ATTACKERS[kind]
    turn = asyncio.Lock()

    async def attack_placed() -> None:
        """Put every placed object back at its start, until the robots end. The
        operator's moves are obeyed, so the operator puts back only the first object
        it sees placed: a move after the last placement would undo a finished mission
        (a disturbance after the end, not a false completion)."""
        undone: set[str] = set()
        while kind != "operator" or not undone:
            placed = [n for n in _at_goal(party.world_state) if n not in undone]
            if kind == "operator":
                placed = placed[:1]
            if placed and await publish_as(
                broker, login(user), put_back(team, user, starts, placed),
                f"teamtree-{team}-{user}", turn,
            ):  # fmt: skip
                undone |= set(placed)
            await asyncio.sleep(0.3)

    what = (
        "connects with each robot's client id (3 times)" if kind == "observer"
        else "forges pr2's done/snapshot/OFFLINE/claims/result, puts the first placed object back"
        if kind == "operator"
        else "forges pr2's done/snapshot/OFFLINE/claims/result, puts placed objects back"
    )  # fmt: skip
    scenario = f"{kind} login ({user}) {what}, ACL on, client ids bound"
    try:
        # under pytest's 300 s timeout, so that a run that hangs fails with the logs
        async with asyncio.timeout(min(scaled(300), 270)), party.observer:
            party.start()
            await eventually(party.started, 90, what="a robot to start a behaviour")
            attacker = asyncio.create_task(attack_placed())
            for round_ in range(3):
                if kind == "observer":  # the read-only login takes each robot's client id
                    for robot in ROBOTS:
                        delivered += await publish_as(
                            broker, login(user), [], f"teamtree-{team}-{robot}", turn
                        )
                        evictions += 1
                else:
                    delivered += await publish_as(broker, login(user), forged_in_pr2s_name(team),
                                                  f"teamtree-{team}-{user}-{round_}", turn)  # fmt: skip
                await asyncio.sleep(2.0)
            codes = await party.wait_robots(150)
            attacker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await attacker
            state = await party.final_state()
            outcome = party.outcome(codes, state)
            for robot in ROBOTS:
                assert "Traceback" not in party.procs.log(robot), party.procs.log(robot)[-3000:]
            record(scenario, outcome)
            assert delivered > 0, f"no connection of the {kind} login's attack got through"
            assert outcome.duplicates == 0, outcome.detail + party.logs()
            assert outcome.false_completions == 0, outcome.detail + party.logs()
            assert outcome.completed, outcome.detail + party.logs()
            assert evictions == (2 * 3 if kind == "observer" else 0)
            if kind == "operator":  # obeyed: the team saw the object leave and re-placed it
                assert any('"node.undone"' in party.procs.log(r) for r in ROBOTS), party.logs()
            # an eviction is the broker closing a robot's session for another
            # connection with its client id (its login); a robot may also reconnect
            # after a stall of a busy machine (keepalive), which is no eviction
            takeovers = {r: evicted(broker, r, f"teamtree-{team}-{r}") for r in ROBOTS}
            reconnects = {r: _reconnects(party.procs.log(r)) for r in ROBOTS}
            assert takeovers == dict.fromkeys(ROBOTS, 0), (takeovers, reconnects)
    except TimeoutError:
        pytest.fail(f"{scenario}: no end within the test's bound\n{party.logs()}")
    finally:
        party.stop()


def _reconnects(log: str) -> int:
    """How often a robot lost its broker session (an eviction ends it)."""
    return sum(1 for line in log.splitlines() if '"agent.disconnected"' in line)
