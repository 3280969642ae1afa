"""Under the distance metric alone a robot's grasp score chooses nothing: it is for the
log and the transitions. The robot scores it after the behaviour starts
(``GRASP_SCORE_DELAY_S``), not in the handler of the reply that won the claim, where
every other claim and reply of its process waited behind it; or at the behaviour's
end if that comes first. Either way the score is the one the start would have given:
of the object where it was when the behaviour started."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import teamtree.agents.tasktree.grasp_tracker as grasp_module
from teamtree.agents.observers.recorder import behaviour_summary
from teamtree.agents.tasktree.params import RobotParams
from teamtree.agents.tasktree.robot import RobotAgent
from teamtree.broker import Endpoint, decode
from teamtree.planners.tasktree import TaskController, Tick
from tests.robot_in_process import TEAM, TREE, from_driver, observation


def _transitions(robot: RobotAgent) -> list[dict[str, Any]]:
    """The bodies of the transitions the robot published (its outbox: no broker)."""
    return [decode(m.payload).body for m in robot.connection._outbox if m.topic.endswith("/state")]


async def _won(metric: str = "distance") -> tuple[RobotAgent, str, str, Any]:
    """A robot that sees the table, wins a leaf and starts it: (robot, node, the leaf's
    object, its shape at the start)."""
    robot = RobotAgent(
        "pr2", team=TEAM, endpoint=Endpoint("127.0.0.1", 1), tree=TREE, roster=["pr2", "baxter"],
        params=RobotParams(profile="pr2", driver="pr2-driver", metric=metric),
    )  # fmt: skip
    await robot.setup()
    await robot.grasps.load_numpy()
    robot.controller = TaskController(TREE, "pr2", default_potential=0.0)
    await robot.receiver.receive(observation(None, 1))  # the arm and both objects
    await robot.feed(Tick())  # no peer online: the claim is won at once
    node = robot.controller.my_working
    assert node is not None
    name = TREE[node].param_dict["object"]
    return robot, node, name, robot.world.objects[name]


def _fresh_score(robot: RobotAgent, name: str, shape: Any) -> float:
    robot.grasps.cache.clear()
    return robot.grasps.grasp(name, shape)


def test_the_grasp_is_scored_after_the_start_not_in_the_winning_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grasp_module, "GRASP_SCORE_DELAY_S", 0.01)

    async def run() -> None:
        robot, node, name, shape = await _won()
        assert robot.grasps.scores.get(node, {}).get("grasp") is None  # not scored yet
        working = [t for t in _transitions(robot) if t["status"] == "working"]
        assert [t["node"] for t in working] == [node] and working[0]["grasp"] is None
        await asyncio.sleep(0.1)
        grasp = robot.grasps.scores[node]["grasp"]
        assert grasp is not None and node not in robot.grasps.owed
        assert grasp == _fresh_score(robot, name, shape)

    asyncio.run(run())


def test_a_behaviour_that_ends_first_carries_the_grasp_of_its_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grasp_module, "GRASP_SCORE_DELAY_S", 60.0)

    async def run() -> None:
        robot, node, name, shape = await _won()
        command_id = robot.link.command_of[node]
        moved = [p + 0.05 for p in shape.position]
        await robot.receiver.receive(observation(command_id, 2, position=moved))  # it moved
        assert robot.world.objects[name].position != shape.position
        assert robot.grasps.scores.get(node, {}).get("grasp") is None
        failed = {"command_id": command_id, "node": node, "robot": "pr2", "ok": False,
                  "reason": "lease_expired", "t": 3.0}  # fmt: skip
        await robot.receiver.receive(from_driver("behaviour.failed", "progress", failed, 3))
        ended = [t for t in _transitions(robot) if t["status"] != "working"]
        assert [t["node"] for t in ended] == [node]
        assert ended[0]["grasp"] is not None
        assert ended[0]["grasp"] == _fresh_score(robot, name, shape)

    asyncio.run(run())


def test_under_distance_and_grasp_the_working_transition_carries_it() -> None:
    async def run() -> None:
        robot, _, name, shape = await _won("distance+grasp")
        working = [t for t in _transitions(robot) if t["status"] == "working"]
        assert working[0]["grasp"] is not None and not robot.grasps.owed
        assert working[0]["grasp"] == _fresh_score(robot, name, shape)

    asyncio.run(run())


def test_the_recorders_summary_takes_the_grasp_from_the_end_when_the_start_has_none() -> None:
    def transition(ts: int, node: str, status: str, grasp: float | None) -> dict[str, Any]:
        body = {"node": node, "agent": "pr2", "status": status, "potential": 2.0, "grasp": grasp}
        return {"kind": "node.transition", "ts": ts, "body": body}

    records = [
        transition(1, "a", "working", None),
        transition(2, "b", "working", 40.0),
        transition(3, "a", "done", 12.5),
        transition(4, "b", "done", 99.0),  # the start's score stands
        transition(5, "c", "working", None),
        transition(6, "c", "inactive", 0.0),
    ]
    rows = {r["node"]: r for r in behaviour_summary(records)}
    assert {n: (r["grasp"], r["end_ms"]) for n, r in rows.items()} == {
        "a": (12.5, 3),
        "b": (40.0, 4),
        "c": (0.0, None),
    }
