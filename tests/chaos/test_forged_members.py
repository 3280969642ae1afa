"""Chaos: forged messages in team members' own names, and a world undone behind the
team's back, on mosquitto without access control (anyone may publish anything).

- Done transitions for every leaf in pr2's and baxter's names and retained all-done
  snapshots: no robot may end its mission while the world shows objects away from
  their goals (done is what the world shows, not what a peer says).
- Objects put back at their start ~1 s after each placement: the team re-opens those
  leaves and does them again; never success with objects away from their goals.
- An ``inactive`` transition and an empty snapshot in the working robot's name, and an
  empty interest declaration dated 50 s ahead: the other robot must not take the
  running leaf (no ``double_run`` / ``double_hold`` in the world).

Each run is judged by the world's own state (``TeaParty.outcome``).
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from teamtree.broker.hlc import wall_ms
from teamtree.broker.topics import build
from teamtree.planners.tasktree import parse_tree
from tests.chaos.harness import (
    EITHER,
    NEEDED,
    ROBOTS,
    RUNS,
    TREE,
    Outcome,
    TeaParty,
    _env,
    record,
    send_raw,
    survivor_config,
)
from tests.conftest import eventually, scaled

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

_hids = itertools.count(10**15)
"""Header ids of the forged messages (the receivers de-duplicate per sender session)."""


def _forged_done(team: str) -> list[tuple[str, bytes, bool]]:
    """A done transition per leaf in each robot's name, and a retained all-done
    snapshot in each robot's name, stamped now."""
    leaves = list(parse_tree(TREE).leaves)
    out = []
    for robot in ROBOTS:
        now = wall_ms()
        for i, leaf in enumerate(leaves):
            body = {"node": leaf, "agent": robot, "status": "done", "stamp": [now, i, robot]}
            env = _env("node.transition", robot, next(_hids), body)
            out.append((build(team, robot, "state"), env, False))
        snap = {"agent": robot, "stamp": [now, 99, robot], "done": leaves, "working": None}
        env = _env("node.snapshot", robot, next(_hids), snap)
        out.append((build(team, robot, "snapshot"), env, True))
    return out


def _forged_release(team: str, robot: str, leaf: str) -> list[tuple[str, bytes, bool]]:
    """`robot` 'lets go' of `leaf`: an inactive transition, an empty snapshot, and an
    empty interest declaration dated 50 s ahead (its envelope is dated now: one dated
    ahead too would move the clocks of the robots that merge it, which makes the
    next forgeries look stale)."""
    now = wall_ms()
    ahead = now + 50_000
    inactive = {"node": leaf, "agent": robot, "status": "inactive", "stamp": [now, 50, robot]}
    snap = {"agent": robot, "stamp": [now, 51, robot], "done": [], "working": None}
    interest = {"agent": robot, "stamp": [ahead, 0, robot], "leaves": []}
    return [
        (build(team, robot, "state"), _env("node.transition", robot, next(_hids), inactive), False),
        (build(team, robot, "snapshot"), _env("node.snapshot", robot, next(_hids), snap), True),
        (
            build(team, None, "interest"),
            _env("node.interest", robot, next(_hids), interest),
            False,
        ),
    ]


def _at_goal(party: TeaParty) -> set[str]:
    objects = (party.world_state or {}).get("objects", {})
    return {name for name, o in objects.items() if o.get("at_goal")}


def _units_left(at_goal: set[str]) -> int:
    """The mission's needed placements the world does not show (the OR counts once)."""
    return len(set(NEEDED) - at_goal) + (not set(EITHER) & at_goal)


async def _judge(party: TeaParty, scenario: str, timeout: float = 150.0) -> Outcome:
    """No run may end in a false completion or a duplicate; a run either completes for
    real or its robots fail (never exit 0 with the world not done)."""
    codes = await party.wait_robots(timeout)
    state = await party.final_state()
    outcome = party.outcome(codes, state)
    print(f"{scenario}: {outcome}")
    record(scenario, outcome)
    assert outcome.false_completions == 0, outcome.detail + party.logs()
    assert outcome.duplicates == 0, outcome.detail + party.logs()
    return outcome


@pytest.mark.parametrize("run", range(RUNS))
async def test_forged_done_in_members_names_is_not_believed(run, mosquitto, team, tmp_path):
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            await eventually(lambda: party.working("pr2"), 90, what="pr2 to start a behaviour")
            await send_raw(mosquitto.endpoint, team, _forged_done(team))
            await asyncio.sleep(3.0)
            await send_raw(mosquitto.endpoint, team, _forged_done(team))
            outcome = await _judge(party, "forged done + all-done snapshots in members' names")
            assert outcome.completed, outcome.detail + party.logs()
    finally:
        party.stop()


@pytest.mark.parametrize("run", range(RUNS))
async def test_objects_put_back_after_placement_are_done_again(run, mosquitto, team, tmp_path):
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team)
    put_back: list[str] = []

    async def undo() -> None:
        """Put each object back at its start ~1 s after it reaches its goal, while the
        mission is far from its end (3 or more placements left), once per object."""
        await eventually(lambda: party.world_state, 60, what="the world's state")
        start = {n: o["position"] for n, o in party.world_state["objects"].items()}
        seen: set[str] = set()
        while True:
            placed = _at_goal(party) - seen
            if not placed:
                await asyncio.sleep(0.1)
                continue
            await asyncio.sleep(1.0)
            for name in sorted(placed):
                seen.add(name)
                if _units_left(_at_goal(party)) < 3 or name not in _at_goal(party):
                    continue
                body = {"object": name, "position": start[name]}
                env = _env("world.move_object", "alice", next(_hids), body)
                await send_raw(mosquitto.endpoint, team, [(build(team, None, "world"), env, False)])
                put_back.append(name)

    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            attacker = asyncio.create_task(undo())
            try:
                outcome = await _judge(party, "objects put back ~1 s after placement")
            finally:
                attacker.cancel()
            print(f"put back: {put_back}")
            assert put_back, "nothing was put back: the attack never ran\n" + party.logs()
            assert "world.move_object" in party.procs.log("world"), party.logs()
            assert outcome.completed, outcome.detail + party.logs()
            undone = party.procs.log("pr2") + party.procs.log("baxter")
            assert "node.undone" in undone, undone[-3000:]
    finally:
        party.stop()


CHAIN = "THEN(burger, cup, tea_pot, sugar)"
"""One leaf at a time: while one robot works, the other has nothing else it may take."""


@pytest.mark.parametrize("run", range(RUNS))
async def test_a_forged_release_does_not_put_two_bodies_on_one_object(
    run, mosquitto, team, tmp_path
):
    # either robot can do every leaf here, so the idle one could take the worker's leaf;
    # seed 000's selection (no contention avoidance): the idle robot claims any leaf it
    # can do, instead of leaving it to a better-placed peer
    config = survivor_config(tmp_path / "party.toml", team)
    text = config.read_text()
    text = text.replace('tree = "THEN(AND(burger, cup), AND(tea_pot, sugar))"', f'tree = "{CHAIN}"')
    text = text.replace('kind = "robot"\n', 'kind = "robot"\navoid_contention = false\n')
    config.write_text(text)
    assert CHAIN in text and text.count("avoid_contention = false") == len(ROBOTS)
    party = TeaParty.make(tmp_path, mosquitto.url, mosquitto.endpoint, team, config=config)
    forged: list[tuple[str, str]] = []
    scenario = "forged inactive + empty snapshot + interest 50 s ahead"

    async def release() -> None:
        """As soon as a robot says it works on a leaf (its body has not grasped the
        object yet, so the idle one still sees it free), say in its name that it let
        go of the leaf."""
        while True:
            for robot in ROBOTS:
                leaf = party.working(robot)
                if leaf is not None and (robot, leaf) not in forged:
                    forged.append((robot, leaf))
                    await send_raw(mosquitto.endpoint, team, _forged_release(team, robot, leaf))
            await asyncio.sleep(0.02)

    try:
        async with asyncio.timeout(scaled(240)), party.observer:
            party.start()
            attacker = asyncio.create_task(release())
            try:
                codes = await party.wait_robots(150)
            finally:
                attacker.cancel()
            state = await party.final_state() or {}
            objects = state.get("objects", {})
            placed = bool(objects) and all(o.get("at_goal") for o in objects.values())
            violations = int(state.get("violations", 0))
            ended = [r for r, c in codes.items() if c == 0]
            outcome = Outcome(
                len(ended) == len(ROBOTS) and placed,
                violations,
                int(bool(ended) and not placed),
                f"codes={codes} placed={placed} violations={violations} forged={forged}",
            )
            print(f"{scenario}: {outcome}")
            record(scenario, outcome)
            assert forged, "no release was forged: the attack never ran\n" + party.logs()
            world = party.procs.log("world")
            assert "double_run" not in world and "double_hold" not in world, world[-3000:]
            assert violations == 0, outcome.detail + party.logs()
            assert outcome.completed, outcome.detail + party.logs()
    finally:
        party.stop()
